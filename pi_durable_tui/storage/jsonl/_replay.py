"""Replaying ``main.jsonl`` into a JSONL index, from its start or from a checkpoint (R131).

``replay_main`` reads the log's complete lines in order. Record lines wait for
their commit's marker; a complete, valid marker confirms them, and they are
applied to the index with their line's byte offset (the index keeps where a
record is, not its text). What follows the last marker is the unconfirmed
tail. The checks are R131's, on whatever part of the log is replayed:

- a malformed complete line before a marker: ``Malformed complete main.jsonl``;
- a marker whose seq is not above the previous one (the checkpoint's seq when
  replaying its tail): ``Commit sequence does not strictly increase``;
- a record of an earlier seq before a marker (its own marker never landed, and
  this one confirms nothing of it): ``Confirmed record follows an unconfirmed
  tail``;
- a record that does not make sense where it is (an entry without a kind, a
  retirement of an unknown document, a revision of one): ``Malformed complete
  main.jsonl``.

Each document revision a marker names is counted in the index's document
columns and collected in ``touched`` (``jsonl_sidecars.Touched``), for the
sidecar checks that follow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pi_durable_tui.storage.errors import StorageCorrupted
from pi_durable_tui.storage.jsonl._files import MAIN_FILE, MainLine, parse_main_line, split_lines
from pi_durable_tui.storage.jsonl._index import JsonlIndex
from pi_durable_tui.storage.jsonl._sidecars import Touched
from pi_durable_tui.storage.records import (
    ConversationRecord,
    DocumentRecord,
    SubmissionRecord,
    TaskRecord,
)

Pending = tuple[MainLine, int, int]
"""A record line waiting for its marker, with its offset and length."""


@dataclass(slots=True)
class Replayed:
    """What a replay found."""

    confirmed_end: int
    """Offset just after the last confirmed line."""
    lines: int
    """Complete lines parsed."""
    retired: list[int] = field(default_factory=list)
    """Documents retired by the replayed commits."""


def replay_main(data: bytes, base: int, index: JsonlIndex, touched: dict[int, Touched]) -> Replayed:
    """Apply every confirmed commit in ``data`` (``main.jsonl`` from offset ``base``).

    Args:
        data: The bytes of ``main.jsonl`` from ``base`` to its end.
        base: Their offset: 0, or a checkpoint's.
        index: The index to apply commits to (empty, or loaded from the checkpoint).
        touched: Receives, per document, the revisions the replayed markers name.

    Raises:
        StorageCorrupted: Confirmed data is damaged (see the module docstring).
    """
    lines, _ = split_lines(data)
    pending: list[Pending] = []
    malformed = 0
    last_seq = index.seq
    confirmed_end = 0
    start = 0
    replayed = Replayed(base, len(lines))
    for number, (raw, end) in enumerate(lines, 1):
        at, start = start, end
        line = parse_main_line(raw)
        if line is None:
            malformed = malformed or number
            continue
        if line.type != "commit":
            pending.append((line, base + at, len(raw)))
            continue
        if malformed:
            raise StorageCorrupted(f"Malformed complete {MAIN_FILE}: line {malformed}")
        if line.seq <= last_seq:
            raise StorageCorrupted(
                f"Commit sequence does not strictly increase: {line.seq} after {last_seq} "
                f"({MAIN_FILE} line {number})"
            )
        for record, _, _ in pending:
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
            _apply_commit(index, pending, line, touched, replayed)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise StorageCorrupted(
                f"Malformed complete {MAIN_FILE}: commit {line.seq} ({error!r})"
            ) from error
        pending = []
        last_seq = line.seq
        confirmed_end = end
    replayed.confirmed_end = base + confirmed_end
    return replayed


def _int(record: dict[str, Any], key: str) -> int:
    value = record[key]
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{key} is not an integer")
    return value


def _apply_commit(
    index: JsonlIndex,
    records: list[Pending],
    marker: MainLine,
    touched: dict[int, Touched],
    replayed: Replayed,
) -> None:
    seq = marker.seq
    documents = index.documents
    for line, at, length in records:
        record = line.record
        assert record is not None
        if line.type == "entry":
            if not isinstance(record["kind"], str):
                raise TypeError("entry kind is not a string")
            head = record.get("head") is not None
            entry_id, conversation_id = _int(record, "id"), _int(record, "conversation_id")
            index.add_entry(entry_id, conversation_id, head, at, length)
        elif line.type == "task":
            index.put_task(TaskRecord.from_json(record), at, length)
        elif line.type == "submission":
            index.put_submission(SubmissionRecord.from_json(record), at, length)
        elif line.type == "conversation":
            index.add_conversation(ConversationRecord.from_json(record))
        else:
            document = DocumentRecord.from_json(record)
            known = documents.row(document.id) >= 0
            if known != (line.type == "retire") or (document.retired_at is not None) != (
                known or document.retired_at == seq
            ):
                raise ValueError(f"unexpected {line.type} of document {document.id}")
            index.put_document(document)
            if known:
                replayed.retired.append(document.id)
    assert marker.revisions is not None
    for document_id, kind, version in marker.revisions:
        row = documents.row(document_id)
        if row < 0:
            raise ValueError(f"revision of unknown document {document_id}")
        found = touched.get(document_id)
        if found is None:
            found = touched[document_id] = Touched(documents.ordinals[row], documents.size[row])
        found.expected.append((seq, kind, version))
        documents.add_revision(row, seq, kind, version, 0)
    index.seq = seq
