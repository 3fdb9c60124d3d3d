"""Reading records and revisions back from the files of an open JSONL store.

The index (``_index``) knows where every record's line is; this module
reads it with one positioned read (``os.pread`` on a read-only descriptor of
``main.jsonl``) and checks that the line is what the index says: a valid line
(``jsonl_files.parse_record_line``) of the expected type whose record has the
expected ID. A page of a scan reads its lines in as few positioned reads as
their offsets allow (lines less than ``GAP`` bytes apart share a read).

Document revisions are read only for historical reads (a current read uses the
value the index keeps): the whole sidecar is parsed, its needed records (from
the oldest still needed to the newest confirmed) are checked for order and
shape, and the result is cached for the few most recently read documents.
Records after the newest confirmed one are ignored: they belong to a commit
being written (with ``fsync`` its writes run in a thread).

Damage found here (a line that is not what the index says, a missing or
malformed revision) raises ``StorageCorrupted`` and is reported to
``on_damage`` first, which stops the store from writing checkpoints and removes
the current one: the next open replays everything and names the damage
precisely (R131).
"""

from __future__ import annotations

import bisect
import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pi_durable_tui.storage._batch import RevisionKind
from pi_durable_tui.storage.errors import StorageCorrupted
from pi_durable_tui.storage.json_ops import Op, apply_ops, loads
from pi_durable_tui.storage.jsonl._files import (
    MAIN_FILE,
    parse_record_line,
    parse_sidecar_line,
    sidecar_name,
    split_lines,
)

GAP = 4096
"""Lines closer than this share one positioned read."""
_MAX_READ = 1 << 20
_CACHED_DOCUMENTS = 8
_KINDS = {kind: kind.encode() for kind in ("entry", "task", "submission")}


@dataclass(slots=True)
class Revision:
    """One stored revision of a document: a base value or a list of operations."""

    seq: int
    kind: RevisionKind
    version: int
    text: str


@dataclass(slots=True)
class Content:
    """A document's content at a point: version, value, deltas since its base."""

    version: int
    value: Any
    deltas: int


def replay(document_id: int, revisions: Sequence[Revision], at: int) -> Content:
    """Rebuild a document's content at ``at`` from its newest base at or before it.

    Raises:
        StorageCorrupted: No base is kept for that point, or the stored content is
            not valid.
    """
    stop = bisect.bisect_right(revisions, at, key=lambda revision: revision.seq)
    base = stop - 1
    while base >= 0 and revisions[base].kind != "base":
        base -= 1
    if base < 0:
        raise StorageCorrupted(f"Document {document_id} is missing a required base")
    try:
        value = loads(revisions[base].text)
        for delta in revisions[base + 1 : stop]:
            ops: list[Op] = loads(delta.text)  # type: ignore[assignment]
            value = apply_ops(value, ops)
    except (ValueError, TypeError, AttributeError) as error:
        raise StorageCorrupted(
            f"Invalid document content in document {document_id}: {error}"
        ) from error
    if not isinstance(value, dict):
        raise StorageCorrupted(f"Document {document_id} content is not an object")
    return Content(revisions[stop - 1].version, value, stop - 1 - base)


class Reader:
    """The read side of an open store's files. See the module docstring."""

    def __init__(self, directory: Path, on_damage: Callable[[str], None]) -> None:
        self._directory = directory
        self._on_damage = on_damage
        self._fd: int | None = os.open(directory / MAIN_FILE, os.O_RDONLY | os.O_CLOEXEC)
        self._cache: OrderedDict[int, tuple[int, list[Revision]]] = OrderedDict()

    def damage(self, message: str) -> StorageCorrupted:
        """Report damage and return the error to raise."""
        self._on_damage(message)
        return StorageCorrupted(message)

    # -- main.jsonl -------------------------------------------------------------

    def lines(self, spans: Sequence[tuple[int, int]]) -> list[bytes]:
        """Read the lines at ``(offset, length)`` spans, in the order given."""
        if len(spans) == 1:
            at, length = spans[0]
            return [self._read(at, length)]
        order = sorted(range(len(spans)), key=lambda i: spans[i][0])
        result: list[bytes] = [b""] * len(spans)
        position = 0
        while position < len(order):
            start = spans[order[position]][0]
            stop = start + spans[order[position]][1]
            last = position
            while last + 1 < len(order):
                at, length = spans[order[last + 1]]
                if at - stop > GAP or at + length - start > _MAX_READ:
                    break
                last += 1
                stop = max(stop, at + length)
            data = self._read(start, stop - start)
            for index in order[position : last + 1]:
                at, length = spans[index]
                result[index] = data[at - start : at - start + length]
            position = last + 1
        return result

    def _read(self, at: int, length: int) -> bytes:
        if self._fd is None:
            raise OSError("the store is closed")
        data = os.pread(self._fd, length, at)
        if len(data) != length:
            raise self.damage(
                f"Malformed complete {MAIN_FILE}: it ends at byte {at + len(data)}, "
                f"before a committed line (bytes {at}..{at + length})"
            )
        return data

    def records(self, kind: str, items: Sequence[tuple[int, int, int]]) -> list[tuple[int, Any]]:
        """Read records of one type: ``(record_id, offset, length)`` -> ``(seq, record)``.

        Raises:
            StorageCorrupted: A line is not that record's line.
        """
        if len(items) == 1:
            _, at, length = items[0]
            raws = [self._read(at, length)]
        else:
            raws = self.lines([(at, length) for _, at, length in items])
        expected = _KINDS[kind]
        result: list[tuple[int, Any]] = []
        for (record_id, at, _), raw in zip(items, raws, strict=True):
            parsed = parse_record_line(raw, expected)
            if parsed is None or parsed[1].get("id") != record_id:
                raise self.damage(
                    f"Malformed complete {MAIN_FILE}: byte {at} does not hold {kind} {record_id}"
                )
            result.append(parsed)
        return result

    # -- sidecars ---------------------------------------------------------------

    def revisions(
        self, document_id: int, keep_from: int, ordinals: int, last_seq: int
    ) -> list[Revision]:
        """Return a document's kept revisions, ordinals ``keep_from`` to ``ordinals - 1``.

        Raises:
            StorageCorrupted: The sidecar lacks a needed revision or holds an
                invalid one.
        """
        if keep_from >= ordinals:
            return []
        cached = self._cache.get(document_id)
        if cached is not None and cached[0] == ordinals:
            self._cache.move_to_end(document_id)
            return cached[1]
        name = sidecar_name(document_id)
        try:
            data = (self._directory / name).read_bytes()
        except FileNotFoundError:
            raise self.damage(f"Missing confirmed sidecar record: {name} does not exist") from None
        found: list[Revision] = []
        lines, _ = split_lines(data)
        for number, (raw, _) in enumerate(lines, 1):
            line = parse_sidecar_line(raw)
            if line is None:
                raise self.damage(f"Malformed complete {name}: line {number}")
            if line.ordinal < keep_from:
                continue  # a dead revision that reclamation has not dropped yet
            if line.ordinal >= ordinals:
                break  # a commit being written
            if line.ordinal != keep_from + len(found):
                break
            shape_ok = isinstance(line.payload, dict if line.kind == "base" else list)
            if not shape_ok:
                raise self.damage(f"Invalid document content: {name} seq {line.seq}")
            found.append(Revision(line.seq, line.kind, line.version, line.text))
        if len(found) != ordinals - keep_from or found[-1].seq != last_seq:
            missing = keep_from + len(found)
            raise self.damage(f"Missing confirmed sidecar record: {name} lacks revision {missing}")
        self._cache[document_id] = (ordinals, found)
        while len(self._cache) > _CACHED_DOCUMENTS:
            self._cache.popitem(last=False)
        return found

    def forget(self, document_id: int) -> None:
        """Drop a document's cached revisions (it changed)."""
        self._cache.pop(document_id, None)

    def close(self) -> None:
        """Close the descriptor; idempotent."""
        fd, self._fd = self._fd, None
        self._cache.clear()
        if fd is not None:
            os.close(fd)
