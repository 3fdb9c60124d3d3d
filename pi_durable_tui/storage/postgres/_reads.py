"""Keyed lookups and scans of the PostgreSQL store, one query each (R17, R71, R128).

Everything answers exactly like ``MemoryStorage``: the same validation order
(limit, order, cursor, then the conversation a scan names), the same cursors
(``storage._scans``), the same filters, and records parsed from their JSON text
on every read, so every result is a detached copy.

Conversations never change once written, so their records are kept once read
(``Reads.conversations``, bounded): a fork-aware read needs the fork chain of its
conversation (one recursive query the first time, nothing after), and then reads
one index range per chain member, merged by ``UNION ALL ... ORDER BY id LIMIT n``
in one statement, as SQLite does (``sqlite._scans`` says why not ``OR``).
A document read fetches the incarnation and its revisions since the newest base
in one statement too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import asyncpg

from pi_durable_tui.storage._backend_base import TaskFilters
from pi_durable_tui.storage._batch import PreparedBatch
from pi_durable_tui.storage._scans import (
    check_limit,
    check_order,
    make_cursor,
    no_history,
    read_cursor,
    status_filter,
    unknown_conversation,
    visible_chain,
)
from pi_durable_tui.storage.json_ops import JsonObject, loads
from pi_durable_tui.storage.postgres._columns import Where, column_text, fits
from pi_durable_tui.storage.postgres._schema import SCHEMA
from pi_durable_tui.storage.postgres._view import LIMIT, content_of
from pi_durable_tui.storage.protocol import ScanOrder
from pi_durable_tui.storage.records import (
    MAX_ID,
    ConversationRecord,
    DocAddress,
    DocumentRead,
    DocumentRecord,
    EntryRecord,
    ForkPoint,
    Page,
    ScopeRef,
    StoredEntry,
    SubmissionRecord,
    TaskRecord,
)

T = TypeVar("T")

_CHAIN = (
    "WITH RECURSIVE chain (id, parent_id, record, depth) AS ("
    f" SELECT id, parent_id, record, 0 FROM {SCHEMA}.conversations WHERE store = $1 AND id = $2"
    " UNION ALL SELECT c.id, c.parent_id, c.record, chain.depth + 1"
    f" FROM chain JOIN {SCHEMA}.conversations c ON c.store = $1 AND c.id = chain.parent_id"
    # A cycle can only come from damaged data; the depth bound ends it.
    " WHERE chain.depth < 10000)"
    " SELECT record FROM chain"
)
_DOCUMENT = (
    "SELECT 0 AS part, NULL::bigint AS seq, NULL::text AS kind, NULL::bigint AS version, record"
    f" FROM {SCHEMA}.documents WHERE store = $1 AND id = $2"
    " UNION ALL SELECT 1, seq, kind, version, content"
    f" FROM {SCHEMA}.document_revisions WHERE store = $1 AND document_id = $2 AND seq <= $3"
    f" AND seq >= (SELECT max(seq) FROM {SCHEMA}.document_revisions"
    " WHERE store = $1 AND document_id = $2 AND kind = 'base' AND seq <= $3)"
    " ORDER BY part, seq"
)


def _stored_entry(row: Any) -> StoredEntry:
    return StoredEntry(EntryRecord.from_json(loads(row["record"])), row["seq"])


def _sorted_statuses(status: str | Sequence[str] | None) -> list[str] | None:
    statuses = status_filter(status)
    return None if statuses is None else sorted(statuses)


class Reads:
    """The reads of one store; every method takes the store's connection first.

    Args:
        store: The store's ID (``$1`` of every query).
    """

    def __init__(self, store: int) -> None:
        self.store = store
        self.conversations: dict[int, ConversationRecord] = {}
        """Conversations read or committed (immutable once written)."""

    def _keep(self, record: ConversationRecord) -> None:
        if len(self.conversations) >= LIMIT and record.id not in self.conversations:
            self.conversations.clear()
        self.conversations[record.id] = record

    def learn(self, batch: PreparedBatch) -> None:
        """Keep the conversations of a batch whose commit succeeded."""
        for record, _ in batch.conversations:
            self._keep(record)

    async def _need_conversation(
        self, conn: asyncpg.Connection, conversation_id: int
    ) -> ConversationRecord:
        """Return a committed conversation, with its fork chain kept for ``_parent_of``.

        Raises:
            StorageRejected: ``Unknown conversation <n>``.
        """
        known = self.conversations.get(conversation_id)
        if known is not None and self._chain_known(known):
            return known
        if not fits(conversation_id):
            raise unknown_conversation(conversation_id)
        rows = await conn.fetch(_CHAIN, self.store, conversation_id)
        if not rows:
            raise unknown_conversation(conversation_id)
        # REMINDER: the whole chain is kept together (emptying the map halfway would
        # make a fork read as a root); the map may pass its bound by one chain.
        if len(self.conversations) + len(rows) > LIMIT:
            self.conversations.clear()
        for row in rows:
            record = ConversationRecord.from_json(loads(row["record"]))
            self.conversations[record.id] = record
        return self.conversations[conversation_id]

    def _chain_known(self, record: ConversationRecord) -> bool:
        seen = {record.id}
        while record.parent is not None:
            parent = self.conversations.get(record.parent.conversation_id)
            if parent is None:
                return False
            if parent.id in seen:
                return True
            seen.add(parent.id)
            record = parent
        return True

    def _parent_of(self, conversation_id: int) -> ForkPoint | None:
        record = self.conversations.get(conversation_id)
        return None if record is None else record.parent

    # -- keyed lookups ----------------------------------------------------------

    async def conversation(
        self, conn: asyncpg.Connection, conversation_id: int
    ) -> ConversationRecord | None:
        """Return a conversation by ID."""
        known = self.conversations.get(conversation_id)
        if known is not None:
            return known
        if not fits(conversation_id):
            return None
        text = await conn.fetchval(
            f"SELECT record FROM {SCHEMA}.conversations WHERE store = $1 AND id = $2",
            self.store,
            conversation_id,
        )
        if text is None:
            return None
        record = ConversationRecord.from_json(loads(text))
        self._keep(record)
        return record

    async def entry(
        self, conn: asyncpg.Connection, entry_id: int, conversation_id: int | None
    ) -> StoredEntry | None:
        """Return an entry, or only if it is visible from ``conversation_id``."""
        if conversation_id is not None:
            await self._need_conversation(conn, conversation_id)
        if not fits(entry_id):
            return None
        row = await conn.fetchrow(
            f"SELECT conversation_id, seq, record FROM {SCHEMA}.entries"
            " WHERE store = $1 AND id = $2",
            self.store,
            entry_id,
        )
        if row is None:
            return None
        if conversation_id is not None:
            for member, cap in visible_chain(conversation_id, self._parent_of):
                if member == row["conversation_id"]:
                    if cap is not None and entry_id > cap:
                        return None
                    break
            else:
                return None
        return _stored_entry(row)

    async def _record(self, conn: asyncpg.Connection, table: str, record_id: int) -> Any:
        if not fits(record_id):
            return None
        text = await conn.fetchval(
            f"SELECT record FROM {SCHEMA}.{table} WHERE store = $1 AND id = $2",
            self.store,
            record_id,
        )
        return None if text is None else loads(text)

    async def task(self, conn: asyncpg.Connection, task_id: int) -> TaskRecord | None:
        """Return a task by ID."""
        data = await self._record(conn, "tasks", task_id)
        return None if data is None else TaskRecord.from_json(data)

    async def submission(
        self, conn: asyncpg.Connection, submission_id: int
    ) -> SubmissionRecord | None:
        """Return a submission by ID."""
        data = await self._record(conn, "submissions", submission_id)
        return None if data is None else SubmissionRecord.from_json(data)

    async def submission_by_request(
        self, conn: asyncpg.Connection, conversation_id: int, request_id: str
    ) -> SubmissionRecord | None:
        """Return the submission with this request ID in this conversation."""
        if not fits(conversation_id):
            return None
        text = await conn.fetchval(
            f"SELECT record FROM {SCHEMA}.submissions WHERE store = $1"
            " AND conversation_id = $2 AND request_id = $3 LIMIT 1",
            self.store,
            conversation_id,
            column_text(request_id),
        )
        return None if text is None else SubmissionRecord.from_json(loads(text))

    # -- scans ---------------------------------------------------------------------

    async def _scan(
        self,
        conn: asyncpg.Connection,
        scan: str,
        where: Where,
        order: ScanOrder | None,
        limit: int,
        cursor: JsonObject | None,
        build: Callable[[Any], T],
    ) -> Page[T]:
        """Return one page of a table by ID; validation order matches MemoryStorage."""
        check_limit(limit)
        check_order(order)
        after, order = read_cursor(cursor, scan, order, "asc")
        if after is not None:
            where.add("id > {}" if order == "asc" else "id < {}", min(after, MAX_ID))
        direction = "ASC" if order == "asc" else "DESC"
        rows = await conn.fetch(
            f"SELECT id, record FROM {SCHEMA}.{scan} WHERE {where.sql()}"
            f" ORDER BY id {direction} LIMIT {where.bind(limit + 1)}",
            *where.params,
        )
        items = [build(loads(row["record"])) for row in rows[:limit]]
        more = len(rows) > limit
        return Page(items, make_cursor(scan, rows[limit - 1]["id"], order) if more else None)

    async def scan_conversations(
        self,
        conn: asyncpg.Connection,
        owner_conversation_id: int | None,
        owner_task_id: int | None,
        order: ScanOrder | None,
        limit: int,
        cursor: JsonObject | None,
    ) -> Page[ConversationRecord]:
        """Scan conversations by ID, optionally by owner."""
        where = Where(self.store)
        where.equals_if("owner_conversation_id", owner_conversation_id)
        where.equals_if("owner_task_id", owner_task_id)
        build = ConversationRecord.from_json
        return await self._scan(conn, "conversations", where, order, limit, cursor, build)

    async def scan_tasks(
        self,
        conn: asyncpg.Connection,
        filters: TaskFilters,
        order: ScanOrder | None,
        limit: int,
        cursor: JsonObject | None,
    ) -> Page[TaskRecord]:
        """Scan tasks by ID; every given filter must match."""
        conversation_id, kind, status, abort_requested, background = filters
        where = Where(self.store)
        where.equals_if("conversation_id", conversation_id)
        where.equals_if("kind", kind)
        where.among("status", _sorted_statuses(status))
        for column, flag in (("abort_requested", abort_requested), ("background", background)):
            where.equals_if(column, None if flag is None else bool(flag))
        return await self._scan(conn, "tasks", where, order, limit, cursor, TaskRecord.from_json)

    async def scan_submissions(
        self,
        conn: asyncpg.Connection,
        conversation_id: int | None,
        status: str | Sequence[str] | None,
        order: ScanOrder | None,
        limit: int,
        cursor: JsonObject | None,
    ) -> Page[SubmissionRecord]:
        """Scan submissions by ID; every given filter must match."""
        where = Where(self.store)
        where.equals_if("conversation_id", conversation_id)
        where.among("status", _sorted_statuses(status))
        build = SubmissionRecord.from_json
        return await self._scan(conn, "submissions", where, order, limit, cursor, build)

    async def scan_documents(
        self,
        conn: asyncpg.Connection,
        scope: ScopeRef,
        at: int | None,
        kind: str | None,
        limit: int,
        cursor: JsonObject | None,
    ) -> Page[DocumentRecord]:
        """Scan the documents of exactly this scope alive at ``at`` (``None``: now)."""
        where = Where(self.store)
        where.equals("scope_kind", scope.kind)
        where.equals("scope_id", scope.id)
        where.equals_if("kind", kind)
        _alive(where, at)
        build = DocumentRecord.from_json
        return await self._scan(conn, "documents", where, "asc", limit, cursor, build)

    async def _chain_rows(
        self,
        conn: asyncpg.Connection,
        conversation_id: int,
        low: int | None,
        high: int | None,
        descending: bool,
        heads_only: bool,
        limit: int,
    ) -> list[Any]:
        """Return up to ``limit`` visible entries with IDs in ``[low, high]``, in order.

        Raises:
            StorageRejected: ``Unknown conversation <n>``.
        """
        await self._need_conversation(conn, conversation_id)
        direction = "DESC" if descending else "ASC"
        head = " AND head" if heads_only else ""
        where = Where(self.store)
        parts: list[str] = []
        for member, cap in visible_chain(conversation_id, self._parent_of):
            top = MAX_ID if high is None else min(high, MAX_ID)
            if cap is not None:
                top = min(top, cap)
            bottom = 0 if low is None else max(low, 0)
            if bottom > top:
                continue
            parts.append(
                f"(SELECT id, seq, record FROM {SCHEMA}.entries WHERE store = $1"
                f" AND conversation_id = {where.bind(member)}"
                f" AND id BETWEEN {where.bind(bottom)} AND {where.bind(top)}{head}"
                f" ORDER BY id {direction} LIMIT {where.bind(limit)})"
            )
        if not parts:
            return []
        sql = parts[0] if len(parts) == 1 else " UNION ALL ".join(parts)
        if len(parts) > 1:
            sql += f" ORDER BY id {direction} LIMIT {where.bind(limit)}"
        return list(await conn.fetch(sql, *where.params))

    async def scan_entries(
        self,
        conn: asyncpg.Connection,
        conversation_id: int,
        min_entry_id: int | None,
        max_entry_id: int | None,
        order: ScanOrder | None,
        limit: int,
        cursor: JsonObject | None,
    ) -> Page[StoredEntry]:
        """Scan the visible history of a conversation (fork-aware)."""
        check_limit(limit)
        check_order(order)
        after, order = read_cursor(cursor, "entries", order, "desc")
        descending = order == "desc"
        low, high = min_entry_id, max_entry_id
        if after is not None and descending:
            high = after - 1 if high is None else min(high, after - 1)
        elif after is not None:
            low = after + 1 if low is None else max(low, after + 1)
        rows = await self._chain_rows(
            conn, conversation_id, low, high, descending, False, limit + 1
        )
        items = [_stored_entry(row) for row in rows[:limit]]
        more = len(rows) > limit
        return Page(items, make_cursor("entries", rows[limit - 1]["id"], order) if more else None)

    async def find_latest_head_marker(
        self, conn: asyncpg.Connection, conversation_id: int, at_or_before: int | None
    ) -> StoredEntry | None:
        """Return the newest visible head marker at or before an entry ID."""
        rows = await self._chain_rows(conn, conversation_id, None, at_or_before, True, True, 1)
        return _stored_entry(rows[0]) if rows else None

    # -- documents --------------------------------------------------------------------

    async def find_document(
        self, conn: asyncpg.Connection, address: DocAddress, at: int | None
    ) -> DocumentRecord | None:
        """Return the incarnation at an address alive at ``at`` (``None``: the live one)."""
        where = Where(self.store)
        where.equals("kind", address.kind)
        where.equals("scope_kind", address.scope.kind)
        where.equals("scope_id", address.scope.id)
        where.equals("key", address.key)
        _alive(where, at)
        text = await conn.fetchval(
            f"SELECT record FROM {SCHEMA}.documents WHERE {where.sql()}"
            " ORDER BY created_at DESC LIMIT 1",
            *where.params,
        )
        return None if text is None else DocumentRecord.from_json(loads(text))

    async def document(
        self, conn: asyncpg.Connection, document_id: int, at: int | None
    ) -> DocumentRead | None:
        """Return a document's content at ``at`` (``None``: now), or ``None`` if not alive."""
        if not fits(document_id):
            return None
        point = MAX_ID if at is None else max(min(at, MAX_ID), -1)
        rows = await conn.fetch(_DOCUMENT, self.store, document_id, point)
        if not rows or rows[0]["part"] != 0:
            return None
        record = DocumentRecord.from_json(loads(rows[0]["record"]))
        if at is not None and record.current_only:
            raise no_history(record)
        alive = record.retired_at is None if at is None else record.alive_at(at)
        if not alive:
            return None
        revisions = [(row["kind"], row["version"], row["record"]) for row in rows[1:]]
        version, value, deltas = content_of(document_id, revisions)
        return DocumentRead(record, version, value, deltas)


def _alive(where: Where, at: int | None) -> None:
    if at is None:
        where.clauses.append("retired_at IS NULL")
    else:
        point = max(min(at, MAX_ID), -1)
        where.add("created_at <= {}", point)
        where.add("(retired_at IS NULL OR retired_at > {})", point)
