"""A seeded random workload and a read-everything comparison, for differential tests.

``Workload`` draws commit batches, valid and invalid, over every write kind
(conversations with forks and owners, entries with head markers, tasks,
submissions with request IDs, documents of every scope with bases, deltas,
retirements and fork copies). ``observe`` reads everything a store answers, so
two stores fed the same batches can be compared with ``==`` (R128: the memory
backend is the reference).
"""

from __future__ import annotations

import random
from typing import Any

from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.records import (
    ConversationOwner,
    ConversationRecord,
    ConversationScope,
    DocAddress,
    DocScope,
    EntryRecord,
    ForkPoint,
    ScopeRef,
    SessionScope,
    SubmissionRecord,
    TaskRecord,
    TaskScope,
)
from pi_durable_tui.storage.writes import (
    ChangeDocument,
    CopyDocument,
    CreateDocument,
    PutConversation,
    PutEntry,
    PutSubmission,
    PutTask,
    RetireDocument,
    Write,
)

STATUSES = ["pending", "running", "waiting", "completing", "terminal"]
SUBMISSION_STATUSES = ["queued", "placed", "done", "unanswered"]
REQUESTS = ["r1", "r2", "r3", None]
DOC_KINDS = ["notes", "plan"]


class Workload:
    """Random batches over a shared, growing ID space; IDs come from ``mint``."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.next_id = 2
        self.conversations: list[int] = []
        self.entries: dict[int, list[int]] = {}
        self.tasks: dict[int, int] = {}
        self.submissions: dict[int, tuple[int, str]] = {}
        self.documents: dict[int, DocScope] = {}

    def mint(self) -> int:
        minted = self.next_id
        self.next_id += 1
        return minted

    def batch(self) -> list[Write]:
        """Return the next batch: one to four writes, sometimes breaking a rule."""
        if not self.conversations:
            self.conversations.append(1)
            self.entries[1] = []
            return [PutConversation(ConversationRecord(1))]
        return [self._write() for _ in range(self.rng.randint(0, 4))]

    def adopt(self, writes: list[Write]) -> None:
        """Record what a successful batch created, so later batches can use it."""
        for write in writes:
            if isinstance(write, PutConversation):
                self.conversations.append(write.record.id)
                self.entries[write.record.id] = []
            elif isinstance(write, PutEntry):
                self.entries[write.record.conversation_id].append(write.record.id)
            elif isinstance(write, PutTask):
                self.tasks[write.record.id] = write.record.conversation_id
            elif isinstance(write, PutSubmission):
                record = write.record
                self.submissions[record.id] = (record.conversation_id, record.type)
            elif isinstance(write, (CreateDocument, CopyDocument)):
                self.documents[write.id] = write.scope
            elif isinstance(write, RetireDocument) and self.rng.random() < 0.7:
                self.documents.pop(write.id, None)  # keep a few to retry (rejected)

    def _write(self) -> Write:
        rng = self.rng
        roll = rng.random()
        conversation = rng.choice(self.conversations)
        if roll < 0.1:
            return self._conversation()
        if roll < 0.35:
            if rng.random() < 0.03:
                conversation = 9_999_999  # missing conversation: rejected
            head = self.next_id if rng.random() < 0.2 else None
            record = EntryRecord(self.mint(), conversation, "message", data={"n": roll}, head=head)
            return PutEntry(record)
        if roll < 0.5:
            return self._task()
        if roll < 0.62:
            return self._submission()
        return self._document()

    def _conversation(self) -> Write:
        rng = self.rng
        parent = None
        candidates = [c for c in self.conversations if self.entries[c]]
        if candidates and rng.random() < 0.6:
            source = rng.choice(candidates)
            parent = ForkPoint(source, rng.choice(self.entries[source]))
        owner = None
        if self.tasks and rng.random() < 0.3:
            task_id = rng.choice(list(self.tasks))
            owner = ConversationOwner(self.tasks[task_id], task_id)
        return PutConversation(ConversationRecord(self.mint(), parent, owner))

    def _task(self) -> Write:
        rng = self.rng
        if self.tasks and rng.random() < 0.5:
            task_id = rng.choice(list(self.tasks))
            conversation = self.tasks[task_id]
            if rng.random() < 0.05:
                conversation = rng.choice(self.conversations)  # may move: rejected
        else:
            task_id, conversation = self.mint(), rng.choice(self.conversations)
        return PutTask(
            TaskRecord(
                id=task_id,
                conversation_id=conversation,
                kind=rng.choice(["pi.tool", "pi.generation"]),
                version=1,
                input={"i": task_id},
                state={"status": rng.choice(STATUSES)},
                abort_requested=rng.random() < 0.3,
                background=rng.random() < 0.3,
            )
        )

    def _submission(self) -> Write:
        rng = self.rng
        if self.submissions and rng.random() < 0.5:
            submission_id = rng.choice(list(self.submissions))
            conversation, kind = self.submissions[submission_id]
        else:
            submission_id = self.mint()
            conversation, kind = rng.choice(self.conversations), rng.choice(["input", "write"])
        return PutSubmission(
            SubmissionRecord(
                id=submission_id,
                conversation_id=conversation,
                type=kind,  # type: ignore[arg-type]
                status=rng.choice(SUBMISSION_STATUSES),  # type: ignore[arg-type]
                request_id=rng.choice(REQUESTS),
            )
        )

    def _scope(self) -> DocScope:
        rng = self.rng
        roll = rng.random()
        if roll < 0.2:
            return SessionScope()
        if roll < 0.35 and self.tasks:
            return TaskScope(rng.choice(list(self.tasks)))
        return ConversationScope(
            rng.choice(self.conversations),
            rng.choice(["latest", "rewindable"]),
            rng.choice(["initial", "current", "asOf"]),
        )

    def _document(self) -> Write:
        rng = self.rng
        roll = rng.random()
        key = rng.choice([None, "a"])
        if not self.documents or roll < 0.25:
            value = {"text": "", "items": []}
            return CreateDocument(self.mint(), rng.choice(DOC_KINDS), self._scope(), 1, value, key)
        document_id = rng.choice(list(self.documents))
        if roll < 0.33:
            return RetireDocument(document_id)
        if roll < 0.4:
            scope = self.documents[document_id]
            if isinstance(scope, ConversationScope):
                target = ConversationScope(
                    rng.choice(self.conversations), scope.history, scope.fork
                )
            else:
                target = ConversationScope(rng.choice(self.conversations))
            return CopyDocument(
                self.mint(),
                rng.choice(DOC_KINDS),
                target,
                document_id,
                rng.randint(0, self.next_id),
                key,
            )
        if roll < 0.55:
            version = rng.choice([1, 1, 2])
            return ChangeDocument(document_id, version, base={"text": "b", "items": [roll]})
        ops: list[dict[str, Any]] = [{"op": "append", "path": ["text"], "text": "x"}]
        if rng.random() < 0.5:
            ops.append({"op": "splice", "path": ["items"], "index": 0, "remove": 0, "insert": [1]})
        return ChangeDocument(document_id, 1, ops=ops)


async def outcome(storage: Storage, writes: list[Write]) -> object:
    """Commit and return the seq, or the error's type name and message."""
    try:
        return await storage.commit(writes)
    except Exception as error:
        return (type(error).__name__, str(error))


async def _safely(call: Any) -> object:
    try:
        return await call
    except Exception as error:
        return (type(error).__name__, str(error))


async def _pages(scan: Any, limit: int, **kwargs: Any) -> list[object]:
    pages: list[object] = []
    cursor = None
    while True:
        page = await scan(limit=limit, cursor=cursor, **kwargs)
        pages.append((page.items, page.cursor))
        cursor = page.cursor
        if cursor is None:
            return pages


async def observe(storage: Storage, top_id: int) -> dict[str, object]:
    """Read everything a store answers about IDs up to ``top_id``."""
    seen: dict[str, object] = {"last_seq": storage.last_seq}
    conversations = [c.id for c in (await storage.scan_conversations(limit=10_000)).items]
    seqs = sorted({0, 1, storage.last_seq // 2, storage.last_seq, storage.last_seq + 5})
    for item in range(1, top_id + 1):
        seen[f"c{item}"] = await storage.conversation(item)
        seen[f"e{item}"] = await storage.entry(item)
        seen[f"t{item}"] = await storage.task(item)
        seen[f"s{item}"] = await storage.submission(item)
        for at in (None, *seqs):
            seen[f"d{item}@{at}"] = await _safely(storage.document(item, at))
        for conversation in conversations[:6]:
            seen[f"e{item}in{conversation}"] = await storage.entry(item, conversation)
    # 9_999_999 is no conversation: reads of its entries are refused, alike everywhere.
    for conversation in [*conversations, 9_999_999]:
        for order in ("asc", "desc"):
            seen[f"entries{conversation}{order}"] = await _safely(
                _pages(storage.scan_entries, 3, conversation_id=conversation, order=order)
            )
        seen[f"entries{conversation}range"] = await _safely(
            _pages(
                storage.scan_entries,
                2,
                conversation_id=conversation,
                min_entry_id=top_id // 4,
                max_entry_id=top_id // 2,
            )
        )
        for cap in (None, top_id // 3, top_id // 2):
            seen[f"head{conversation}@{cap}"] = await _safely(
                storage.find_latest_head_marker(conversation, cap)
            )
        for request in REQUESTS[:-1]:
            seen[f"req{conversation}{request}"] = await storage.submission_by_request(
                conversation,
                request,  # type: ignore[arg-type]
            )
        seen[f"owned{conversation}"] = await _pages(
            storage.scan_conversations, 2, owner_conversation_id=conversation
        )
        seen[f"tasks{conversation}"] = await _pages(
            storage.scan_tasks, 2, conversation_id=conversation
        )
        seen[f"subs{conversation}"] = await _pages(
            storage.scan_submissions, 2, conversation_id=conversation, status=["queued", "done"]
        )
        for at in (None, *seqs):
            scope = ScopeRef("conversation", conversation)
            seen[f"docs{conversation}@{at}"] = await _pages(
                storage.scan_documents, 2, scope=scope, at=at
            )
    for status in [*STATUSES, ["running", "waiting"], []]:
        seen[f"tasks{status}"] = await _pages(storage.scan_tasks, 3, status=status)
    for flags in ({"abort_requested": True}, {"background": False}, {"kind": "pi.tool"}):
        seen[f"tasks{flags}"] = await _pages(storage.scan_tasks, 4, **flags)
    for status in SUBMISSION_STATUSES:
        seen[f"subs{status}"] = await _pages(storage.scan_submissions, 3, status=status)
    seen["owned-by-task"] = [
        await _pages(storage.scan_conversations, 5, owner_task_id=t) for t in range(1, top_id + 1)
    ]
    for kind in ("session", "task"):
        for scope_id in (None, *range(1, top_id + 1)):
            for at in (None, *seqs):
                scope = ScopeRef(kind, scope_id)
                seen[f"docs{kind}{scope_id}@{at}"] = await _pages(
                    storage.scan_documents, 2, scope=scope, at=at, kind=None
                )
    for doc_kind in DOC_KINDS:
        for key in (None, "a"):
            for scope in [
                ScopeRef("session"),
                *(ScopeRef("conversation", c) for c in conversations),
            ]:
                for at in (None, *seqs):
                    address = DocAddress(doc_kind, scope, key)
                    seen[f"find{address}@{at}"] = await storage.find_document(address, at)
    return seen
