"""``MemoryStorage``: the reference semantics of the Storage contract (R128).

It keeps every record as JSON text and parses it on every read, exactly like the
persistent backends, so code that mutates what it read or what it committed is
caught here first. Nothing survives the process; tests of the kernel run on it.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pi_durable_tui.storage._backend_base import StorageBackend, TaskFilters
from pi_durable_tui.storage._batch import PreparedBatch, RevisionKind, prepare_batch
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
from pi_durable_tui.storage.errors import StorageClosed, StorageCorrupted
from pi_durable_tui.storage.json_ops import InvalidOperation, JsonObject, Op, apply_ops, loads
from pi_durable_tui.storage.protocol import DEFAULT_PAGE, ScanOrder
from pi_durable_tui.storage.records import (
    FIRST_MINTED_ID,
    ConversationRecord,
    DocAddress,
    DocumentRead,
    DocumentRecord,
    EntryRecord,
    ForkPoint,
    Page,
    RecordKind,
    ScopeRef,
    StoredEntry,
    SubmissionRecord,
    SubmissionStatus,
    TaskRecord,
)
from pi_durable_tui.storage.writes import Write

T = TypeVar("T")


@dataclass(slots=True)
class _Revision:
    seq: int
    kind: RevisionKind
    version: int
    text: str


@dataclass(slots=True)
class _Entry:
    text: str
    conversation_id: int
    seq: int


class MemoryStorage(StorageBackend):
    """A Storage kept in memory; the reference every other backend is compared with."""

    def __init__(self) -> None:
        self._seq = 0
        self._next_id = FIRST_MINTED_ID
        self._closed = False
        self._ids: dict[int, RecordKind] = {}
        self._conversations: dict[int, ConversationRecord] = {}
        self._entries: dict[int, _Entry] = {}
        self._entry_ids: dict[int, list[int]] = {}
        self._head_ids: dict[int, list[int]] = {}
        self._tasks: dict[int, str] = {}
        self._submissions: dict[int, str] = {}
        self._requests: dict[tuple[int, str], int] = {}
        self._documents: dict[int, DocumentRecord] = {}
        self._live: dict[DocAddress, int] = {}
        self._incarnations: dict[DocAddress, list[int]] = {}
        self._revisions: dict[int, list[_Revision]] = {}

    # -- the CommittedView used by batch preparation ------------------------

    def id_kind(self, record_id: int) -> RecordKind | None:
        """Return the kind that owns an ID."""
        return self._ids.get(record_id)

    def task_conversation(self, task_id: int) -> int | None:
        """Return the conversation of a committed task."""
        text = self._tasks.get(task_id)
        return None if text is None else TaskRecord.from_json(loads(text)).conversation_id

    def submission_identity(self, submission_id: int) -> tuple[int, str, str | None] | None:
        """Return the conversation, type and request ID of a committed submission."""
        text = self._submissions.get(submission_id)
        if text is None:
            return None
        record = SubmissionRecord.from_json(loads(text))
        return record.conversation_id, record.type, record.request_id

    def submission_for_request(self, conversation_id: int, request_id: str) -> int | None:
        """Return the ID of the submission with this request ID."""
        return self._requests.get((conversation_id, request_id))

    def document_record(self, document_id: int) -> DocumentRecord | None:
        """Return a document incarnation."""
        return self._documents.get(document_id)

    def live_document(self, address: DocAddress) -> DocumentRecord | None:
        """Return the live incarnation at an address."""
        document_id = self._live.get(address)
        return None if document_id is None else self._documents[document_id]

    def document_version(self, document_id: int) -> int:
        """Return the version of a document's newest revision."""
        return self._revisions[document_id][-1].version

    def document_content(self, document_id: int, at: int) -> tuple[int, JsonObject]:
        """Return a document's version and value at ``at``."""
        version, value, _ = self._content(document_id, at)
        return version, value

    # -- Storage ------------------------------------------------------------

    async def commit(self, writes: Sequence[Write]) -> int:
        """Store a batch atomically and return its sequence number."""
        self._check_open()
        batch = prepare_batch(writes, self, self._seq + 1)
        self._apply(batch)
        self._seq = batch.seq
        self._next_id = max(self._next_id, batch.max_id + 1)
        return batch.seq

    def _apply(self, batch: PreparedBatch) -> None:
        # REMINDER: preparation has already checked everything; nothing below may fail,
        # or the batch would be half-applied.
        self._ids.update(batch.new_ids)
        for conversation, _ in batch.conversations:
            self._conversations[conversation.id] = conversation
        for entry, text in batch.entries:
            self._entries[entry.id] = _Entry(text, entry.conversation_id, batch.seq)
            bisect.insort(self._entry_ids.setdefault(entry.conversation_id, []), entry.id)
            if entry.head is not None:
                bisect.insort(self._head_ids.setdefault(entry.conversation_id, []), entry.id)
        for task, text in batch.tasks:
            self._tasks[task.id] = text
        for submission, text in batch.submissions:
            old = self.submission_identity(submission.id)
            # A replacement may drop or change the request ID; the old key must then
            # stop finding this submission (unless another one claimed it meanwhile).
            if old is not None and old[2] is not None:
                key = (old[0], old[2])
                if self._requests.get(key) == submission.id:
                    del self._requests[key]
            self._submissions[submission.id] = text
            if submission.request_id is not None:
                self._requests[(submission.conversation_id, submission.request_id)] = submission.id
        for record, _ in (*batch.retired, *batch.new_documents):
            self._documents[record.id] = record
            address = record.address
            if record.retired_at is None:
                self._live[address] = record.id
            elif self._live.get(address) == record.id:
                del self._live[address]
        for record, _ in batch.new_documents:
            self._incarnations.setdefault(record.address, []).append(record.id)
        for revision in batch.revisions:
            self._revisions.setdefault(revision.document_id, []).append(
                _Revision(batch.seq, revision.kind, revision.version, revision.text)
            )
        for document_id, everything in batch.reclaim.items():
            revisions = self._revisions.get(document_id, [])
            self._revisions[document_id] = (
                [] if everything else [r for r in revisions if r.seq >= batch.seq]
            )

    async def conversation(self, conversation_id: int) -> ConversationRecord | None:
        """Return a conversation by ID."""
        self._check_open()
        return self._conversations.get(conversation_id)

    async def entry(self, entry_id: int, conversation_id: int | None = None) -> StoredEntry | None:
        """Return an entry by ID, optionally only if visible from a conversation."""
        self._check_open()
        if conversation_id is not None:
            self._need_conversation(conversation_id)
        stored = self._entries.get(entry_id)
        if stored is None:
            return None
        if conversation_id is not None and not self._visible(entry_id, stored, conversation_id):
            return None
        return StoredEntry(EntryRecord.from_json(loads(stored.text)), stored.seq)

    def _visible(self, entry_id: int, stored: _Entry, conversation_id: int) -> bool:
        for member, cap in visible_chain(conversation_id, self._parent_of):
            if member == stored.conversation_id:
                return cap is None or entry_id <= cap
        return False

    def _need_conversation(self, conversation_id: int) -> None:
        if conversation_id not in self._conversations:
            raise unknown_conversation(conversation_id)

    def _parent_of(self, conversation_id: int) -> ForkPoint | None:
        record = self._conversations.get(conversation_id)
        return None if record is None else record.parent

    async def task(self, task_id: int) -> TaskRecord | None:
        """Return a task by ID."""
        self._check_open()
        text = self._tasks.get(task_id)
        return None if text is None else TaskRecord.from_json(loads(text))

    async def submission(self, submission_id: int) -> SubmissionRecord | None:
        """Return a submission by ID."""
        self._check_open()
        text = self._submissions.get(submission_id)
        return None if text is None else SubmissionRecord.from_json(loads(text))

    async def submission_by_request(
        self, conversation_id: int, request_id: str
    ) -> SubmissionRecord | None:
        """Return the submission with this request ID in this conversation."""
        self._check_open()
        submission_id = self._requests.get((conversation_id, request_id))
        return None if submission_id is None else await self.submission(submission_id)

    async def scan_conversations(
        self,
        *,
        owner_conversation_id: int | None = None,
        owner_task_id: int | None = None,
        order: ScanOrder | None = None,
        limit: int = DEFAULT_PAGE,
        cursor: JsonObject | None = None,
    ) -> Page[ConversationRecord]:
        """Scan conversations by ID, optionally by owner."""
        self._check_open()

        def keep(record: ConversationRecord) -> bool:
            owner = record.owner
            if owner_conversation_id is not None and (
                owner is None or owner.conversation_id != owner_conversation_id
            ):
                return False
            return owner_task_id is None or (owner is not None and owner.task_id == owner_task_id)

        return _page(
            "conversations",
            lambda: sorted(self._conversations),
            order,
            cursor,
            limit,
            lambda i: self._conversations[i] if keep(self._conversations[i]) else None,
        )

    async def scan_entries(
        self,
        conversation_id: int,
        *,
        min_entry_id: int | None = None,
        max_entry_id: int | None = None,
        order: ScanOrder | None = None,
        limit: int = DEFAULT_PAGE,
        cursor: JsonObject | None = None,
    ) -> Page[StoredEntry]:
        """Scan the visible history of a conversation, newest first by default."""
        self._check_open()

        def ids() -> list[int]:
            self._need_conversation(conversation_id)
            return self._visible_ids(conversation_id, self._entry_ids, min_entry_id, max_entry_id)

        return _page("entries", ids, order, cursor, limit, self._stored_entry, "desc")

    def _stored_entry(self, entry_id: int) -> StoredEntry:
        stored = self._entries[entry_id]
        return StoredEntry(EntryRecord.from_json(loads(stored.text)), stored.seq)

    def _visible_ids(
        self,
        conversation_id: int,
        index: dict[int, list[int]],
        low: int | None,
        high: int | None,
    ) -> list[int]:
        result: list[int] = []
        for member, cap in visible_chain(conversation_id, self._parent_of):
            top = cap if high is None else (high if cap is None else min(cap, high))
            ids = index.get(member, [])
            start = 0 if low is None else bisect.bisect_left(ids, low)
            stop = len(ids) if top is None else bisect.bisect_right(ids, top)
            result.extend(ids[start:stop])
        result.sort()
        return result

    async def _scan_tasks(
        self, filters: TaskFilters, order: ScanOrder | None, limit: int, cursor: JsonObject | None
    ) -> Page[TaskRecord]:
        self._check_open()
        conversation_id, kind, status, abort_requested, background = filters
        statuses = status_filter(status)

        def keep(task_id: int) -> TaskRecord | None:
            record = TaskRecord.from_json(loads(self._tasks[task_id]))
            if (
                (conversation_id is not None and record.conversation_id != conversation_id)
                or (kind is not None and record.kind != kind)
                or (statuses is not None and record.status not in statuses)
                or (abort_requested is not None and record.abort_requested != abort_requested)
                or (background is not None and record.background != background)
            ):
                return None
            return record

        return _page("tasks", lambda: sorted(self._tasks), order, cursor, limit, keep)

    async def scan_submissions(
        self,
        *,
        conversation_id: int | None = None,
        status: SubmissionStatus | Sequence[SubmissionStatus] | None = None,
        order: ScanOrder | None = None,
        limit: int = DEFAULT_PAGE,
        cursor: JsonObject | None = None,
    ) -> Page[SubmissionRecord]:
        """Scan submissions by ID; every given filter must match."""
        self._check_open()
        statuses = status_filter(status)

        def keep(submission_id: int) -> SubmissionRecord | None:
            record = SubmissionRecord.from_json(loads(self._submissions[submission_id]))
            if conversation_id is not None and record.conversation_id != conversation_id:
                return None
            if statuses is not None and record.status not in statuses:
                return None
            return record

        return _page("submissions", lambda: sorted(self._submissions), order, cursor, limit, keep)

    async def scan_documents(
        self,
        scope: ScopeRef,
        *,
        at: int | None = None,
        kind: str | None = None,
        limit: int = DEFAULT_PAGE,
        cursor: JsonObject | None = None,
    ) -> Page[DocumentRecord]:
        """Scan the documents of exactly this scope alive at ``at``."""
        self._check_open()

        def keep(document_id: int) -> DocumentRecord | None:
            record = self._documents[document_id]
            if ScopeRef.of(record.scope) != scope or (kind is not None and record.kind != kind):
                return None
            return record if self._alive(record, at) else None

        return _page("documents", lambda: sorted(self._documents), "asc", cursor, limit, keep)

    def _alive(self, record: DocumentRecord, at: int | None) -> bool:
        return record.retired_at is None if at is None else record.alive_at(at)

    async def find_latest_head_marker(
        self, conversation_id: int, at_or_before: int | None = None
    ) -> StoredEntry | None:
        """Return the newest visible head marker at or before an entry ID."""
        self._check_open()
        self._need_conversation(conversation_id)
        ids = self._visible_ids(conversation_id, self._head_ids, None, at_or_before)
        return self._stored_entry(ids[-1]) if ids else None

    async def find_document(
        self, address: DocAddress, at: int | None = None
    ) -> DocumentRecord | None:
        """Return the incarnation at an address alive at ``at``."""
        self._check_open()
        if at is None:
            return self.live_document(address)
        for document_id in reversed(self._incarnations.get(address, [])):
            record = self._documents[document_id]
            if record.alive_at(at):
                return record
        return None

    async def document(self, document_id: int, at: int | None = None) -> DocumentRead | None:
        """Return a document's content at ``at``, or ``None`` if not alive then."""
        self._check_open()
        record = self._documents.get(document_id)
        if record is None:
            return None
        if at is not None and record.current_only:
            raise no_history(record)
        if not self._alive(record, at):
            return None
        version, value, deltas = self._content(document_id, self._seq if at is None else at)
        return DocumentRead(record, version, value, deltas)

    def _content(self, document_id: int, at: int) -> tuple[int, JsonObject, int]:
        revisions = [r for r in self._revisions.get(document_id, []) if r.seq <= at]
        bases = [i for i, r in enumerate(revisions) if r.kind == "base"]
        if not bases:
            raise StorageCorrupted(f"Document {document_id} is missing a required base")
        base = revisions[bases[-1]]
        deltas = revisions[bases[-1] + 1 :]
        ops: list[Op] = []
        for delta in deltas:
            ops.extend(loads(delta.text))  # type: ignore[arg-type]
        try:
            value = apply_ops(loads(base.text), ops)
        except InvalidOperation as error:
            # Storage checks a delta's shape, not that it fits the value (the Session
            # derives deltas from the value), so a delta that does not fit is damage.
            raise StorageCorrupted(
                f"Document {document_id} has a delta that does not apply: {error}"
            ) from None
        if not isinstance(value, dict):
            raise StorageCorrupted(f"Document {document_id} content is not an object")
        version = deltas[-1].version if deltas else base.version
        return version, value, len(deltas)

    async def close(self) -> None:
        """Close the store; later calls raise ``StorageClosed``."""
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise StorageClosed("Storage is closed")


def _page(
    scan: str,
    ascending: Callable[[], list[int]],
    order: ScanOrder | None,
    cursor: JsonObject | None,
    limit: int,
    load: Callable[[int], T | None],
    default: ScanOrder = "asc",
) -> Page[T]:
    """Return one page after the cursor's position.

    Args:
        scan: The scan's name, carried by its cursors.
        ascending: Returns the candidate IDs in ascending order; called after the
            arguments are checked, so it may raise for what the scan names.
        order: The order asked for (``None``: the cursor's, or ``default``).
        cursor: The caller's cursor, or ``None``.
        limit: The page size.
        load: Returns the item of an ID, or ``None`` when it does not pass the filters.
        default: The scan's order when neither the query nor a cursor says.
    """
    check_limit(limit)
    check_order(order)
    after, order = read_cursor(cursor, scan, order, default)
    ids = ascending()
    if order == "desc":
        ids.reverse()
    items: list[T] = []
    last = None
    for item_id in ids:
        if after is not None and (item_id <= after if order == "asc" else item_id >= after):
            continue
        item = load(item_id)
        if item is None:
            continue
        if len(items) == limit:
            return Page(items, make_cursor(scan, last, order) if last is not None else None)
        items.append(item)
        last = item_id
    return Page(items, None)
