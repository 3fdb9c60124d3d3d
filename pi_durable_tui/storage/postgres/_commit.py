"""One commit, one statement, one round trip (DESIGN.md section 2; R1, R129).

A ``PreparedBatch`` is written by one statement (``statement``): a part per
kind of row the batch holds (insert, upsert, update or delete, each taking
array parameters through ``unnest``), joined as data-modifying ``WITH`` parts,
plus the store row's update when it must. A single statement outside an
explicit transaction is its own transaction, so the batch lands whole or not
at all, and the deferred foreign keys are checked when it ends. Compared with
``BEGIN``, one statement per table and ``COMMIT``, it saves a round trip per
table and two more; compared with a server-side function it needs nothing
installed beyond the tables.

Only the parts a batch needs are sent: a one-entry commit is a plain ``INSERT``
of one ``unnest`` row. A statement with all eleven parts, most of them empty,
cost 1.2 ms more than a round trip here (planning and running every part);
the statement texts differ only by which parts they hold, a few dozen in
practice, and asyncpg keeps each prepared (``STATEMENT_CACHE``).

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

STATEMENT_CACHE = 512
"""Prepared statements asyncpg keeps per connection: every commit shape, and the reads."""


class _Statement:
    """Parts of one statement and their parameters, numbered in binding order."""

    def __init__(self, store: int) -> None:
        self.params: list[Any] = [store]
        self.parts: list[str] = []

    def bind(self, value: Any, cast: str) -> str:
        self.params.append(value)
        return f"${len(self.params)}::{cast}"

    def part(self, template: str, *columns: tuple[list[Any], str]) -> None:
        """Add a part; its ``{}`` fields become the placeholders of ``columns`` (arrays)."""
        self.parts.append(template.format(*(self.bind(v, f"{t}[]") for v, t in columns)))

    def sql(self) -> str:
        *heads, last = self.parts
        if not heads:
            return last
        named = ", ".join(f"p{n} AS ({head})" for n, head in enumerate(heads))
        return f"WITH {named} {last}"


def statement(
    store: int, batch: PreparedBatch, next_id: int, newest_entry: int
) -> tuple[str, list[Any], int]:
    """Return the statement that writes a batch, its parameters, and the newest entry after it.

    Args:
        store: The store's ID (``$1``).
        batch: The checked batch; its ``seq`` is the commit's.
        next_id: The mint floor to record.
        newest_entry: The highest stored entry ID before this batch.
    """
    seq = batch.seq
    top = max((entry.id for entry, _ in batch.entries), default=0)
    w = _Statement(store)
    if batch.conversations:
        rows = [c for c, _ in batch.conversations]
        w.part(
            f"INSERT INTO {SCHEMA}.conversations (store, id, parent_id, parent_at,"
            " owner_conversation_id, owner_task_id, record)"
            " SELECT $1::integer, * FROM unnest({}, {}, {}, {}, {}, {})",
            ([c.id for c in rows], "bigint"),
            ([None if c.parent is None else c.parent.conversation_id for c in rows], "bigint"),
            ([None if c.parent is None else c.parent.at for c in rows], "bigint"),
            ([None if c.owner is None else c.owner.conversation_id for c in rows], "bigint"),
            ([None if c.owner is None else c.owner.task_id for c in rows], "bigint"),
            ([text for _, text in batch.conversations], "text"),
        )
    if batch.entries:
        entries = [e for e, _ in batch.entries]
        w.part(
            f"INSERT INTO {SCHEMA}.entries (store, id, conversation_id, seq, head, record)"
            f" SELECT $1::integer, u.id, u.c, {w.bind(seq, 'bigint')}, u.h, u.r"
            " FROM unnest({}, {}, {}, {}) AS u (id, c, h, r)",
            ([e.id for e in entries], "bigint"),
            ([e.conversation_id for e in entries], "bigint"),
            ([e.head is not None for e in entries], "boolean"),
            ([text for _, text in batch.entries], "text"),
        )
    if batch.tasks:
        tasks = [t for t, _ in batch.tasks]
        w.part(
            f"INSERT INTO {SCHEMA}.tasks (store, id, conversation_id, kind, status,"
            " abort_requested, background, record)"
            " SELECT $1::integer, * FROM unnest({}, {}, {}, {}, {}, {}, {})"
            " ON CONFLICT (store, id) DO UPDATE SET kind = excluded.kind,"
            " status = excluded.status, abort_requested = excluded.abort_requested,"
            " background = excluded.background, record = excluded.record",
            ([t.id for t in tasks], "bigint"),
            ([t.conversation_id for t in tasks], "bigint"),
            ([column_text(t.kind) for t in tasks], "text"),
            ([t.state.get("status") for t in tasks], "text"),
            ([bool(t.abort_requested) for t in tasks], "boolean"),
            ([bool(t.background) for t in tasks], "boolean"),
            ([text for _, text in batch.tasks], "text"),
        )
    if batch.submissions:
        submissions = [s for s, _ in batch.submissions]
        w.part(
            f"INSERT INTO {SCHEMA}.submissions (store, id, conversation_id, type, status,"
            " request_id, record) SELECT $1::integer, * FROM unnest({}, {}, {}, {}, {}, {})"
            " ON CONFLICT (store, id) DO UPDATE SET status = excluded.status,"
            " request_id = excluded.request_id, record = excluded.record",
            ([s.id for s in submissions], "bigint"),
            ([s.conversation_id for s in submissions], "bigint"),
            ([s.type for s in submissions], "text"),
            ([s.status for s in submissions], "text"),
            ([column_text(s.request_id) for s in submissions], "text"),
            ([text for _, text in batch.submissions], "text"),
        )
    if batch.new_documents:
        created = [d for d, _ in batch.new_documents]
        scopes = [ScopeRef.of(d.scope) for d in created]
        w.part(
            f"INSERT INTO {SCHEMA}.documents (store, id, kind, scope_kind, scope_id, key,"
            " created_at, retired_at, record)"
            " SELECT $1::integer, * FROM unnest({}, {}, {}, {}, {}, {}, {}, {})",
            ([d.id for d in created], "bigint"),
            ([column_text(d.kind) for d in created], "text"),
            ([column_text(s.kind) for s in scopes], "text"),
            ([s.id for s in scopes], "bigint"),
            ([column_text(d.key) for d in created], "text"),
            ([d.created_at for d in created], "bigint"),
            ([d.retired_at for d in created], "bigint"),
            ([text for _, text in batch.new_documents], "text"),
        )
    if batch.retired:
        w.part(
            f"UPDATE {SCHEMA}.documents AS d SET retired_at = u.a, record = u.r"
            " FROM unnest({}, {}, {}) AS u (id, a, r) WHERE d.store = $1 AND d.id = u.id",
            ([d.id for d, _ in batch.retired], "bigint"),
            ([d.retired_at for d, _ in batch.retired], "bigint"),
            ([text for _, text in batch.retired], "text"),
        )
    # REMINDER: the parts share one snapshot, so the DELETE of a retired current-only
    # document's revisions cannot see this batch's; they are left out instead.
    gone = sorted(doc for doc, everything in batch.reclaim.items() if everything)
    revisions = [r for r in batch.revisions if not batch.reclaim.get(r.document_id, False)]
    if revisions:
        w.part(
            f"INSERT INTO {SCHEMA}.document_revisions (store, document_id, seq, kind, version,"
            f" content) SELECT $1::integer, u.d, {w.bind(seq, 'bigint')}, u.k, u.v, u.c"
            " FROM unnest({}, {}, {}, {}) AS u (d, k, v, c)",
            ([r.document_id for r in revisions], "bigint"),
            ([r.kind for r in revisions], "text"),
            ([r.version for r in revisions], "bigint"),
            ([r.text for r in revisions], "text"),
        )
    if gone:
        w.part(
            f"DELETE FROM {SCHEMA}.document_revisions WHERE store = $1 AND document_id = ANY({{}})",
            (gone, "bigint"),
        )
    superseded = sorted(doc for doc, everything in batch.reclaim.items() if not everything)
    if superseded:
        w.part(
            f"DELETE FROM {SCHEMA}.document_revisions WHERE store = $1"
            f" AND document_id = ANY({{}}) AND seq < {w.bind(seq, 'bigint')}",
            (superseded, "bigint"),
        )
    # REMINDER: an entry above every stored one carries this seq, and the tables' keys
    # bound the IDs (``_schema.read_metadata``): the store row is written only otherwise.
    if top <= newest_entry:
        w.parts.append(
            f"UPDATE {SCHEMA}.stores SET next_seq = {w.bind(seq + 1, 'bigint')},"
            f" next_id = {w.bind(next_id, 'bigint')} WHERE id = $1"
        )
    return w.sql(), w.params, max(newest_entry, top)
