"""The synchronous core of the SQLite store: committed view, batch writes, keyed lookups.

Everything in this module runs on aiosqlite's worker thread, called from one
function per hop (see ``sqlite``), never from the event loop. ``Tables`` is the
``CommittedView`` that ``prepare_batch`` checks a batch against (R1, R18); it
writes a ``PreparedBatch`` inside the caller's transaction, including the
reclamation of current-only revisions (R129); and it answers keyed lookups and
document content with the same results as ``MemoryStorage`` (R128). Records are
parsed from their JSON text on every read, so every result is a detached copy.
Scans live in ``_scans``.

Strings are kept losslessly, lone surrogates included (protocol, Strings): the
record text escapes them (``json_ops.dumps``), and an indexed text column (task
kinds, request IDs, document kinds and keys) binds a string that has no UTF-8
form as the BLOB of its ``surrogatepass`` bytes (``sql_text``). Other strings
bind as TEXT, as they always did, so stores written before this need no
migration; a BLOB never equals a TEXT in SQLite, so the two cannot collide.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from typing import Any

from pi_durable_tui.storage._batch import PreparedBatch
from pi_durable_tui.storage._scans import unknown_conversation, visible_chain
from pi_durable_tui.storage.errors import StorageCorrupted
from pi_durable_tui.storage.json_ops import InvalidOperation, JsonObject, Op, apply_ops, loads
from pi_durable_tui.storage.records import (
    ConversationRecord,
    DocAddress,
    DocumentRecord,
    EntryRecord,
    ForkPoint,
    RecordKind,
    ScopeRef,
    StoredEntry,
    SubmissionRecord,
    TaskRecord,
)

_INT64 = range(-(2**63), 2**63)


def fits(value: object) -> bool:
    """Whether a key can be bound as an SQLite integer.

    Keys outside it can match nothing; checking keeps such lookups ``None`` (as in
    MemoryStorage) instead of an ``OverflowError`` inside a transaction.
    """
    return isinstance(value, int) and value in _INT64


_SURROGATE = re.compile("[\ud800-\udfff]")


def sql_text(value: Any) -> Any:
    """Return a string as an indexed text column binds it (see the module docstring).

    Anything but a string is returned as it is.
    """
    if not isinstance(value, str) or value.isascii() or _SURROGATE.search(value) is None:
        return value
    return value.encode("utf-8", "surrogatepass")


def from_sql_text(value: Any) -> Any:
    """Return the string an indexed text column holds (the inverse of ``sql_text``)."""
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


def _scope_columns(scope: ScopeRef) -> tuple[str, int | None]:
    return scope.kind, scope.id


def _bounded(cache: dict[int, Any]) -> dict[int, Any]:
    """``cache``, emptied first when full: a bound, not an LRU (a refill costs a query)."""
    if len(cache) >= _KIND_CACHE:
        cache.clear()
    return cache


def stored_entry(row: tuple[int, int, str]) -> StoredEntry:
    """Build a stored entry from an ``(id, seq, record)`` row."""
    return StoredEntry(EntryRecord.from_json(loads(row[2])), row[1])


_KIND_CACHE = 4096
_ID_KIND = " UNION ALL ".join(
    f"SELECT '{kind}' FROM {table} WHERE id = ?1"
    for kind, table in (
        ("conversation", "conversations"),
        ("entry", "entries"),
        ("task", "tasks"),
        ("submission", "submissions"),
        ("document", "documents"),
    )
)
"""One primary-key lookup per record table: at most one of them holds an ID."""


_CHANGED = {
    (table, column): f"UPDATE {table} SET {column} = ?1 WHERE id = ?2 AND {column} IS NOT ?1"
    for table, column in (
        ("tasks", "status"),
        ("tasks", "kind"),
        ("submissions", "status"),
        ("submissions", "request_id"),
    )
}
"""Set an indexed column of a row only where it differs: a row that already holds the
value is not written, so the column's index pages stay clean (``Tables.write``)."""


_PAGE_BYTES = 1500
"""Bytes of rows that fill about one page: a 4 KiB page is often half full after a split,
and an index row is written for every table row."""
_ROW_BYTES = 50
"""Bytes each row costs besides its JSON text: keys, columns, its index rows."""


def frames_written(batch: PreparedBatch) -> int:
    """Estimate the pages a batch dirties: one per table and index it writes, more for rows.

    SQLite does not report the WAL frames a commit writes; this estimate is only
    what ``_checkpoints`` counts to decide when to checkpoint, so a rough one does
    (tests/storage/test_sqlite_checkpoints.py keeps it within a factor of two). A
    one-entry commit writes two: the entries leaf and its index leaf.
    """
    groups = (
        batch.entries,
        batch.tasks,
        batch.submissions,
        batch.conversations,
        batch.new_documents,
        batch.retired,
    )
    tables = (
        (2 if batch.entries else 0)
        + (2 if batch.tasks else 0)
        + (2 if batch.submissions else 0)
        + (1 if batch.conversations else 0)
        + (2 if batch.new_documents or batch.retired else 0)
        + (1 if batch.revisions else 0)
    )
    rows = sum(len(group) for group in groups) + len(batch.revisions)
    size = sum(len(text) for group in groups for _, text in group)
    size += sum(len(revision.text) for revision in batch.revisions)
    return tables + (size + _ROW_BYTES * rows) // _PAGE_BYTES


def _top_entry(batch: PreparedBatch) -> int:
    """Return the highest entry ID a batch stores (0: none)."""
    return max((entry.id for entry, _ in batch.entries), default=0)


class Tables:
    """Synchronous access to the store's tables through one sqlite3 connection.

    REMINDER: only ever call it on the connection's own thread (aiosqlite's worker);
    sqlite3's ``check_same_thread`` turns a mistake into ``ProgrammingError``.
    """

    def __init__(self, conn: sqlite3.Connection, newest_entry: int = 0) -> None:
        self.conn = conn
        self.committed_floor = 0
        """Every committed ID is below it (the stored ``next_id``); set before each commit."""
        self.newest_entry = newest_entry
        """The highest committed entry ID; its row carries the seq of its commit."""
        self._kinds: dict[int, RecordKind] = {}
        """Kinds of committed IDs already looked up or written (IDs never change kind)."""
        # REMINDER: these caches hold what this connection committed or read, which
        # stays true because this process holds the store's writer lock and every write
        # goes through ``write``, learned in ``committed`` only once COMMIT succeeded.
        self._task_conversations: dict[int, int] = {}
        """Conversation of each committed task (a task never moves, R-1.3)."""
        self._documents: dict[int, DocumentRecord] = {}
        """Committed incarnations (frozen records; one changes only when retired)."""
        self._versions: dict[int, int] = {}
        """Version of each live document's newest revision."""

    def _never_committed(self, record_id: int) -> bool:
        # Minted IDs lie above every committed ID, so a fresh ID needs no query: this
        # spares most commits one SELECT per new record on the worker thread.
        return not fits(record_id) or (
            self.committed_floor > 0 and record_id >= self.committed_floor
        )

    def _one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.conn.execute(sql, params).fetchone()

    # -- CommittedView (used by prepare_batch inside the commit transaction) --

    def id_kind(self, record_id: int) -> RecordKind | None:
        """Return the kind that owns an ID: the record table whose key it is."""
        if self._never_committed(record_id):
            return None
        kind = self._kinds.get(record_id)
        if kind is None:
            row = self._one(_ID_KIND, (record_id,))
            if row is None:
                return None
            kind = row[0]
            self._remember(record_id, kind)
        return kind

    def committed(self, batch: PreparedBatch) -> None:
        """Learn the IDs of a batch whose COMMIT succeeded (called on the worker thread)."""
        self.newest_entry = max(self.newest_entry, _top_entry(batch))
        for record_id, kind in batch.new_ids.items():
            # Conversations are named by every append, tasks replaced at every step.
            if kind in ("conversation", "task"):
                self._remember(record_id, kind)
        # A tool round changes two documents and rewrites two tasks per commit: each
        # asked the database for its record, its version or its conversation before
        # (issue 14).
        for task, _text in batch.tasks:
            _bounded(self._task_conversations)[task.id] = task.conversation_id
        for document, _text in (*batch.new_documents, *batch.retired):
            _bounded(self._documents)[document.id] = document
        for revision in batch.revisions:
            _bounded(self._versions)[revision.document_id] = revision.version
        for document_id, everything in batch.reclaim.items():
            if everything:  # retired: no revision is left
                self._versions.pop(document_id, None)

    def _remember(self, record_id: int, kind: RecordKind) -> None:
        _bounded(self._kinds)[record_id] = kind

    def task_conversation(self, task_id: int) -> int | None:
        """Return the conversation of a committed task."""
        if self._never_committed(task_id):
            return None
        known = self._task_conversations.get(task_id)
        if known is not None:
            return known
        row = self._one("SELECT conversation_id FROM tasks WHERE id = ?", (task_id,))
        if row is None:
            return None
        _bounded(self._task_conversations)[task_id] = row[0]
        return int(row[0])

    def submission_identity(self, submission_id: int) -> tuple[int, str, str | None] | None:
        """Return the conversation, type and request ID of a committed submission."""
        if self._never_committed(submission_id):
            return None
        row = self._one(
            "SELECT conversation_id, type, request_id FROM submissions WHERE id = ?",
            (submission_id,),
        )
        return None if row is None else (row[0], row[1], from_sql_text(row[2]))

    def submission_for_request(self, conversation_id: int, request_id: str) -> int | None:
        """Return the ID of the submission with this request ID."""
        if not fits(conversation_id):
            return None
        row = self._one(
            "SELECT id FROM submissions WHERE conversation_id = ? AND request_id = ? LIMIT 1",
            (conversation_id, sql_text(request_id)),
        )
        return None if row is None else row[0]

    def document_record(self, document_id: int) -> DocumentRecord | None:
        """Return a document incarnation."""
        if not fits(document_id):
            return None
        known = self._documents.get(document_id)
        if known is not None:
            return known
        row = self._one("SELECT record FROM documents WHERE id = ?", (document_id,))
        if row is None:
            return None
        record = DocumentRecord.from_json(loads(row[0]))
        _bounded(self._documents)[document_id] = record
        return record

    def live_document(self, address: DocAddress) -> DocumentRecord | None:
        """Return the live incarnation at an address."""
        scope_kind, scope_id = _scope_columns(address.scope)
        if scope_id is not None and not fits(scope_id):
            return None
        row = self._one(
            "SELECT record FROM documents WHERE kind = ? AND scope_kind = ? AND scope_id IS ?"
            " AND key IS ? AND retired_at IS NULL",
            (sql_text(address.kind), sql_text(scope_kind), scope_id, sql_text(address.key)),
        )
        return None if row is None else DocumentRecord.from_json(loads(row[0]))

    def document_version(self, document_id: int) -> int:
        """Return the version of a document's newest revision."""
        known = self._versions.get(document_id)
        if known is not None:
            return known
        row = self._one(
            "SELECT version FROM document_revisions WHERE document_id = ?"
            " ORDER BY seq DESC LIMIT 1",
            (document_id,),
        )
        if row is None:
            raise StorageCorrupted(f"Document {document_id} is missing a required base")
        version = int(row[0])
        _bounded(self._versions)[document_id] = version
        return version

    def document_content(self, document_id: int, at: int) -> tuple[int, JsonObject]:
        """Return a document's version and value at ``at``."""
        version, value, _ = self.content(document_id, at)
        return version, value

    # -- writes -------------------------------------------------------------

    def write(self, batch: PreparedBatch, next_id: int) -> int:
        """Write a prepared batch inside the caller's open transaction.

        Args:
            batch: The checked batch.
            next_id: The mint floor to record with the batch's seq, in the metadata
                row unless the batch's newest entry row records both (``_schema``).

        Returns:
            About how many pages the batch dirtied, so WAL frames it will write
            (``frames_written``).
        """
        execute, many, seq = self.conn.execute, self.conn.executemany, batch.seq
        for conversation, text in batch.conversations:
            parent, owner = conversation.parent, conversation.owner
            execute(
                "INSERT INTO conversations (id, parent_id, parent_at, owner_conversation_id,"
                " owner_task_id, record) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    conversation.id,
                    None if parent is None else parent.conversation_id,
                    None if parent is None else parent.at,
                    None if owner is None else owner.conversation_id,
                    None if owner is None else owner.task_id,
                    text,
                ),
            )
        if batch.entries:
            many(
                "INSERT INTO entries (id, conversation_id, seq, head, record)"
                " VALUES (?, ?, ?, ?, ?)",
                [
                    (e.id, e.conversation_id, seq, None if e.head is None else 1, text)
                    for e, text in batch.entries
                ],
            )
        # REMINDER: an upsert rewrites every index on a column its SET names, even to
        # the same value (one more WAL frame each), so it sets only the unindexed
        # columns and each indexed one is set apart, where it changed (``_CHANGED``).
        for task, text in batch.tasks:
            kind, status = sql_text(task.kind), task.state.get("status")
            execute(
                "INSERT INTO tasks (id, conversation_id, kind, status, abort_requested,"
                " background, record) VALUES (?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (id) DO UPDATE SET abort_requested = excluded.abort_requested,"
                " background = excluded.background, record = excluded.record",
                (
                    task.id,
                    task.conversation_id,
                    kind,
                    status,
                    bool(task.abort_requested),
                    bool(task.background),
                    text,
                ),
            )
            if batch.new_ids.get(task.id) != "task":  # a new row holds them already
                execute(_CHANGED["tasks", "status"], (status, task.id))
                execute(_CHANGED["tasks", "kind"], (kind, task.id))
        for submission, text in batch.submissions:
            request_id = sql_text(submission.request_id)
            execute(
                "INSERT INTO submissions (id, conversation_id, type, status, request_id, record)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET"
                " record = excluded.record",
                (
                    submission.id,
                    submission.conversation_id,
                    submission.type,
                    submission.status,
                    request_id,
                    text,
                ),
            )
            if batch.new_ids.get(submission.id) != "submission":
                execute(_CHANGED["submissions", "status"], (submission.status, submission.id))
                execute(_CHANGED["submissions", "request_id"], (request_id, submission.id))
        for document, text in batch.new_documents:
            scope_kind, scope_id = _scope_columns(ScopeRef.of(document.scope))
            execute(
                "INSERT INTO documents (id, kind, scope_kind, scope_id, key, created_at,"
                " retired_at, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    document.id,
                    sql_text(document.kind),
                    scope_kind,
                    scope_id,
                    sql_text(document.key),
                    document.created_at,
                    document.retired_at,
                    text,
                ),
            )
        for document, text in batch.retired:
            execute(
                "UPDATE documents SET retired_at = ?, record = ? WHERE id = ?",
                (document.retired_at, text, document.id),
            )
        if batch.revisions:
            many(
                "INSERT INTO document_revisions (document_id, seq, kind, version, content)"
                " VALUES (?, ?, ?, ?, ?)",
                [(r.document_id, seq, r.kind, r.version, r.text) for r in batch.revisions],
            )
        # R129: a base or a retirement of a current-only document releases its older
        # revisions; SQLite reuses the freed pages, so no VACUUM is ever needed.
        for document_id, everything in batch.reclaim.items():
            if everything:
                execute("DELETE FROM document_revisions WHERE document_id = ?", (document_id,))
            else:
                execute(
                    "DELETE FROM document_revisions WHERE document_id = ? AND seq < ?",
                    (document_id, seq),
                )
        # REMINDER: an entry above every stored one becomes the newest entry row, which
        # tells the next open this seq and bounds every ID with the other tables' keys
        # (``_schema.read_metadata``): the metadata row, one more page in the WAL, is
        # written only when no such entry does.
        metadata = _top_entry(batch) <= self.newest_entry
        if metadata:
            execute(
                "UPDATE durable_metadata SET next_seq = ?, next_id = ? WHERE id = 1",
                (seq + 1, next_id),
            )
        return frames_written(batch) + metadata

    # -- keyed reads ----------------------------------------------------------

    def conversation(self, conversation_id: int) -> ConversationRecord | None:
        """Return a conversation by ID."""
        if not fits(conversation_id):
            return None
        row = self._one("SELECT record FROM conversations WHERE id = ?", (conversation_id,))
        return None if row is None else ConversationRecord.from_json(loads(row[0]))

    def parent_of(self, conversation_id: int) -> ForkPoint | None:
        """Return a conversation's fork point."""
        row = self._one(
            "SELECT parent_id, parent_at FROM conversations WHERE id = ?", (conversation_id,)
        )
        return None if row is None or row[0] is None else ForkPoint(row[0], row[1])

    def need_conversation(self, conversation_id: int) -> None:
        """Refuse a read in a conversation that was never committed.

        Raises:
            StorageRejected: ``Unknown conversation <n>``.
        """
        if not fits(conversation_id) or not self._one(
            "SELECT 1 FROM conversations WHERE id = ?", (conversation_id,)
        ):
            raise unknown_conversation(conversation_id)

    def entry(self, entry_id: int, conversation_id: int | None) -> StoredEntry | None:
        """Return an entry, or only if it is visible from ``conversation_id``."""
        if conversation_id is not None:
            self.need_conversation(conversation_id)
        if not fits(entry_id):
            return None
        row = self._one(
            "SELECT conversation_id, seq, record FROM entries WHERE id = ?", (entry_id,)
        )
        if row is None:
            return None
        if conversation_id is not None:
            for member, cap in visible_chain(conversation_id, self.parent_of):
                if member == row[0]:
                    if cap is not None and entry_id > cap:
                        return None
                    break
            else:
                return None
        return StoredEntry(EntryRecord.from_json(loads(row[2])), row[1])

    def task(self, task_id: int) -> TaskRecord | None:
        """Return a task by ID."""
        if not fits(task_id):
            return None
        row = self._one("SELECT record FROM tasks WHERE id = ?", (task_id,))
        return None if row is None else TaskRecord.from_json(loads(row[0]))

    def submission(self, submission_id: int) -> SubmissionRecord | None:
        """Return a submission by ID."""
        if not fits(submission_id):
            return None
        row = self._one("SELECT record FROM submissions WHERE id = ?", (submission_id,))
        return None if row is None else SubmissionRecord.from_json(loads(row[0]))

    def submission_by_request(
        self, conversation_id: int, request_id: str
    ) -> SubmissionRecord | None:
        """Return the submission with this request ID in this conversation."""
        submission_id = self.submission_for_request(conversation_id, request_id)
        return None if submission_id is None else self.submission(submission_id)

    # -- document content -------------------------------------------------------

    def content(self, document_id: int, at: int) -> tuple[int, JsonObject, int]:
        """Return version, value and delta count of a document at ``at``.

        Raises:
            StorageCorrupted: No base at or before ``at`` survives.
        """
        rows = self.conn.execute(
            "SELECT kind, version, content FROM document_revisions"
            " WHERE document_id = ?1 AND seq <= ?2 AND seq >= ("
            "SELECT max(seq) FROM document_revisions"
            " WHERE document_id = ?1 AND kind = 'base' AND seq <= ?2) ORDER BY seq",
            (document_id, at),
        ).fetchall()
        if not rows or rows[0][0] != "base":
            raise StorageCorrupted(f"Document {document_id} is missing a required base")
        ops: list[Op] = []
        for _, _, text in rows[1:]:
            ops.extend(loads(text))  # type: ignore[arg-type]
        try:
            value = apply_ops(loads(rows[0][2]), ops)
        except InvalidOperation as error:
            # Storage checks a delta's shape, not that it fits the value, so a delta
            # that does not apply is damage (as in MemoryStorage).
            raise StorageCorrupted(
                f"Document {document_id} has a delta that does not apply: {error}"
            ) from None
        if not isinstance(value, dict):
            raise StorageCorrupted(f"Document {document_id} content is not an object")
        return rows[-1][1], value, len(rows) - 1
