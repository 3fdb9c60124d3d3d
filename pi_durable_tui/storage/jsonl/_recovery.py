"""Opening a JSONL store: from its checkpoint, or by replaying everything (R131, R132).

Open takes one of two paths, each in two phases (check, read-only; then repair),
so a store that fails to open is left exactly as it was:

- **From the checkpoint** (``_checkpoint``), when there is a usable one:
  load the index it holds, replay ``main.jsonl`` after its offset, and check
  the sidecars that replay touched (``jsonl_sidecars.check``), reading each
  from the checkpoint's end of the file. Documents the checkpoint lists as
  ``pending`` (a reclamation that failed) are reclaimed. Nothing else is read:
  open costs the checkpoint's bytes plus the tail, not the history.
- **In full**, when there is no checkpoint, it was rejected, or anything on the
  first path did not line up (any ``StorageCorrupted`` there falls back here,
  which then reports the damage precisely): ``main.jsonl`` is replayed from its
  first byte and every needed sidecar checked, as the directory lists them.

Replaying ``main.jsonl``: a commit is confirmed when its marker line is
complete and valid; its records are applied to the index at the marker, each
with its line's byte offset. Bytes after the last confirmed line of a file are
its *unconfirmed tail*: torn lines (cut anywhere, mid-UTF-8 too), complete
records whose marker never landed, and garbage.

Repair: tails are cut with ``truncate`` at the exact byte offset after the last
confirmed line; sidecars of retired current-only documents are removed, and so
are, on a full replay (which lists the directory), sidecars of unconfirmed
creations; sidecars still holding dead revisions are rewritten through
``.reclaim`` and a rename (a failure there is ignored: the document stays
``pending`` for a later open); stray ``.reclaim`` files (on the checkpoint path,
those of the documents the tail or ``pending`` names: the only ones a crash
after the checkpoint can leave) and a stray ``index.checkpoint.tmp`` are
deleted; a rejected checkpoint is deleted. The next commit reuses the first
unconfirmed sequence number.

Open fails with ``StorageCorrupted`` when confirmed data is damaged:

- ``Malformed complete main.jsonl`` / ``Malformed complete doc-<id>.jsonl``: a
  complete line that is not a valid line, before a confirmed one;
- ``Commit sequence does not strictly increase``: a marker's seq is not above
  the previous marker's;
- ``Confirmed record follows an unconfirmed tail``: a record that no marker
  confirms, followed by confirmed data;
- ``Missing confirmed sidecar record``: a sidecar lacks a revision that a marker
  confirmed and that is still needed;
- ``Invalid document content``: a confirmed base is not an object, a delta is
  not a list of operations, or the operations do not apply.

What the checkpoint path does not look at, it does not check at open: damage to
data the checkpoint covers (an old line of ``main.jsonl`` or sidecar record
edited in place, a sidecar deleted) is found when that data is read or appended
to (``_reader``, ``_publish``), which then removes the checkpoint so
the next open replays in full and names the damage. Likewise, an unconfirmed
record left in a sidecar the tail does not touch (a commit killed after writing
its sidecars) stays until the next append to that sidecar cuts it: reads never
look past a document's confirmed revisions, so it is never seen. A store whose
log is smaller than the close threshold has no checkpoint and is checked in
full at every open (``jsonl`` module docstring).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from pi_durable_tui.storage.errors import StorageCorrupted
from pi_durable_tui.storage.jsonl._checkpoint import (
    CHECKPOINT_FILE,
    TEMPORARY_FILE,
    Rejected,
    load,
)
from pi_durable_tui.storage.jsonl._files import (
    MAIN_FILE,
    RECLAIM_SUFFIX,
    SIDECAR_PATTERN,
    fsync_directory,
    replace_file,
    sidecar_name,
)
from pi_durable_tui.storage.jsonl._index import JsonlIndex
from pi_durable_tui.storage.jsonl._replay import replay_main
from pi_durable_tui.storage.jsonl._sidecars import Touched, check, presumed_run, truncate


@dataclass(frozen=True, slots=True)
class RecoveryStats:
    """How much open read: what tests and the benchmark check proportionality with."""

    checkpoint_seq: int | None
    """The seq of the checkpoint open started from; ``None``: a full replay."""
    replayed_from: int
    """Offset of ``main.jsonl`` where replay started."""
    replayed_lines: int
    """Complete lines of ``main.jsonl`` parsed."""
    sidecars_read: int
    """Sidecar files read."""


@dataclass(slots=True)
class Recovery:
    """The outcome of opening a store."""

    index: JsonlIndex
    main_size: int
    """Length of ``main.jsonl`` after repair."""
    checkpoint_offset: int
    """Offset the newest usable checkpoint describes (0: none)."""
    stats: RecoveryStats
    repairs: list[str] = field(default_factory=list)
    """What recovery changed on disk, one human-readable line per change."""


@dataclass(slots=True)
class _Work:
    """What the check phase found and the repair phase does."""

    directory: Path
    index: JsonlIndex
    main_end: int
    main_size: int
    checkpoint_offset: int
    stats: RecoveryStats
    strays: list[str] = field(default_factory=list)
    """Stray files to remove (``.reclaim``, the checkpoint's temporary file)."""
    rejected: str | None = None
    """Why the checkpoint was rejected (it is removed)."""
    doomed: list[str] = field(default_factory=list)
    """Sidecars to remove (known to exist)."""
    maybe_doomed: list[str] = field(default_factory=list)
    """Sidecars to remove if they exist."""
    cuts: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Sidecar name -> (confirmed end, file size)."""
    reclaims: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    """Sidecar name -> (document, start of the needed records, confirmed end)."""


def recover(directory: Path, *, fsync: bool, checkpoints: bool = True) -> Recovery:
    """Read, check and repair the store in ``directory``.

    Args:
        directory: An existing store directory (possibly empty).
        fsync: Flush repairs to disk before returning.
        checkpoints: Start from the checkpoint when there is a usable one.

    Returns:
        The committed state and the list of repairs made.

    Raises:
        StorageCorrupted: Confirmed data is missing or damaged; nothing was changed.
        OSError: A file could not be read or repaired.
    """
    rejected: str | None = None
    if checkpoints:
        try:
            loaded = load(directory)
            if loaded is not None:
                work = _from_checkpoint(directory, loaded.index, loaded.offset)
                return _repair(work, fsync)
        except (Rejected, StorageCorrupted) as error:
            rejected = str(error)
    work = _full(directory)
    if rejected is not None:
        work.rejected = rejected
    return _repair(work, fsync)


def _main_tail(directory: Path, offset: int) -> tuple[bytes, int]:
    path = directory / MAIN_FILE
    if not path.exists():
        return b"", 0
    with path.open("rb") as file:
        file.seek(offset)
        data = file.read()
    return data, offset + len(data)


def _stray_names(directory: Path, names: set[str]) -> list[str]:
    return sorted(name for name in names if (directory / name).exists())


# -- from the checkpoint -----------------------------------------------------------


def _from_checkpoint(directory: Path, index: JsonlIndex, offset: int) -> _Work:
    checkpoint_seq = index.seq
    data, size = _main_tail(directory, offset)
    touched: dict[int, Touched] = {}
    replayed = replay_main(data, offset, index, touched)
    documents = index.documents
    work = _Work(directory, index, replayed.confirmed_end, size, offset, RecoveryStats(0, 0, 0, 0))
    reads = 0
    reclaimed = set(touched) | set(replayed.retired) | documents.pending
    to_scan = set(documents.pending)
    for document_id in sorted(touched):
        row = documents.row(document_id)
        name = sidecar_name(document_id)
        if documents.keep_from(row) >= documents.ordinals[row]:
            documents.reclaimed(row, True, 0)
            work.maybe_doomed.append(name)
            to_scan.discard(document_id)
            continue
        checked = check(directory / name, documents, row, touched[document_id])
        reads += checked.reads
        if checked.size > checked.end:
            work.cuts[name] = (checked.end, checked.size)
        if checked.dead_start is not None:
            work.reclaims[name] = (document_id, checked.dead_start, checked.end)
            to_scan.discard(document_id)
        elif documents.first[row] < documents.keep_from(row):
            to_scan.add(document_id)  # dead records before the part just read
        else:
            documents.pending.discard(document_id)
            to_scan.discard(document_id)
    for document_id in sorted(set(replayed.retired) - set(touched)):
        row = documents.row(document_id)
        if documents.keep_from(row) >= documents.ordinals[row]:
            documents.reclaimed(row, True, 0)
            work.maybe_doomed.append(sidecar_name(document_id))
            to_scan.discard(document_id)
    for document_id in sorted(to_scan):
        row = documents.row(document_id)
        name = sidecar_name(document_id)
        if documents.keep_from(row) >= documents.ordinals[row]:
            documents.reclaimed(row, True, 0)
            work.maybe_doomed.append(name)
            continue
        run = presumed_run(directory / name, documents, row)
        reads += 1
        if run is None:
            raise StorageCorrupted(f"Missing confirmed sidecar record: {name} does not exist")
        needed = documents.keep_from(row)
        documents.first[row] = run.first
        documents.size[row] = run.end
        if run.first < needed:
            work.reclaims[name] = (document_id, run.starts[needed - run.first], run.end)
        else:
            documents.pending.discard(document_id)
        if run.size > run.end:
            work.cuts[name] = (run.end, run.size)
    names = {sidecar_name(d) + RECLAIM_SUFFIX for d in reclaimed} | {TEMPORARY_FILE}
    work.strays = _stray_names(directory, names)
    work.stats = RecoveryStats(checkpoint_seq, offset, replayed.lines, reads)
    return work


# -- in full -----------------------------------------------------------------------


def _full(directory: Path) -> _Work:
    names = sorted(os.listdir(directory))
    main_path = directory / MAIN_FILE
    sidecar_ids = {int(m.group(1)): name for name in names if (m := SIDECAR_PATTERN.match(name))}
    if not main_path.exists() and sidecar_ids:
        raise StorageCorrupted(f"{MAIN_FILE} is missing but document sidecars exist")
    data, size = _main_tail(directory, 0)
    index = JsonlIndex()
    touched: dict[int, Touched] = {}
    replayed = replay_main(data, 0, index, touched)
    documents = index.documents
    work = _Work(directory, index, replayed.confirmed_end, size, 0, RecoveryStats(None, 0, 0, 0))
    for document_id in documents.ids:
        if document_id not in touched:
            raise StorageCorrupted(
                f"Malformed complete {MAIN_FILE}: document {document_id} has no revision"
            )
    for document_id, name in sidecar_ids.items():
        row = documents.row(document_id)
        if row < 0 or documents.keep_from(row) >= documents.ordinals[row]:
            work.doomed.append(name)
    reads = 0
    for row, document_id in enumerate(documents.ids):
        name = sidecar_name(document_id)
        if documents.keep_from(row) >= documents.ordinals[row]:
            documents.reclaimed(row, True, 0)
            continue
        if document_id not in sidecar_ids:
            raise StorageCorrupted(f"Missing confirmed sidecar record: {name} does not exist")
        checked = check(directory / name, documents, row, touched[document_id])
        reads += 1
        if checked.size > checked.end:
            work.cuts[name] = (checked.end, checked.size)
        if checked.dead_start is not None:
            work.reclaims[name] = (document_id, checked.dead_start, checked.end)
    work.strays = [name for name in names if name.endswith(RECLAIM_SUFFIX)]
    if TEMPORARY_FILE in names:
        work.strays.append(TEMPORARY_FILE)
    work.stats = RecoveryStats(None, 0, replayed.lines, reads)
    return work


# -- repair ------------------------------------------------------------------------


def _repair(work: _Work, fsync: bool) -> Recovery:
    directory = work.directory
    repairs: list[str] = []
    for name in work.strays:
        (directory / name).unlink(missing_ok=True)
        repairs.append(f"removed stray {name}")
    checkpoint_offset = work.checkpoint_offset
    if work.rejected is not None:
        (directory / CHECKPOINT_FILE).unlink(missing_ok=True)
        repairs.append(f"removed {CHECKPOINT_FILE} ({work.rejected}); replayed {MAIN_FILE} in full")
    if work.main_end < work.main_size:
        truncate(directory / MAIN_FILE, work.main_end, fsync)
        repairs.append(f"cut {work.main_size - work.main_end} unconfirmed bytes from {MAIN_FILE}")
    for name in work.doomed:
        (directory / name).unlink(missing_ok=True)
        repairs.append(f"removed {name}")
    for name in work.maybe_doomed:
        try:
            (directory / name).unlink()
        except FileNotFoundError:
            continue
        repairs.append(f"removed {name}")
    documents = work.index.documents
    for name in sorted(work.cuts.keys() | work.reclaims.keys()):
        path = directory / name
        if name in work.cuts:
            end, size = work.cuts[name]
            truncate(path, end, fsync)
            repairs.append(f"cut {size - end} unconfirmed bytes from {name}")
        if name in work.reclaims:
            document_id, start, end = work.reclaims[name]
            row = documents.row(document_id)
            dead = documents.keep_from(row) - documents.first[row]
            if _reclaim(path, start, end, fsync):
                documents.reclaimed(row, False, end - start)
                repairs.append(f"reclaimed {dead} dead revisions from {name}")
            else:
                documents.pending.add(document_id)
    if fsync and repairs:
        fsync_directory(directory)
    return Recovery(work.index, work.main_end, checkpoint_offset, work.stats, repairs)


def _reclaim(path: Path, start: int, end: int, fsync: bool) -> bool:
    try:
        with path.open("rb") as file:
            file.seek(start)
            live = file.read(end - start)
        replace_file(path, live, fsync=fsync)
    except OSError:
        return False  # R132: the dead revisions stay; committed state is intact
    return True
