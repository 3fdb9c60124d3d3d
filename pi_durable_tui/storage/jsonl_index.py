"""The in-memory indexes of a JSONL store: committed state answered without I/O.

``JsonlStorage`` reads nothing from disk after open: every lookup and scan is
answered here, and batch preparation asks its ``CommittedView`` questions here.
The semantics are those of ``MemoryStorage`` (R128), rule for rule; the shapes
differ where a persistent store needs them to:

- Entries, tasks and submissions are kept as the JSON text that was written (or
  sliced from ``main.jsonl`` at open) and parsed on every read, so every result
  is a detached copy. Tasks and submissions also keep the few fields that scans
  filter on, so a scan parses only what it returns.
- Every table keeps a sorted ID list, so a page starts by bisection after its
  cursor; entry scans take at most ``limit + 1`` IDs from each member of the
  fork chain instead of building the whole visible history.
- Each live document keeps its current content (``Current``), so a current read
  replays nothing; a historical read replays from the newest base at or before
  the point. Revisions kept match ``MemoryStorage`` exactly: a current-only
  document keeps those from its newest base on, a retired one none, a
  rewindable one all of them.
- ``sidecars`` is file bookkeeping for the storage: each document's next
  ordinal and how many records its sidecar file holds, which says when
  reclamation has dead records to drop.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pi_durable_tui.storage.batch import PreparedBatch, RevisionKind
from pi_durable_tui.storage.errors import StorageCorrupted
from pi_durable_tui.storage.json_ops import JsonObject, Op, apply_ops, copy_json, loads
from pi_durable_tui.storage.protocol import EntryOrder
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
    TaskRecord,
)
from pi_durable_tui.storage.scans import check_limit, make_cursor, read_cursor, visible_chain

T = TypeVar("T")


@dataclass(slots=True)
class TaskRow:
    """A task's latest record as JSON text, with the fields scans filter on."""

    text: str
    conversation_id: int
    kind: str
    status: str
    abort_requested: bool
    background: bool


@dataclass(slots=True)
class SubmissionRow:
    """A submission's latest record as JSON text, with the fields scans filter on."""

    text: str
    conversation_id: int
    type: str
    request_id: str | None
    status: str


@dataclass(slots=True)
class Revision:
    """One stored revision of a document: a base value or a list of operations."""

    seq: int
    kind: RevisionKind
    version: int
    text: str


@dataclass(slots=True)
class Current:
    """A live document's current content. The value is never handed out: reads copy it."""

    version: int
    value: JsonObject
    deltas: int


@dataclass(slots=True)
class SidecarState:
    """What a document's sidecar file holds."""

    ordinals: int = 0
    """Revisions ever stored for the incarnation: the ordinal of the next one."""
    records: int = 0
    """Records physically in the file; more than the live revisions means dead ones."""


def insert_sorted(ids: list[int], item: int) -> None:
    """Insert into a sorted list; IDs mostly arrive in order, so try appending first."""
    if not ids or item > ids[-1]:
        ids.append(item)
    else:
        bisect.insort(ids, item)


def replay(document_id: int, revisions: Sequence[Revision], at: int) -> Current:
    """Rebuild a document's content at ``at`` from its newest base at or before it.

    Raises:
        StorageCorrupted: No base is kept for that point, or the stored content is
            not valid.
    """
    stop = bisect.bisect_right(revisions, at, key=lambda revision: revision.seq)
    base = stop - 1
    while base >= 0 and revisions[base].kind != "base":
        base -= 1
    if base < 0:
        raise StorageCorrupted(f"Document {document_id} is missing a required base")
    try:
        value = loads(revisions[base].text)
        for delta in revisions[base + 1 : stop]:
            ops: list[Op] = loads(delta.text)  # type: ignore[assignment]
            value = apply_ops(value, ops)
    except (ValueError, TypeError, AttributeError) as error:
        raise StorageCorrupted(
            f"Invalid document content in document {document_id}: {error}"
        ) from error
    if not isinstance(value, dict):
        raise StorageCorrupted(f"Document {document_id} content is not an object")
    return Current(revisions[stop - 1].version, value, stop - 1 - base)


class JsonlIndex:
    """Committed state of a JSONL store, in memory. See the module docstring."""

    def __init__(self) -> None:
        self.seq = 0
        self.next_id = FIRST_MINTED_ID
        self.ids: dict[int, RecordKind] = {}
        self.conversations: dict[int, ConversationRecord] = {}
        self.conversation_ids: list[int] = []
        self.entries: dict[int, tuple[str, int, int]] = {}
        """Entry ID -> (JSON text, conversation ID, commit seq)."""
        self.entry_ids: dict[int, list[int]] = {}
        self.head_ids: dict[int, list[int]] = {}
        self.tasks: dict[int, TaskRow] = {}
        self.task_ids: list[int] = []
        self.submissions: dict[int, SubmissionRow] = {}
        self.submission_ids: list[int] = []
        self.requests: dict[tuple[int, str], int] = {}
        self.documents: dict[int, DocumentRecord] = {}
        self.scope_documents: dict[ScopeRef, list[int]] = {}
        self.live: dict[DocAddress, int] = {}
        self.incarnations: dict[DocAddress, list[int]] = {}
        self.revisions: dict[int, list[Revision]] = {}
        self.current: dict[int, Current] = {}
        self.sidecars: dict[int, SidecarState] = {}

    # -- building -----------------------------------------------------------

    def claim(self, record_id: int, kind: RecordKind) -> None:
        """Record that ``record_id`` belongs to ``kind`` and keep minting above it."""
        self.ids[record_id] = kind
        if record_id >= self.next_id:
            self.next_id = record_id + 1

    def add_conversation(self, record: ConversationRecord) -> None:
        """Store a new conversation."""
        self.claim(record.id, "conversation")
        self.conversations[record.id] = record
        insert_sorted(self.conversation_ids, record.id)

    def add_entry(
        self, entry_id: int, conversation_id: int, head: bool, text: str, seq: int
    ) -> None:
        """Store a new entry given as JSON text."""
        self.claim(entry_id, "entry")
        self.entries[entry_id] = (text, conversation_id, seq)
        insert_sorted(self.entry_ids.setdefault(conversation_id, []), entry_id)
        if head:
            insert_sorted(self.head_ids.setdefault(conversation_id, []), entry_id)

    def put_task(self, record: TaskRecord, text: str) -> None:
        """Create or replace a task."""
        self.claim(record.id, "task")
        if record.id not in self.tasks:
            insert_sorted(self.task_ids, record.id)
        self.tasks[record.id] = TaskRow(
            text,
            record.conversation_id,
            record.kind,
            record.status,
            record.abort_requested,
            record.background,
        )

    def put_submission(self, record: SubmissionRecord, text: str) -> None:
        """Create or replace a submission."""
        self.claim(record.id, "submission")
        old = self.submissions.get(record.id)
        if old is None:
            insert_sorted(self.submission_ids, record.id)
        elif old.request_id is not None:
            # A replacement may drop or change the request ID: the old key stops finding
            # this submission (unless another submission claimed it meanwhile).
            key = (old.conversation_id, old.request_id)
            if self.requests.get(key) == record.id:
                del self.requests[key]
        self.submissions[record.id] = SubmissionRow(
            text, record.conversation_id, record.type, record.request_id, record.status
        )
        if record.request_id is not None:
            self.requests[(record.conversation_id, record.request_id)] = record.id

    def put_document(self, record: DocumentRecord) -> None:
        """Store a new incarnation, or the retired version of a known one."""
        self.claim(record.id, "document")
        address = record.address
        if record.id not in self.documents:
            self.incarnations.setdefault(address, []).append(record.id)
            insert_sorted(self.scope_documents.setdefault(address.scope, []), record.id)
            self.sidecars[record.id] = SidecarState()
        self.documents[record.id] = record
        if record.retired_at is None:
            self.live[address] = record.id
        else:
            if self.live.get(address) == record.id:
                del self.live[address]
            self.current.pop(record.id, None)

    def add_revision(
        self, document_id: int, seq: int, kind: RevisionKind, version: int, text: str
    ) -> None:
        """Keep one revision of a document in memory."""
        self.revisions.setdefault(document_id, []).append(Revision(seq, kind, version, text))

    def reclaim(self, document_id: int, everything: bool, seq: int) -> None:
        """Drop a current-only document's dead revisions, as ``MemoryStorage`` does."""
        revisions = self.revisions.get(document_id, [])
        self.revisions[document_id] = (
            [] if everything else [revision for revision in revisions if revision.seq >= seq]
        )

    def apply(self, batch: PreparedBatch, currents: dict[int, Current]) -> None:
        """Publish a batch that is durable.

        Args:
            batch: The prepared batch.
            currents: The new current content of every live document it changed or
                created, computed before any I/O.
        """
        # REMINDER: the batch is already on disk; nothing below may fail, or memory and
        # files would disagree until the next open.
        seq = batch.seq
        for conversation, _ in batch.conversations:
            self.add_conversation(conversation)
        for entry, text in batch.entries:
            self.add_entry(entry.id, entry.conversation_id, entry.head is not None, text, seq)
        for task, text in batch.tasks:
            self.put_task(task, text)
        for submission, text in batch.submissions:
            self.put_submission(submission, text)
        # Retirements first, so an address retired and re-created in one batch ends live.
        for record, _ in (*batch.retired, *batch.new_documents):
            self.put_document(record)
        for revision in batch.revisions:
            self.add_revision(
                revision.document_id, seq, revision.kind, revision.version, revision.text
            )
            self.sidecars[revision.document_id].ordinals += 1
        for document_id, everything in batch.reclaim.items():
            self.reclaim(document_id, everything, seq)
        self.current.update(currents)
        self.next_id = max(self.next_id, batch.max_id + 1)
        self.seq = seq

    # -- CommittedView --------------------------------------------------------

    def id_kind(self, record_id: int) -> RecordKind | None:
        """Return the kind that owns an ID."""
        return self.ids.get(record_id)

    def task_conversation(self, task_id: int) -> int | None:
        """Return the conversation of a committed task."""
        row = self.tasks.get(task_id)
        return None if row is None else row.conversation_id

    def submission_identity(self, submission_id: int) -> tuple[int, str, str | None] | None:
        """Return the conversation, type and request ID of a committed submission."""
        row = self.submissions.get(submission_id)
        return None if row is None else (row.conversation_id, row.type, row.request_id)

    def submission_for_request(self, conversation_id: int, request_id: str) -> int | None:
        """Return the ID of the submission with this request ID."""
        return self.requests.get((conversation_id, request_id))

    def document_record(self, document_id: int) -> DocumentRecord | None:
        """Return a document incarnation."""
        return self.documents.get(document_id)

    def live_document(self, address: DocAddress) -> DocumentRecord | None:
        """Return the live incarnation at an address."""
        document_id = self.live.get(address)
        return None if document_id is None else self.documents[document_id]

    def document_version(self, document_id: int) -> int:
        """Return the version of a live document's newest revision."""
        return self.current[document_id].version

    def document_content(self, document_id: int, at: int) -> tuple[int, JsonObject]:
        """Return a document's version and value at ``at`` (shared: do not mutate)."""
        content = self.content(document_id, at)
        return content.version, content.value

    def content(self, document_id: int, at: int) -> Current:
        """Return a document's content at ``at``; the cached value when it is current."""
        revisions = self.revisions.get(document_id, [])
        current = self.current.get(document_id)
        if current is not None and revisions and at >= revisions[-1].seq:
            return current
        return replay(document_id, revisions, at)

    # -- reads ----------------------------------------------------------------

    def parent_of(self, conversation_id: int) -> ForkPoint | None:
        """Return a conversation's fork point."""
        record = self.conversations.get(conversation_id)
        return None if record is None else record.parent

    def stored_entry(self, entry_id: int) -> StoredEntry:
        """Parse a stored entry."""
        text, _, seq = self.entries[entry_id]
        return StoredEntry(EntryRecord.from_json(loads(text)), seq)

    def entry(self, entry_id: int, conversation_id: int | None) -> StoredEntry | None:
        """Return an entry, or only if visible from ``conversation_id``."""
        stored = self.entries.get(entry_id)
        if stored is None:
            return None
        if conversation_id is not None:
            owner = stored[1]
            for member, cap in visible_chain(conversation_id, self.parent_of):
                if member == owner:
                    if cap is not None and entry_id > cap:
                        return None
                    break
            else:
                return None
        return self.stored_entry(entry_id)

    def task(self, task_id: int) -> TaskRecord | None:
        """Return a task."""
        row = self.tasks.get(task_id)
        return None if row is None else TaskRecord.from_json(loads(row.text))

    def submission(self, submission_id: int) -> SubmissionRecord | None:
        """Return a submission."""
        row = self.submissions.get(submission_id)
        return None if row is None else SubmissionRecord.from_json(loads(row.text))

    def visible_window(
        self,
        conversation_id: int,
        index: dict[int, list[int]],
        low: int | None,
        high: int | None,
        order: EntryOrder,
        count: int,
    ) -> list[int]:
        """Return up to ``count`` visible IDs of ``index`` within bounds, in scan order."""
        if conversation_id not in self.conversations or count <= 0:
            return []
        found: list[int] = []
        for member, cap in visible_chain(conversation_id, self.parent_of):
            top = cap if high is None else (high if cap is None else min(cap, high))
            ids = index.get(member)
            if not ids:
                continue
            start = 0 if low is None else bisect.bisect_left(ids, low)
            stop = len(ids) if top is None else bisect.bisect_right(ids, top)
            if start >= stop:
                continue
            if order == "asc":
                found.extend(ids[start : min(stop, start + count)])
            else:
                found.extend(ids[max(start, stop - count) : stop])
        found.sort(reverse=order == "desc")
        return found[:count]

    def scan_entries(
        self,
        conversation_id: int,
        low: int | None,
        high: int | None,
        order: EntryOrder,
        limit: int,
        cursor: JsonObject | None,
    ) -> Page[StoredEntry]:
        """Return one page of a conversation's visible history."""
        check_limit(limit)
        after = read_cursor(cursor, "entries", order)
        if after is not None and order == "asc":
            low = after + 1 if low is None else max(low, after + 1)
        elif after is not None:
            high = after - 1 if high is None else min(high, after - 1)
        ids = self.visible_window(conversation_id, self.entry_ids, low, high, order, limit + 1)
        items = [self.stored_entry(entry_id) for entry_id in ids[:limit]]
        more = len(ids) > limit
        return Page(items, make_cursor("entries", ids[limit - 1], order) if more else None)

    def document(self, document_id: int, at: int | None) -> DocumentRead | None:
        """Return a document's content at ``at`` (``None``: now) as a fresh copy."""
        record = self.documents.get(document_id)
        if record is None:
            return None
        if at is None:
            if record.retired_at is not None:
                return None
            point = self.seq
        elif record.alive_at(at):
            point = at
        else:
            return None
        content = self.content(document_id, point)
        value = copy_json(content.value)
        assert isinstance(value, dict)
        return DocumentRead(record, content.version, value, content.deltas)

    def find_document(self, address: DocAddress, at: int | None) -> DocumentRecord | None:
        """Return the incarnation at an address alive at ``at``."""
        if at is None:
            return self.live_document(address)
        for document_id in reversed(self.incarnations.get(address, [])):
            record = self.documents[document_id]
            if record.alive_at(at):
                return record
        return None


def page(
    scan: str,
    ids: list[int],
    cursor: JsonObject | None,
    limit: int,
    load: Callable[[int], T | None],
) -> Page[T]:
    """Return one page of an ascending ID list after the cursor's position.

    Args:
        scan: The scan's name, carried by its cursors.
        ids: Sorted IDs of every candidate.
        cursor: The caller's cursor, or ``None``.
        limit: The page size.
        load: Returns the item of an ID, or ``None`` when a filter rejects it.
    """
    check_limit(limit)
    after = read_cursor(cursor, scan)
    items: list[T] = []
    last = 0
    for position in range(0 if after is None else bisect.bisect_right(ids, after), len(ids)):
        item_id = ids[position]
        item = load(item_id)
        if item is None:
            continue
        if len(items) == limit:
            return Page(items, make_cursor(scan, last))
        items.append(item)
        last = item_id
    return Page(items, None)
