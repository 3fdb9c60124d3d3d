"""Checking document sidecars against the commit markers (R131, R132).

A sidecar must hold a contiguous run of confirmed records (each matching the
``(seq, kind, version)`` its marker names), from no later than the oldest
revision still needed to the newest confirmed one. Anything after the run is an
unconfirmed tail (torn lines, records whose marker never landed, garbage);
records before the oldest needed one are dead and reclamation drops them.

``scan`` finds that run in a file's bytes. Markers name every revision when
``main.jsonl`` is replayed in full; after a checkpoint only the revisions of
the replayed tail are named, and the records before them (ordinals below
``start``) are *presumed* confirmed: the checkpoint vouches for them, so they
must only be well-formed and in order.

``check`` is what open does with one document whose revisions the replay
touched: find the run (for a document whose needed revisions start before the
checkpoint, by reading only from the checkpoint's end of the file, falling back
to the whole file), check that nothing needed is missing, validate the content
of what it read and compute the current value. ``rescan`` is the same check for
a file found unlike the index expects when a commit is about to append to it,
and ``presumed_run`` for a file whose dead records a failed reclamation left
(every record presumed: the checkpoint vouches for all of them).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pi_durable_tui.storage.errors import StorageCorrupted
from pi_durable_tui.storage.json_ops import JsonObject, apply_ops
from pi_durable_tui.storage.jsonl._documents import Documents
from pi_durable_tui.storage.jsonl._files import SidecarLine, parse_sidecar_line, split_lines

if TYPE_CHECKING:
    from pi_durable_tui.storage.jsonl._plan_types import Expectation

Expected = tuple[int, str, int]
"""A confirmed revision as a marker names it: ``(seq, kind, version)``."""


@dataclass(slots=True)
class Run:
    """The confirmed records found in a sidecar (or in its bytes after an offset)."""

    lines: list[SidecarLine]
    starts: list[int]
    """File offset of each record's first byte."""
    first: int
    """Ordinal of ``lines[0]``; the first unconfirmed ordinal when there is none."""
    end: int
    """File offset just after the last confirmed record."""
    size: int
    """File size."""


def read_file(path: Path, offset: int = 0) -> bytes | None:
    """Return a file's bytes from ``offset``, or ``None`` when it does not exist."""
    try:
        with path.open("rb") as file:
            file.seek(offset)
            return file.read()
    except FileNotFoundError:
        return None


def scan(data: bytes, base: int, name: str, start: int, expected: list[Expected]) -> Run:
    """Find the run of confirmed records in ``data``, read from file offset ``base``.

    Args:
        data: The bytes.
        base: Their offset in the file.
        name: The file's name, for messages.
        start: Ordinal of ``expected[0]``; lower ordinals are presumed confirmed.
        expected: The revisions the replayed markers name, from ``start`` on.

    Raises:
        StorageCorrupted: A confirmed record follows a malformed line or an
            unconfirmed record.
    """
    upto = start + len(expected)
    run: list[SidecarLine] = []
    starts: list[int] = []
    first: int | None = None
    problem = ""
    begin = end = 0
    lines, _ = split_lines(data)
    for number, (raw, line_end) in enumerate(lines, 1):
        line = parse_sidecar_line(raw)
        if line is not None:
            ordinal = line.ordinal
            want = ordinal if first is None else first + len(run)
            if (
                ordinal == want
                and ordinal < upto
                and (
                    ordinal < start
                    or expected[ordinal - start] == (line.seq, line.kind, line.version)
                )
            ):
                if problem:
                    raise StorageCorrupted(problem)
                first = ordinal if first is None else first
                run.append(line)
                starts.append(base + begin)
                begin = end = line_end
                continue
        if not problem:
            problem = (
                f"Malformed complete {name}: line {number}"
                if line is None
                else f"Confirmed record follows an unconfirmed tail: {name} line {number} "
                f"(seq {line.seq}) is not confirmed"
            )
        begin = line_end
    return Run(run, starts, upto if first is None else first, base + end, base + len(data))


@dataclass(slots=True)
class Touched:
    """The revisions of one document that the replayed part of ``main.jsonl`` confirms."""

    start: int
    """Ordinal of the first of them."""
    size: int
    """Confirmed length of the sidecar before them (0 when replaying everything)."""
    expected: list[Expected] = field(default_factory=list)


@dataclass(slots=True)
class Checked:
    """What open learned about one sidecar."""

    first: int
    end: int
    size: int
    dead_start: int | None = None
    """Offset of the oldest needed record when older (dead) records precede it."""
    reads: int = 1


def _missing(name: str, ordinal: int, touched: Touched) -> StorageCorrupted:
    if ordinal >= touched.start:
        seq = touched.expected[ordinal - touched.start][0]
        return StorageCorrupted(
            f"Missing confirmed sidecar record: {name} lacks revision {ordinal} (seq {seq})"
        )
    return StorageCorrupted(f"Missing confirmed sidecar record: {name} lacks revision {ordinal}")


def check(path: Path, documents: Documents, row: int, touched: Touched) -> Checked:
    """Check one touched, still-needed sidecar at open and set the document's value.

    Sets ``first``, ``size`` and the current value (when live) of ``row``.

    Raises:
        StorageCorrupted: The file lacks a needed record, or its content is invalid.
    """
    name = path.name
    ordinals = documents.ordinals[row]
    needed = documents.keep_from(row)
    reads = 1
    run: Run | None = None
    if needed < touched.start and touched.size > 0:
        # Records before ``start`` are the checkpoint's: read only what follows them.
        data = read_file(path, touched.size)
        if data is not None:
            run = scan(data, touched.size, name, touched.start, touched.expected)
            if run.first != touched.start or run.first + len(run.lines) != ordinals:
                run = None  # the file was rewritten since (an open reclaimed it): read it all
                reads += 1
    whole = run is None
    if run is None:
        data = read_file(path)
        if data is None:
            raise StorageCorrupted(f"Missing confirmed sidecar record: {name} does not exist")
        run = scan(data, 0, name, touched.start, touched.expected)
        if run.first > needed:
            raise _missing(name, needed, touched)
    last = run.first + len(run.lines)
    if last < ordinals:
        raise _missing(name, last, touched)
    # Whole file: validate from the oldest needed record. Read from the checkpoint's
    # end: the run starts at ``touched.start`` and everything before is vouched for.
    from_ordinal = needed if whole else touched.start
    _set_value(documents, row, name, run.lines[from_ordinal - run.first :], from_ordinal)
    first = run.first if whole else documents.first[row]
    documents.first[row] = first
    documents.size[row] = run.end
    dead = None
    if whole and needed > run.first:
        dead = run.starts[needed - run.first]
    return Checked(first, run.end, run.size, dead, reads)


def _set_value(
    documents: Documents, row: int, name: str, lines: list[SidecarLine], from_ordinal: int
) -> None:
    """Validate ``lines`` (ordinals from ``from_ordinal``) and compute the current value."""
    base = documents.base[row]
    for line in lines:
        payload = line.payload
        if line.kind == "base" and not isinstance(payload, dict):
            raise StorageCorrupted(f"Invalid document content: {name} seq {line.seq}")
        if line.kind == "delta" and not (
            isinstance(payload, list) and all(isinstance(op, dict) for op in payload)
        ):
            raise StorageCorrupted(f"Invalid document content: {name} seq {line.seq}")
    if base >= from_ordinal:
        position = base - from_ordinal
        if position >= len(lines) or lines[position].kind != "base":
            raise StorageCorrupted(f"Invalid document content: {name} keeps no base")
        lines = lines[position:]
        current: JsonObject = lines[0].payload  # type: ignore[assignment]
        if len(lines) == 1 and not documents.retired[row]:
            documents.set_text(row, lines[0].text)  # no delta: keep the text as read
            return
        lines = lines[1:]
    elif documents.retired[row]:
        return
    else:
        current = documents.shared_value(row)
    for line in lines:
        try:
            value = apply_ops(current, line.payload)  # type: ignore[arg-type]
        except (ValueError, TypeError, AttributeError) as error:
            raise StorageCorrupted(
                f"Invalid document content: {name} seq {line.seq} ({error})"
            ) from error
        if not isinstance(value, dict):
            raise StorageCorrupted(f"Invalid document content: {name} seq {line.seq}")
        current = value
    if not documents.retired[row]:
        documents.set_value(row, current)


def rescan(path: Path, expectation: Expectation) -> Run:
    """Find the confirmed run of a sidecar that is not the size the index expects.

    Raises:
        StorageCorrupted: The file lacks a needed record.
    """
    name = path.name
    data = read_file(path)
    if data is None:
        raise StorageCorrupted(f"Missing confirmed sidecar record: {name} does not exist")
    newest = expectation.ordinals - 1
    run = scan(data, 0, name, newest, [expectation.last])
    if run.first > expectation.keep_from or run.first + len(run.lines) != expectation.ordinals:
        raise StorageCorrupted(
            f"Missing confirmed sidecar record: {name} does not hold revisions "
            f"{expectation.keep_from} to {newest}"
        )
    return run


def presumed_run(path: Path, documents: Documents, row: int) -> Run | None:
    """Scan a sidecar whose records the checkpoint vouches for (to reclaim it).

    Returns:
        The run, or ``None`` when the file does not exist.

    Raises:
        StorageCorrupted: The file lacks a needed record.
    """
    data = read_file(path)
    if data is None:
        return None
    ordinals = documents.ordinals[row]
    run = scan(data, 0, path.name, ordinals, [])
    needed = documents.keep_from(row)
    if run.first > needed or run.first + len(run.lines) != ordinals:
        raise StorageCorrupted(
            f"Missing confirmed sidecar record: {path.name} lacks revision {needed}"
        )
    return run


def truncate(path: Path, size: int, fsync: bool) -> None:
    """Cut a file at ``size`` bytes."""
    with path.open("r+b") as file:
        file.truncate(size)
        if fsync:
            os.fsync(file.fileno())
