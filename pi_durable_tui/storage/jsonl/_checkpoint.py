r"""The checkpoint of a JSONL store: its index as of one confirmed commit, in one file.

``index.checkpoint`` lets open skip the history: it holds the whole index
(``JsonlIndex.sections``: every column, the code tables, the current values of
live documents) as of commit ``seq``, whose marker ends at byte ``offset`` of
``main.jsonl``. Open loads it and replays only the log after ``offset``
(``_recovery``). Layout::

    pidurable jsonl checkpoint\n
    {"format":1,"byteorder":"little","offset":...,"anchor":[start,crc],
     "codes":{...},"sections":[[name,typecode,count],...]}\n
    <the sections' bytes, in order>
    <crc32 of everything above, 8 hex digits>\n

It is never trusted blindly. ``load`` rejects (and open then replays
``main.jsonl`` in full) a checkpoint that is missing its magic line or footer,
fails its checksum (torn, zeroed by a power loss without ``fsync``, edited),
has another format or byte order, does not make a consistent index, or is
*stale*: ``main.jsonl`` is shorter than ``offset``, its last 64 KiB before
``offset`` do not have the checksum the checkpoint recorded (the anchor), or the
line ending at ``offset`` is not the marker of ``seq``. Since ``main.jsonl`` is
only ever appended to (R132), a checkpoint that passes stays a true
description of a prefix of the log, however many commits followed it.

Writing (``write``): the bytes go to ``index.checkpoint.tmp``, flushed when the
store uses ``fsync``, then renamed over ``index.checkpoint`` (and the directory
flushed), so a crash leaves the old checkpoint or the new one, plus at most a
stray temporary file that open deletes. Failpoint
``jsonl.checkpoint_before_rename`` sits between the write and the rename.
A checkpoint describes only published commits, and a commit is published only
after its marker is written (R130), so it never describes an unconfirmed one.

``Checkpoints`` decides when an open store writes one (``CheckpointPolicy``):
after a commit once ``every`` bytes were written since the last, and at close
once ``at_close`` were; never after damage was found (``damaged`` also removes
the file, so the next open replays in full and reports the damage, R131).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import sys
import zlib
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_durable_tui.storage.failpoints import define as define_failpoint
from pi_durable_tui.storage.jsonl._files import MAIN_FILE, fsync_directory, parse_main_line
from pi_durable_tui.storage.jsonl._index import JsonlIndex

if TYPE_CHECKING:
    from pi_durable_tui.storage.jsonl._publish import Publisher

CHECKPOINT_FILE = "index.checkpoint"
TEMPORARY_FILE = CHECKPOINT_FILE + ".tmp"
FORMAT = 1
"""The checkpoint format. REMINDER: change it whenever ``sections`` or ``codes`` change
shape; ``load`` refuses any other value, so an old reader never misreads a new file."""
MAGIC = b"pidurable jsonl checkpoint\n"
ANCHOR = 1 << 16
"""Bytes of ``main.jsonl`` before the checkpoint's offset whose checksum it records."""
_FOOTER = 9
BEFORE_RENAME = define_failpoint("jsonl.checkpoint_before_rename")


class Rejected(Exception):
    """The checkpoint cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """An index frozen for writing: its columns as bytes, taken on the loop."""

    offset: int
    seq: int
    codes: dict[str, Any]
    sections: list[tuple[str, str, int, bytes]]
    """``(name, typecode, count, bytes)`` per column."""


def snapshot(index: JsonlIndex, offset: int) -> Snapshot:
    """Copy the index as of ``offset`` (the length of ``main.jsonl`` it describes)."""
    sections = [
        (name, str(column.typecode), len(column), column.tobytes())
        for name, column in index.sections().items()
    ]
    return Snapshot(offset, index.seq, index.codes(), sections)


def _anchor(main: Path, offset: int) -> tuple[int, int, bytes]:
    """Return ``(start, crc, bytes)`` of ``main.jsonl`` from ``start`` to ``offset``."""
    start = max(0, offset - ANCHOR)
    with main.open("rb") as file:
        file.seek(start)
        data = file.read(offset - start)
    return start, zlib.crc32(data), data


def write(directory: Path, taken: Snapshot, *, fsync: bool) -> int:
    """Write a checkpoint atomically; return its size in bytes.

    Raises:
        OSError: It could not be written; the previous checkpoint is untouched.
        FailpointError: ``jsonl.checkpoint_before_rename`` fired.
    """
    start, crc, _ = _anchor(directory / MAIN_FILE, taken.offset)
    header = {
        "format": FORMAT,
        "byteorder": sys.byteorder,
        "offset": taken.offset,
        "anchor": [start, crc],
        "codes": taken.codes,
        "sections": [[name, typecode, count] for name, typecode, count, _ in taken.sections],
    }
    head = MAGIC + json.dumps(header, separators=(",", ":"), ensure_ascii=True).encode() + b"\n"
    parts = [head, *(data for _, _, _, data in taken.sections)]
    checksum = 0
    for part in parts:
        checksum = zlib.crc32(part, checksum)
    parts.append(b"%08x\n" % checksum)
    temporary = directory / TEMPORARY_FILE
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            for part in parts:
                view = memoryview(part)
                while view:
                    view = view[os.write(fd, view) :]
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        BEFORE_RENAME.hit()
        os.replace(temporary, directory / CHECKPOINT_FILE)
    except OSError:
        temporary.unlink(missing_ok=True)
        raise
    if fsync:
        fsync_directory(directory)
    return sum(len(part) for part in parts)


@dataclass(slots=True)
class Loaded:
    """A checkpoint that passed every check."""

    index: JsonlIndex
    offset: int
    size: int


def load(directory: Path) -> Loaded | None:
    """Read and check the store's checkpoint.

    The columns are read straight into their arrays and checksummed there: no
    intermediate copy of the file, whose size grows with history.

    Returns:
        The checkpoint, or ``None`` when there is none.

    Raises:
        Rejected: It exists but cannot be used (see the module docstring).
    """
    try:
        file = (directory / CHECKPOINT_FILE).open("rb")
    except FileNotFoundError:
        return None
    with file:
        size = os.fstat(file.fileno()).st_size
        magic = file.readline()
        line = file.readline()
        if magic != MAGIC or not line.endswith(b"\n"):
            raise Rejected("it is not a complete checkpoint")
        try:
            header = json.loads(line)
            version = header["format"]
        except (ValueError, KeyError, TypeError):
            raise Rejected("its header is not valid") from None
        if version != FORMAT:
            raise Rejected(f"it has format {version!r}, not {FORMAT}")
        if header.get("byteorder") != sys.byteorder:
            raise Rejected(f"it was written on a {header.get('byteorder')}-endian machine")
        checksum = zlib.crc32(line, zlib.crc32(magic))
        try:
            sections, checksum = _columns(file, header, size - len(magic) - len(line), checksum)
        except (ValueError, KeyError, TypeError) as error:
            raise Rejected(f"its content is not consistent ({error})") from None
        footer = file.read()
    if len(footer) != _FOOTER or not footer.endswith(b"\n"):
        raise Rejected("it is not a complete checkpoint")
    try:
        recorded = int(footer[:-1], 16)
    except ValueError:
        raise Rejected("it is not a complete checkpoint") from None
    if checksum != recorded:
        raise Rejected("its checksum does not match (torn or damaged)")
    try:
        index = JsonlIndex.load(header["codes"], sections)
        offset = header["offset"]
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise ValueError("offset is not a count")
    except (ValueError, KeyError, TypeError, IndexError) as error:
        raise Rejected(f"its content is not consistent ({error})") from None
    _check_anchor(directory / MAIN_FILE, header["anchor"], offset, index.seq)
    return Loaded(index, offset, size)


def _columns(
    file: io.BufferedReader, header: dict[str, Any], available: int, checksum: int
) -> tuple[dict[str, array[int]], int]:
    """Read every column into its own array, continuing the checksum over it."""
    sections: dict[str, array[int]] = {}
    for name, typecode, count in header["sections"]:
        if not isinstance(count, int) or count < 0:
            raise ValueError(f"column {name} has no length")
        column: array[int] = array(typecode, [0]) * count
        view = memoryview(column).cast("B")
        if len(view) > available - _FOOTER or file.readinto(view) != len(view):
            raise ValueError(f"column {name} runs past the end")
        available -= len(view)
        checksum = zlib.crc32(view, checksum)
        sections[name] = column
    return sections, checksum


def _check_anchor(main: Path, anchor: Any, offset: int, seq: int) -> None:
    """Check that ``main.jsonl`` still holds, before ``offset``, what the checkpoint saw."""
    try:
        size = main.stat().st_size
    except FileNotFoundError:
        raise Rejected(f"{MAIN_FILE} does not exist") from None
    if size < offset:
        raise Rejected(f"it describes {offset} bytes of {MAIN_FILE}, which has {size} (stale)")
    if offset == 0:
        if seq != 0:
            raise Rejected("it describes commits but no log")
        return
    start, crc, data = _anchor(main, offset)
    if [start, crc] != anchor:
        raise Rejected(f"{MAIN_FILE} before byte {offset} is not what it saw (stale)")
    last = data[data.rstrip(b"\n").rfind(b"\n") + 1 : -1] if data.endswith(b"\n") else b""
    line = parse_main_line(last)
    if line is None or line.type != "commit" or line.seq != seq:
        raise Rejected(f"byte {offset} of {MAIN_FILE} does not end the marker of commit {seq}")


# -- when an open store writes one -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class CheckpointPolicy:
    """When an open store writes ``index.checkpoint`` (see the ``jsonl`` module docstring)."""

    every: int = 4 << 20
    """Bytes written (log and sidecars) after which a commit writes one."""
    at_close: int = 64 << 10
    """Bytes written since the last one for ``close`` to write one."""


DEFAULT_POLICY = CheckpointPolicy()


class Checkpoints:
    """The checkpoints of one open store: when to write them, and damage that stops them.

    A checkpoint is only an optimization: a failure to write one is ignored (the
    next one, or a longer replay at open, makes up for it). With ``fsync`` the
    file is written in the default executor, one at a time; without, inline.
    """

    def __init__(
        self,
        directory: Path,
        index: JsonlIndex,
        publisher: Publisher,
        policy: CheckpointPolicy | None,
        offset: int,
    ) -> None:
        self._directory = directory
        self._index = index
        self._publisher = publisher
        self._policy = policy
        self._offset = offset
        """The ``main.jsonl`` offset the newest checkpoint describes."""
        self._mark = 0
        """``Publisher.sidecar_bytes`` when the newest checkpoint was taken."""
        self._writing: asyncio.Future[None] | None = None
        self.damage: str | None = None
        self._due_at = self._written_total() + (policy.every if policy is not None else 0)
        """``_written_total`` at which ``after_commit`` writes one: a commit compares once."""

    def _written_total(self) -> int:
        return self._publisher.main_size + self._publisher.sidecar_bytes

    def growth(self) -> int:
        """Bytes written since the newest checkpoint: what a reopen would replay."""
        publisher = self._publisher
        return publisher.main_size - self._offset + publisher.sidecar_bytes - self._mark

    def damaged(self, message: str) -> None:
        """Stop checkpointing and drop the checkpoint: the next open replays in full.

        Called from a worker thread too (a commit written with ``fsync``).
        """
        if self.damage is None:
            self.damage = message
        with contextlib.suppress(OSError):
            (self._directory / CHECKPOINT_FILE).unlink(missing_ok=True)

    def _due(self, threshold: int) -> bool:
        growth = self.growth()
        return self.damage is None and growth > 0 and growth >= threshold

    def after_commit(self) -> None:
        """Write a checkpoint if the log grew by ``every`` bytes (after publication)."""
        policy = self._policy
        if policy is None or self._written_total() < self._due_at:
            return
        if self._writing is not None or not self._due(policy.every):
            return
        self._due_at = self._written_total() + policy.every
        taken = self._take()
        if not self._publisher.fsync:
            self._write(taken)
            return
        future = asyncio.get_running_loop().run_in_executor(None, self._write, taken)
        self._writing = future
        future.add_done_callback(self._written)

    async def at_close(self, *, healthy: bool, close: Callable[[], None]) -> None:
        """Finish a write in progress, then write one if due.

        Args:
            healthy: The store is not poisoned.
            close: Closes the store; called when the write ends if the caller is
                cancelled while waiting for it.
        """
        if self._writing is not None:
            await _finish(self._writing, close)
        policy = self._policy
        if healthy and policy is not None and self._due(policy.at_close):
            taken = self._take()
            loop = asyncio.get_running_loop()
            await _finish(loop.run_in_executor(None, self._write, taken), close)

    def _take(self) -> tuple[Snapshot, int]:
        publisher = self._publisher
        return snapshot(self._index, publisher.main_size), publisher.sidecar_bytes

    def _write(self, taken: tuple[Snapshot, int]) -> None:
        taken_snapshot, mark = taken
        try:
            write(self._directory, taken_snapshot, fsync=self._publisher.fsync)
        except Exception:
            return  # a checkpoint is only ever an optimization
        if self.damage is None:
            self._offset = max(self._offset, taken_snapshot.offset)
            self._mark = max(self._mark, mark)

    def _written(self, future: asyncio.Future[None]) -> None:
        self._writing = None


async def _finish(writing: asyncio.Future[None], close: Callable[[], None]) -> None:
    """Wait for a checkpoint write; if cancelled, close once it is over."""
    try:
        await asyncio.shield(writing)
    except asyncio.CancelledError:
        # Keep the lock until the write is over: another opener must not see the store
        # while a late rename could still replace its checkpoint.
        writing.add_done_callback(lambda _: close())
        raise
