"""Planning one commit of a JSONL store: every byte it writes, before any I/O (R130).

``plan_commit`` turns a prepared batch into a ``Plan``: the exact bytes of its
``main.jsonl`` lines (table records, then the commit marker) and of each
affected sidecar, where each record line will sit inside the commit's bytes
(so the index can find it again without keeping its text), the new current
value of each live document it changes, and which sidecars reclamation will
rewrite or remove (R132). A failure here (a delta that does not apply) is a
``StorageRejected`` that leaves the store as it was.

For each existing sidecar a commit appends to, the plan also says what the file
must hold first (``Expectation``): ``Publisher.write`` checks it the first time
the store touches that file (``_publish``). ``Written`` is what the
publisher reports back, for ``JsonlIndex.apply``.
"""

from __future__ import annotations

from collections.abc import Container, Sequence

from pi_durable_tui.storage._batch import PreparedBatch, PreparedRevision
from pi_durable_tui.storage.errors import StorageRejected
from pi_durable_tui.storage.json_ops import Op, apply_ops, loads
from pi_durable_tui.storage.jsonl._files import (
    RecordType,
    RevisionKind,
    marker_line,
    record_line,
    sidecar_line,
)
from pi_durable_tui.storage.jsonl._index import JsonlIndex
from pi_durable_tui.storage.jsonl._plan_types import Expectation, NewContent, Plan


def plan_commit(
    batch: PreparedBatch, index: JsonlIndex, checked: Container[int] = frozenset()
) -> Plan:
    """Serialize a prepared batch into the lines of every file it touches.

    Args:
        batch: The batch, checked by ``prepare_batch`` against ``index``.
        index: The committed state.
        checked: Sidecars already checked in this session: they need no expectation.

    Raises:
        StorageRejected: A delta does not apply to its document, or leaves its root
            something other than an object.
    """
    seq = batch.seq
    plan = Plan()
    lines: list[str] = []
    offset = 0
    groups: list[tuple[RecordType, Sequence[tuple[object, str]], list[tuple[int, int]] | None]] = [
        ("conversation", batch.conversations, None),
        ("entry", batch.entries, plan.entry_spans),
        ("task", batch.tasks, plan.task_spans),
        ("submission", batch.submissions, plan.submission_spans),
        # REMINDER: retirements before creations, in this order on replay too, so an
        # address retired and re-created in one commit ends up live.
        ("retire", batch.retired, None),
        ("document", batch.new_documents, None),
    ]
    for kind, records, spans in groups:
        for _, text in records:
            line = record_line(kind, seq, text)
            lines.append(line)
            # ``isascii`` is a flag lookup: only non-ASCII lines pay for a second encoding.
            size = len(line) if line.isascii() else len(line.encode())
            if spans is not None:
                spans.append((offset, size - 1))  # the span excludes the newline
            offset += size
    created = {record.id for record, _ in batch.new_documents}
    ended = {record.id for record, _ in batch.retired}
    ended |= {record.id for record, _ in batch.new_documents if record.retired_at is not None}
    documents = index.documents
    for revision in batch.revisions:
        document_id = revision.document_id
        everything = batch.reclaim.get(document_id)
        if everything:
            continue  # retired current-only: nothing of it would survive reclamation
        row = documents.row(document_id)
        ordinal = 0 if row < 0 else documents.ordinals[row]
        data = sidecar_line(seq, ordinal, revision.kind, revision.version, revision.text).encode()
        plan.sidecars.append((document_id, data, document_id in created))
        plan.sidecar_bytes[document_id] = len(data)
        if row >= 0 and document_id not in created and document_id not in checked:
            plan.expected[document_id] = _expectation(index, row)
        if document_id not in ended:
            plan.contents[document_id] = _next_content(index, row, revision)
        if everything is False and row >= 0 and documents.ordinals[row] > documents.first[row]:
            plan.reclaims.append((document_id, data))  # the new base is all that stays
    for document_id, everything in batch.reclaim.items():
        row = documents.row(document_id)
        if everything and row >= 0 and documents.ordinals[row] > documents.first[row]:
            plan.reclaims.append((document_id, None))
    refs = [(r.document_id, r.kind, r.version) for r in batch.revisions]
    lines.append(marker_line(seq, refs))
    plan.main = "".join(lines).encode()
    return plan


def _expectation(index: JsonlIndex, row: int) -> Expectation:
    documents = index.documents
    ordinals = documents.ordinals[row]
    kind: RevisionKind = "base" if documents.base[row] == ordinals - 1 else "delta"
    return Expectation(
        documents.size[row],
        documents.keep_from(row),
        ordinals,
        (documents.last_seq[row], kind, documents.version[row]),
    )


def _next_content(index: JsonlIndex, row: int, revision: PreparedRevision) -> NewContent:
    if revision.kind == "base":
        return NewContent(text=revision.text)  # an object: prepare_batch checked it
    document_id = revision.document_id
    current = index.documents.shared_value(row)
    try:
        ops: list[Op] = loads(revision.text)  # type: ignore[assignment]
        value = apply_ops(current, ops)
    except Exception as error:  # any failure to apply is the caller's bad delta
        raise StorageRejected(f"Document {document_id} operations do not apply: {error}") from None
    if not isinstance(value, dict):
        raise StorageRejected(
            f"Document {document_id} operations make its value a "
            f"{type(value).__name__}, not an object"
        )
    return NewContent(value=value)
