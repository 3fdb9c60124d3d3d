"""Opening a JSONL store: reading, checking and repairing its files (R131, R132).

Recovery runs in two phases, so a store that fails to open is left exactly as
it was:

1. **Check** (read-only). ``main.jsonl`` is read once, line by line; a commit is
   confirmed when its marker line is complete and valid, and its records are
   applied to a fresh ``JsonlIndex`` at the marker. From the markers, recovery
   knows every confirmed revision of every document; each sidecar must hold a
   contiguous run of them, ending with the newest, and starting no later than
   the oldest revision still needed (the newest base of a current-only document,
   the creating base of a rewindable one). Bytes after the last confirmed line
   of a file are its *unconfirmed tail*: torn lines (cut anywhere, mid-UTF-8
   too), complete records whose marker never landed, and garbage.
2. **Repair**. Tails are cut by ``truncate`` at the exact byte offset after the
   last confirmed line; sidecars of documents whose creation is unconfirmed, and
   of retired current-only documents, are removed; sidecars still holding dead
   revisions are rewritten through ``.reclaim`` and an atomic rename (a failure
   there is ignored: the dead revisions stay until a later open); stray
   ``.reclaim`` files, which never hold the only copy of anything, are deleted.
   The next commit reuses the first unconfirmed sequence number.

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

Cost: one read of ``main.jsonl`` and of each sidecar of a document that is live
or rewindable; per line, one header match and one ``json.loads`` of the record;
entries, tasks and submissions stay JSON text; each live document's current
value is computed once, from its newest base. Retired current-only sidecars are
removed without being read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pi_durable_tui.storage.batch import is_current_only
from pi_durable_tui.storage.errors import StorageCorrupted
from pi_durable_tui.storage.json_ops import JsonObject, apply_ops
from pi_durable_tui.storage.jsonl_files import (
    MAIN_FILE,
    RECLAIM_SUFFIX,
    SIDECAR_PATTERN,
    MainLine,
    SidecarLine,
    fsync_directory,
    parse_main_line,
    parse_sidecar_line,
    replace_file,
    sidecar_name,
    split_lines,
)
from pi_durable_tui.storage.jsonl_index import Current, JsonlIndex
from pi_durable_tui.storage.records import (
    ConversationRecord,
    DocumentRecord,
    SubmissionRecord,
    TaskRecord,
)

Expected = tuple[int, str, int]
"""A confirmed revision as the markers name it: ``(seq, kind, version)``."""


@dataclass(slots=True)
class Recovery:
    """The outcome of opening a store."""

    index: JsonlIndex
    repairs: list[str] = field(default_factory=list)
    """What recovery changed on disk, one human-readable line per change."""


@dataclass(slots=True)
class _Sidecar:
    """The confirmed records found in one sidecar, with their byte ranges."""

    records: list[tuple[SidecarLine, int, int]]
    first: int
    """Ordinal of the first record in the file."""
    size: int
    confirmed_end: int


def recover(directory: Path, *, fsync: bool) -> Recovery:
    """Read, check and repair the store in ``directory``.

    Args:
        directory: An existing store directory (possibly empty).
        fsync: Flush repairs to disk before returning.

    Returns:
        The committed state and the list of repairs made.

    Raises:
        StorageCorrupted: Confirmed data is missing or damaged; nothing was changed.
        OSError: A file could not be read or repaired.
    """
    names = sorted(os.listdir(directory))
    main_path = directory / MAIN_FILE
    sidecar_ids = {int(m.group(1)): name for name in names if (m := SIDECAR_PATTERN.match(name))}
    if not main_path.exists() and sidecar_ids:
        raise StorageCorrupted(f"{MAIN_FILE} is missing but document sidecars exist")
    data = main_path.read_bytes() if main_path.exists() else b""
    index = JsonlIndex()
    expected: dict[int, list[Expected]] = {}
    main_end = _read_main(data, index, expected)

    # -- check every sidecar before changing anything ------------------------
    found: dict[int, _Sidecar] = {}
    doomed: list[str] = []
    for document_id in index.documents:
        if document_id not in expected:
            raise StorageCorrupted(
                f"Malformed complete {MAIN_FILE}: document {document_id} has no revision"
            )
    for document_id, name in sidecar_ids.items():
        incarnation = index.documents.get(document_id)
        if incarnation is None or (
            incarnation.retired_at is not None and is_current_only(incarnation.scope)
        ):
            doomed.append(name)
            continue
        found[document_id] = _read_sidecar(directory / name, name, expected[document_id])
    kept: dict[int, int] = {}
    for document_id, record in index.documents.items():
        needed = _needed(record, expected[document_id])
        if needed == len(expected[document_id]):
            continue
        sidecar = found.get(document_id)
        name = sidecar_name(document_id)
        if sidecar is None:
            raise StorageCorrupted(f"Missing confirmed sidecar record: {name} does not exist")
        last = sidecar.first + len(sidecar.records)
        if sidecar.first > needed or last < len(expected[document_id]):
            missing = needed if sidecar.first > needed else last
            seq = expected[document_id][missing][0]
            raise StorageCorrupted(
                f"Missing confirmed sidecar record: {name} lacks revision {missing} (seq {seq})"
            )
        _load_revisions(index, record, sidecar, needed, name)
        kept[document_id] = needed

    # -- repair ----------------------------------------------------------------
    repairs: list[str] = []
    for name in names:
        if name.endswith(RECLAIM_SUFFIX):
            (directory / name).unlink(missing_ok=True)
            repairs.append(f"removed stray {name}")
    if main_end < len(data):
        _truncate(main_path, main_end, fsync)
        repairs.append(f"cut {len(data) - main_end} unconfirmed bytes from {MAIN_FILE}")
    for name in doomed:
        (directory / name).unlink(missing_ok=True)
        repairs.append(f"removed {name}")
    for document_id, sidecar in found.items():
        path = directory / sidecar_name(document_id)
        if sidecar.confirmed_end < sidecar.size:
            _truncate(path, sidecar.confirmed_end, fsync)
            cut = sidecar.size - sidecar.confirmed_end
            repairs.append(f"cut {cut} unconfirmed bytes from {path.name}")
        state = index.sidecars[document_id]
        state.records = len(sidecar.records)
        dead = kept[document_id] - sidecar.first
        if dead > 0 and _reclaim(path, sidecar, dead, fsync):
            state.records -= dead
            repairs.append(f"reclaimed {dead} dead revisions from {path.name}")
    if fsync and repairs:
        fsync_directory(directory)
    return Recovery(index, repairs)


def _truncate(path: Path, size: int, fsync: bool) -> None:
    with path.open("r+b") as file:
        file.truncate(size)
        if fsync:
            os.fsync(file.fileno())


def _reclaim(path: Path, sidecar: _Sidecar, dead: int, fsync: bool) -> bool:
    start = sidecar.records[dead][1]
    try:
        with path.open("rb") as file:
            file.seek(start)
            live = file.read(sidecar.confirmed_end - start)
        replace_file(path, live, fsync=fsync)
    except OSError:
        return False  # R132: the dead revisions stay; committed state is intact
    return True


# -- main.jsonl -----------------------------------------------------------------


def _read_main(data: bytes, index: JsonlIndex, expected: dict[int, list[Expected]]) -> int:
    """Apply every confirmed commit of ``main.jsonl`` to ``index``; return its confirmed length."""
    lines, _ = split_lines(data)
    pending: list[MainLine] = []
    malformed = 0
    last_seq = 0
    confirmed_end = 0
    for number, (raw, end) in enumerate(lines, 1):
        line = parse_main_line(raw)
        if line is None:
            malformed = malformed or number
            continue
        if line.type != "commit":
            pending.append(line)
            continue
        if malformed:
            raise StorageCorrupted(f"Malformed complete {MAIN_FILE}: line {malformed}")
        if line.seq <= last_seq:
            raise StorageCorrupted(
                f"Commit sequence does not strictly increase: {line.seq} after {last_seq} "
                f"({MAIN_FILE} line {number})"
            )
        for record in pending:
            if record.seq < line.seq:
                raise StorageCorrupted(
                    f"Confirmed record follows an unconfirmed tail: {MAIN_FILE} holds a "
                    f"{record.type} of seq {record.seq} before the marker of seq {line.seq}"
                )
            if record.seq > line.seq:
                raise StorageCorrupted(
                    f"Malformed complete {MAIN_FILE}: a {record.type} of seq {record.seq} "
                    f"before the marker of seq {line.seq}"
                )
        try:
            _apply_commit(index, pending, line, expected)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise StorageCorrupted(
                f"Malformed complete {MAIN_FILE}: commit {line.seq} ({error!r})"
            ) from error
        pending = []
        last_seq = line.seq
        confirmed_end = end
    return confirmed_end


def _int(record: dict[str, Any], key: str) -> int:
    value = record[key]
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{key} is not an integer")
    return value


def _apply_commit(
    index: JsonlIndex,
    records: list[MainLine],
    marker: MainLine,
    expected: dict[int, list[Expected]],
) -> None:
    seq = marker.seq
    for line in records:
        record = line.record
        assert record is not None
        if line.type == "entry":
            if not isinstance(record["kind"], str):
                raise TypeError("entry kind is not a string")
            head = record.get("head") is not None
            index.add_entry(
                _int(record, "id"), _int(record, "conversation_id"), head, line.text, seq
            )
        elif line.type == "task":
            index.put_task(TaskRecord.from_json(record), line.text)
        elif line.type == "submission":
            index.put_submission(SubmissionRecord.from_json(record), line.text)
        elif line.type == "conversation":
            index.add_conversation(ConversationRecord.from_json(record))
        else:
            document = DocumentRecord.from_json(record)
            known = document.id in index.documents
            if known != (line.type == "retire") or (document.retired_at is not None) != (
                known or document.retired_at == seq
            ):
                raise ValueError(f"unexpected {line.type} of document {document.id}")
            index.put_document(document)
    assert marker.revisions is not None
    for document_id, kind, version in marker.revisions:
        if document_id not in index.documents:
            raise ValueError(f"revision of unknown document {document_id}")
        expected.setdefault(document_id, []).append((seq, kind, version))
        index.sidecars[document_id].ordinals += 1
    index.seq = seq


# -- sidecars -------------------------------------------------------------------


def _needed(record: DocumentRecord, revisions: list[Expected]) -> int:
    """Return the ordinal of the oldest revision a document still needs."""
    if not is_current_only(record.scope):
        return 0
    if record.retired_at is not None:
        return len(revisions)
    newest_base = len(revisions) - 1
    while newest_base > 0 and revisions[newest_base][1] != "base":
        newest_base -= 1
    return newest_base


def _matches(line: SidecarLine, revisions: list[Expected], ordinal: int) -> bool:
    return (
        line.ordinal == ordinal
        and ordinal < len(revisions)
        and revisions[ordinal] == (line.seq, line.kind, line.version)
    )


def _read_sidecar(path: Path, name: str, revisions: list[Expected]) -> _Sidecar:
    """Find the confirmed run of records in a sidecar; everything after it is its tail."""
    data = path.read_bytes()
    lines, _ = split_lines(data)
    records: list[tuple[SidecarLine, int, int]] = []
    first: int | None = None
    problem = ""
    start = 0
    confirmed_end = 0
    for number, (raw, end) in enumerate(lines, 1):
        line = parse_sidecar_line(raw)
        if line is not None:
            if first is None and _matches(line, revisions, line.ordinal):
                first = line.ordinal
            if first is not None and _matches(line, revisions, first + len(records)):
                if problem:
                    raise StorageCorrupted(problem)
                records.append((line, start, end))
                confirmed_end = end
                start = end
                continue
        if not problem:
            problem = (
                f"Malformed complete {name}: line {number}"
                if line is None
                else f"Confirmed record follows an unconfirmed tail: {name} line {number} "
                f"(seq {line.seq}) is not confirmed"
            )
        start = end
    return _Sidecar(records, len(revisions) if first is None else first, len(data), confirmed_end)


def _load_revisions(
    index: JsonlIndex, record: DocumentRecord, sidecar: _Sidecar, needed: int, name: str
) -> None:
    """Keep a document's needed revisions in memory and compute its current value."""
    lines = [line for line, _, _ in sidecar.records[needed - sidecar.first :]]
    newest_base = max((i for i, line in enumerate(lines) if line.kind == "base"), default=-1)
    if newest_base < 0:
        raise StorageCorrupted(f"Invalid document content: {name} keeps no base")
    current: JsonObject = {}
    for position, line in enumerate(lines):
        payload = line.payload
        if line.kind == "base" and not isinstance(payload, dict):
            raise StorageCorrupted(f"Invalid document content: {name} seq {line.seq}")
        if line.kind == "delta" and not (
            isinstance(payload, list) and all(isinstance(op, dict) for op in payload)
        ):
            raise StorageCorrupted(f"Invalid document content: {name} seq {line.seq}")
        index.add_revision(record.id, line.seq, line.kind, line.version, line.text)
        if position < newest_base:
            continue  # only the newest base and its deltas make the current value
        try:
            value = payload if line.kind == "base" else apply_ops(current, payload)  # type: ignore[arg-type]
        except (ValueError, TypeError, AttributeError) as error:
            raise StorageCorrupted(
                f"Invalid document content: {name} seq {line.seq} ({error})"
            ) from error
        if not isinstance(value, dict):
            raise StorageCorrupted(f"Invalid document content: {name} seq {line.seq}")
        current = value
    if record.retired_at is None:
        index.current[record.id] = Current(lines[-1].version, current, len(lines) - 1 - newest_base)
