"""The files of a JSONL store: line formats, appends, and atomic rewrites (R130-R132).

A store is a directory holding:

``main.jsonl``
    One line per table write and one commit marker per commit::

        {"format":1,"type":"entry","seq":7,"record":{...}}
        {"format":1,"type":"commit","seq":7,"revisions":[[12,"delta",1]]}

    Record types are ``conversation``, ``entry``, ``task``, ``submission``,
    ``document`` (a new incarnation) and ``retire`` (an incarnation with
    ``retired_at``). Every record line carries the seq of its commit; the marker
    lists the document revisions the commit stored, ``[document_id, kind,
    version]``, so ``main.jsonl`` alone says which sidecar records are confirmed.
``doc-<id>.jsonl``
    One line per revision of one document incarnation::

        {"format":1,"type":"record","seq":7,"ordinal":3,"kind":"delta","version":1,"payload":[...]}

    ``ordinal`` is the revision's position in the incarnation's whole history
    (0 is the creating base), so a hole left by a lost record is visible even
    after older revisions were reclaimed.
``<file>.reclaim``
    A sidecar being rewritten without its dead revisions; it becomes the sidecar
    by an atomic rename, so it is never the only copy of anything and a stray
    one is deleted at open.

Every line is written by this module with a fixed layout, the record or payload
last, and read back by matching that layout exactly: the header is matched as
bytes by one regular expression and only the record (or payload) is parsed, with
one ``json.loads`` that is at once its validation. A line in any other layout,
even valid JSON, is malformed. Reads of single records (``parse_record_line``)
go through the same checks: the index keeps where a record's line is, and the
line read back there must be a valid line of the expected type. A revision's
payload text is kept as read, so a document whose base has no delta after it
keeps its value as that text, without serializing it again.

Other files in the directory: ``index.checkpoint`` (and its temporary
``index.checkpoint.tmp``), owned by ``_checkpoint``.

Appends use ``os.write`` on ``O_APPEND`` descriptors and treat a short write as a
failure: the caller poisons the backend (R130) rather than retrying, because the
file now ends with a partial line that only recovery may remove.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeGuard

from pi_durable_tui.storage.json_ops import Json

FORMAT = 1
"""The format version every line carries.

REMINDER: a new format changes this constant, the writers' prefixes and the
readers' patterns below together; readers treat any other version as malformed.
"""
MAIN_FILE = "main.jsonl"
RECLAIM_SUFFIX = ".reclaim"
SIDECAR_PATTERN = re.compile(r"doc-([1-9][0-9]{0,15})\.jsonl\Z")

RecordType = Literal["conversation", "entry", "task", "submission", "document", "retire"]
MainType = RecordType | Literal["commit"]
RevisionKind = Literal["base", "delta"]
RevisionRef = tuple[int, RevisionKind, int]
"""``(document_id, kind, version)`` of one revision named by a commit marker."""

_RECORD_KEY = ',"record":'
_PAYLOAD_KEY = ',"payload":'
_MAIN_PREFIX = '{"format":1,"type":"'
_SIDECAR_PREFIX = '{"format":1,"type":"record","seq":'
_OPEN_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC


class ShortWrite(OSError):
    """``os.write`` stored fewer bytes than asked: the file ends with a partial line."""


def sidecar_name(document_id: int) -> str:
    """Return the file name of a document's sidecar."""
    return f"doc-{document_id}.jsonl"


# -- writing lines ------------------------------------------------------------


def record_line(kind: RecordType, seq: int, text: str) -> str:
    """Return the ``main.jsonl`` line of one table record.

    Args:
        kind: The record's type.
        seq: The commit's sequence number.
        text: The record's JSON text, as prepared by the batch.
    """
    return f'{_MAIN_PREFIX}{kind}","seq":{seq}{_RECORD_KEY}{text}}}\n'


def marker_line(seq: int, revisions: list[RevisionRef]) -> str:
    """Return the commit marker of a commit that stored ``revisions``."""
    if not revisions:
        return f'{_MAIN_PREFIX}commit","seq":{seq}}}\n'
    listed = ",".join(f'[{d},"{k}",{v}]' for d, k, v in revisions)
    return f'{_MAIN_PREFIX}commit","seq":{seq},"revisions":[{listed}]}}\n'


def sidecar_line(seq: int, ordinal: int, kind: RevisionKind, version: int, payload: str) -> str:
    """Return the sidecar line of one revision; ``payload`` is its JSON text."""
    return (
        f'{_SIDECAR_PREFIX}{seq},"ordinal":{ordinal},"kind":"{kind}",'
        f'"version":{version}{_PAYLOAD_KEY}{payload}}}\n'
    )


# -- reading lines ------------------------------------------------------------


@dataclass(slots=True)
class MainLine:
    """One parsed ``main.jsonl`` line."""

    type: MainType
    seq: int
    record: dict[str, Any] | None = None
    """The parsed record (record lines only)."""
    revisions: list[RevisionRef] | None = None
    """The revisions a marker confirms (markers only)."""


@dataclass(slots=True)
class SidecarLine:
    """One parsed sidecar line: a base or a delta of one document."""

    seq: int
    ordinal: int
    kind: RevisionKind
    version: int
    payload: Json
    text: str
    """The payload's JSON text, as read."""


_COUNT = rb"(0|[1-9][0-9]{0,15})"
_MARKER = re.compile(
    rb'\{"format":1,"type":"commit","seq":' + _COUNT + rb'(?:,"revisions":(\[.*\]))?\}'
)
_RECORD_HEAD = re.compile(
    rb'\{"format":1,"type":"(conversation|entry|task|submission|document|retire)","seq":'
    + _COUNT
    + rb',"record":'
)
_SIDECAR_HEAD = re.compile(
    rb'\{"format":1,"type":"record","seq":'
    + _COUNT
    + rb',"ordinal":'
    + _COUNT
    + rb',"kind":"(base|delta)","version":'
    + _COUNT
    + rb',"payload":'
)


def _load(raw: bytes) -> tuple[str, Any] | None:
    """Decode and parse one JSON value; ``None`` when it is not valid UTF-8 JSON."""
    try:
        text = raw.decode("utf-8")
        return text, json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def parse_main_line(raw: bytes) -> MainLine | None:
    """Parse one complete ``main.jsonl`` line (without its newline).

    A line must have exactly the layout ``record_line`` or ``marker_line`` writes:
    the header is matched as bytes and only the record (or the revision list) is
    parsed as JSON, which is both the validation and the cheapest way to read it.

    Returns:
        The line, or ``None`` when it is not a line this module writes.
    """
    marker = _MARKER.fullmatch(raw)
    if marker is not None:
        seq = int(marker.group(1))
        listed = marker.group(2)
        revisions = [] if listed is None else _revisions(listed)
        if seq < 1 or revisions is None:
            return None
        return MainLine("commit", seq, revisions=revisions)
    head = _RECORD_HEAD.match(raw)
    if head is None or not raw.endswith(b"}"):
        return None
    # REMINDER: the record is everything between the header and the closing brace, so
    # the whole line is valid JSON exactly when the record alone is.
    loaded = _load(raw[head.end() : -1])
    if loaded is None or not isinstance(loaded[1], dict) or int(head.group(2)) < 1:
        return None
    kind: MainType = head.group(1).decode()  # type: ignore[assignment]
    return MainLine(kind, int(head.group(2)), loaded[1])


def parse_record_line(raw: bytes, kind: bytes) -> tuple[int, dict[str, Any]] | None:
    """Parse a complete ``main.jsonl`` line that should hold a record of type ``kind``.

    The same checks as ``parse_main_line``, for a read that knows what it expects.

    Returns:
        ``(seq, record)``, or ``None`` when the line is not such a record line.
    """
    head = _RECORD_HEAD.match(raw)
    if head is None or head.group(1) != kind or not raw.endswith(b"}"):
        return None
    loaded = _load(raw[head.end() : -1])
    seq = int(head.group(2))
    if loaded is None or not isinstance(loaded[1], dict) or seq < 1:
        return None
    return seq, loaded[1]


def _revisions(listed: bytes) -> list[RevisionRef] | None:
    loaded = _load(listed)
    if loaded is None or not isinstance(loaded[1], list):
        return None
    result: list[RevisionRef] = []
    for item in loaded[1]:
        if not isinstance(item, list) or len(item) != 3:
            return None
        document_id, kind, version = item
        if not _is_count(document_id) or kind not in ("base", "delta") or not _is_count(version):
            return None
        result.append((document_id, kind, version))
    return result


def _is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def parse_sidecar_line(raw: bytes) -> SidecarLine | None:
    """Parse one complete sidecar line (without its newline), as ``parse_main_line`` does.

    Returns:
        The revision, or ``None`` when it is not a line this module writes.
    """
    head = _SIDECAR_HEAD.match(raw)
    if head is None or not raw.endswith(b"}"):
        return None
    loaded = _load(raw[head.end() : -1])
    if loaded is None:
        return None
    seq, ordinal, kind, version = head.groups()
    revision_kind: RevisionKind = "base" if kind == b"base" else "delta"
    return SidecarLine(int(seq), int(ordinal), revision_kind, int(version), loaded[1], loaded[0])


def split_lines(data: bytes) -> tuple[list[tuple[bytes, int]], int]:
    """Split a file's bytes into complete lines.

    Args:
        data: The whole file.

    Returns:
        ``(lines, complete)``: each complete line without its newline, with the byte
        offset just after its newline, and the length of the complete part. Bytes
        after the last newline are a torn line that recovery truncates.
    """
    parts = data.split(b"\n")
    parts.pop()  # the torn tail, or b"" when the file ends with a newline
    lines: list[tuple[bytes, int]] = []
    offset = 0
    for part in parts:
        offset += len(part) + 1
        lines.append((part, offset))
    return lines, offset


# -- file operations ----------------------------------------------------------


def write_all(fd: int, data: bytes) -> None:
    """Append ``data`` with one ``os.write``.

    Raises:
        ShortWrite: Fewer bytes were written; the file ends with a partial line.
        OSError: The write failed.
    """
    written = os.write(fd, data)
    if written != len(data):
        raise ShortWrite(f"short write: {written} of {len(data)} bytes")


def open_append(path: Path, *, truncate: bool = False) -> int:
    """Open ``path`` for appending, creating it; ``truncate`` empties it first."""
    return os.open(path, _OPEN_FLAGS | (os.O_TRUNC if truncate else 0), 0o644)


def fsync_directory(directory: Path) -> None:
    """Make the directory's entries (created, renamed, removed files) durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_file(path: Path, data: bytes, *, fsync: bool) -> None:
    """Rewrite ``path`` atomically through ``<path>.reclaim`` (R132).

    The new content is written to the ``.reclaim`` file (and flushed when
    ``fsync``), then renamed over ``path``: a crash leaves either the old file or
    the new one, plus at most a stray ``.reclaim`` that open deletes.

    Raises:
        OSError: The rewrite failed; ``path`` is unchanged.
    """
    temporary = path.with_name(path.name + RECLAIM_SUFFIX)
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            write_all(fd, data)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except OSError:
        temporary.unlink(missing_ok=True)
        raise


class SidecarFiles:
    """Append descriptors of document sidecars, kept open for the most recent ones.

    A streaming document gets one append per commit, so its descriptor stays open;
    the cache is bounded so a store with thousands of documents does not exhaust
    descriptors. A sidecar that is rewritten or removed must be ``forget``-ed
    first: a cached descriptor would keep appending to the replaced inode.
    """

    def __init__(self, directory: Path, capacity: int = 32) -> None:
        self._directory = directory
        self._capacity = capacity
        self._open: OrderedDict[int, int] = OrderedDict()

    def path(self, document_id: int) -> Path:
        """Return the path of a document's sidecar."""
        return self._directory / sidecar_name(document_id)

    def descriptor(self, document_id: int, *, new: bool) -> int:
        """Return an append descriptor of a sidecar.

        Descriptors stay open until ``trim``, so every descriptor of one commit is
        still open when the commit flushes them.

        Args:
            document_id: The document.
            new: The document is created by the commit being written, so any file
                left under its name holds nothing confirmed and is emptied.
        """
        fd = self._open.get(document_id)
        if fd is not None and not new:
            self._open.move_to_end(document_id)
            return fd
        self.forget(document_id)
        fd = open_append(self.path(document_id), truncate=new)
        self._open[document_id] = fd
        return fd

    def trim(self) -> None:
        """Close the least recently used descriptors beyond the capacity."""
        while len(self._open) > self._capacity:
            _, oldest = self._open.popitem(last=False)
            os.close(oldest)

    def forget(self, document_id: int) -> None:
        """Close a sidecar's cached descriptor, if any."""
        fd = self._open.pop(document_id, None)
        if fd is not None:
            os.close(fd)

    def close(self) -> None:
        """Close every cached descriptor."""
        while self._open:
            _, fd = self._open.popitem()
            with contextlib.suppress(OSError):
                os.close(fd)
