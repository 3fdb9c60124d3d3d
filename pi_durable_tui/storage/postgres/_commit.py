"""One commit, one statement, one round trip (DESIGN.md section 2; R1, R129).

A ``PreparedBatch`` is written by ``WRITE``: one prepared statement whose
data-modifying ``WITH`` parts insert, upsert, update and delete every table's
rows from array parameters (``unnest``), and update the store row when it must.
A single statement outside an explicit transaction is its own transaction, so
the batch lands whole or not at all, and the deferred foreign keys are checked
when it ends. Compared with ``BEGIN``, one statement per table and ``COMMIT``,
it saves a round trip per table and two more; compared with a server-side
function it needs nothing installed beyond the tables.

All parts of one statement see the same snapshot, so a part cannot see the rows
another part writes. Two consequences, both handled here rather than in SQL:

- a current-only document retired in this batch (``reclaim[id] is True``) loses
  every revision; its revisions of this batch are simply not inserted, since the
  ``DELETE`` could not see them;
- the reclamation that follows a new base of a current-only document deletes the
  revisions *before* this seq, which all exist already.

The store row is written only when no entry of the batch rises above every
stored entry (see ``_schema``: the newest entry row then carries the seq).
"""

from __future__ import annotations

from typing import Any

from pi_durable_tui.storage._batch import PreparedBatch
from pi_durable_tui.storage.postgres._columns import column_text
from pi_durable_tui.storage.postgres._schema import SCHEMA
from pi_durable_tui.storage.records import ScopeRef

WRITE = f"""WITH
conversations AS (
    INSERT INTO {SCHEMA}.conversations
        (store, id, parent_id, parent_at, owner_conversation_id, owner_task_id, record)
    SELECT $1::integer, * FROM unnest($6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[],
        $10::bigint[], $11::text[])),
entries AS (
    INSERT INTO {SCHEMA}.entries (store, id, conversation_id, seq, head, record)
    SELECT $1::integer, u.id, u.conversation_id, $2::bigint, u.head, u.record
    FROM unnest($12::bigint[], $13::bigint[], $14::boolean[], $15::text[])
        AS u (id, conversation_id, head, record)),
tasks AS (
    INSERT INTO {SCHEMA}.tasks
        (store, id, conversation_id, kind, status, abort_requested, background, record)
    SELECT $1::integer, * FROM unnest($16::bigint[], $17::bigint[], $18::text[], $19::text[],
        $20::boolean[], $21::boolean[], $22::text[])
    ON CONFLICT (store, id) DO UPDATE SET kind = excluded.kind, status = excluded.status,
        abort_requested = excluded.abort_requested, background = excluded.background,
        record = excluded.record),
submissions AS (
    INSERT INTO {SCHEMA}.submissions (store, id, conversation_id, type, status, request_id, record)
    SELECT $1::integer, * FROM unnest($23::bigint[], $24::bigint[], $25::text[], $26::text[],
        $27::text[], $28::text[])
    ON CONFLICT (store, id) DO UPDATE SET status = excluded.status,
        request_id = excluded.request_id, record = excluded.record),
created AS (
    INSERT INTO {SCHEMA}.documents
        (store, id, kind, scope_kind, scope_id, key, created_at, retired_at, record)
    SELECT $1::integer, * FROM unnest($29::bigint[], $30::text[], $31::text[], $32::bigint[],
        $33::text[], $34::bigint[], $35::bigint[], $36::text[])),
retired AS (
    UPDATE {SCHEMA}.documents AS d SET retired_at = u.retired_at, record = u.record
    FROM unnest($37::bigint[], $38::bigint[], $39::text[]) AS u (id, retired_at, record)
    WHERE d.store = $1 AND d.id = u.id),
revisions AS (
    INSERT INTO {SCHEMA}.document_revisions (store, document_id, seq, kind, version, content)
    SELECT $1::integer, u.document_id, $2::bigint, u.kind, u.version, u.content
    FROM unnest($40::bigint[], $41::text[], $42::bigint[], $43::text[])
        AS u (document_id, kind, version, content)),
reclaimed AS (
    DELETE FROM {SCHEMA}.document_revisions
    WHERE store = $1 AND document_id = ANY($44::bigint[])),
superseded AS (
    DELETE FROM {SCHEMA}.document_revisions
    WHERE store = $1 AND document_id = ANY($45::bigint[]) AND seq < $2),
metadata AS (
    UPDATE {SCHEMA}.stores SET next_seq = $4, next_id = $5 WHERE id = $1 AND $3::boolean)
SELECT 1"""
"""The whole commit; its parameters are made by ``parameters``."""


def parameters(
    store: int, batch: PreparedBatch, next_id: int, newest_entry: int
) -> tuple[list[Any], int]:
    """Return ``WRITE``'s parameters for a batch, and the newest entry ID after it.

    Args:
        store: The store's ID.
        batch: The checked batch; its ``seq`` is the commit's.
        next_id: The mint floor to record.
        newest_entry: The highest stored entry ID before this batch.
    """
    seq = batch.seq
    top = max((entry.id for entry, _ in batch.entries), default=0)
    write_metadata = top <= newest_entry
    conversations = [c for c, _ in batch.conversations]
    entries = [e for e, _ in batch.entries]
    tasks = [t for t, _ in batch.tasks]
    submissions = [s for s, _ in batch.submissions]
    created = [d for d, _ in batch.new_documents]
    scopes = [ScopeRef.of(d.scope) for d in created]
    gone = {doc for doc, everything in batch.reclaim.items() if everything}
    revisions = [r for r in batch.revisions if r.document_id not in gone]
    params: list[Any] = [
        store,
        seq,
        write_metadata,
        seq + 1,
        next_id,
        # conversations
        [c.id for c in conversations],
        [None if c.parent is None else c.parent.conversation_id for c in conversations],
        [None if c.parent is None else c.parent.at for c in conversations],
        [None if c.owner is None else c.owner.conversation_id for c in conversations],
        [None if c.owner is None else c.owner.task_id for c in conversations],
        [text for _, text in batch.conversations],
        # entries
        [e.id for e in entries],
        [e.conversation_id for e in entries],
        [e.head is not None for e in entries],
        [text for _, text in batch.entries],
        # tasks
        [t.id for t in tasks],
        [t.conversation_id for t in tasks],
        [column_text(t.kind) for t in tasks],
        [t.state.get("status") for t in tasks],
        [bool(t.abort_requested) for t in tasks],
        [bool(t.background) for t in tasks],
        [text for _, text in batch.tasks],
        # submissions
        [s.id for s in submissions],
        [s.conversation_id for s in submissions],
        [s.type for s in submissions],
        [s.status for s in submissions],
        [column_text(s.request_id) for s in submissions],
        [text for _, text in batch.submissions],
        # created documents
        [d.id for d in created],
        [column_text(d.kind) for d in created],
        [column_text(s.kind) for s in scopes],
        [s.id for s in scopes],
        [column_text(d.key) for d in created],
        [d.created_at for d in created],
        [d.retired_at for d in created],
        [text for _, text in batch.new_documents],
        # retired documents
        [d.id for d, _ in batch.retired],
        [d.retired_at for d, _ in batch.retired],
        [text for _, text in batch.retired],
        # revisions
        [r.document_id for r in revisions],
        [r.kind for r in revisions],
        [r.version for r in revisions],
        [r.text for r in revisions],
        # reclamation
        sorted(gone),
        sorted(doc for doc, everything in batch.reclaim.items() if not everything),
    ]
    return params, max(newest_entry, top)
