"""Random commit batches for the differential stateful test (``test_stateful``).

``Model`` remembers what has been committed (IDs and their kinds, conversations
and their fork points, tasks, submissions, document incarnations); ``BatchDrawer``
draws a batch of writes from it, mostly valid and sometimes not: IDs taken from
another kind, references to missing records, tasks and submissions that move,
request IDs that collide, deltas with the wrong version, copies out of their
source's lifetime, values that are not JSON. Every draw goes through Hypothesis,
so a failing batch shrinks toward fewer, simpler and valid writes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from pi_durable_tui.storage.json_ops import Json, JsonObject, Op, apply_ops
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
    SubmissionType,
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

# One of each holds a lone surrogate (what os.fsdecode makes of a byte that is not UTF-8):
# every backend keeps it and finds it exactly (protocol, Strings).
REQUESTS = ["r0", "r1", "r\udcff"]
DOC_KINDS = ["a", "b\udcff"]
KEYS: list[str | None] = [None, "k", "k\ud800"]
STATUSES = ["pending", "running", "waiting", "completing", "terminal"]
SUB_STATUSES = ["queued", "placed", "done", "unanswered"]

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from([2**53 + 1, -(2**63), 2**64, 10**30, -0.0, 1e308, 5e-324])
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(max_size=4)
    | st.sampled_from(["\udcff", "x\ud800y", "\\udcff"])
)
json_values: st.SearchStrategy[Json] = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)
json_objects: st.SearchStrategy[JsonObject] = st.dictionaries(
    st.sampled_from(["s", "l", "o", "n", "x"]), json_values, max_size=4
)
not_json: st.SearchStrategy[Any] = st.sampled_from(
    [math.nan, math.inf, {1, 2}, b"x", (1,), {1: 1}, "\ud800\udc00"]
)


Draw = Callable[[st.SearchStrategy[Any]], Any]


def pick(draw: Draw, options: Sequence[Any]) -> Any:
    """One of ``options`` (not empty), shrinking toward the first.

    An index is drawn rather than ``st.sampled_from(options)``: building a new
    strategy from a new list at every draw made runs depend on when the garbage
    collector ran (Hypothesis caches strategies), so SQLite runs, whose worker
    thread shifts collections, were not reproducible.
    """
    return options[draw(st.integers(0, len(options) - 1))]


def statuses(draw: Draw, options: Sequence[str]) -> str | list[str]:
    """A status filter: one status, or a list of them (possibly empty)."""
    if draw(st.booleans()):
        return str(pick(draw, options))
    return [o for o in options if draw(st.booleans())]


def maybe(draw: Draw, make: Callable[[], Any]) -> Any:
    """``None`` half of the time, else ``make()``."""
    return None if draw(st.booleans()) else make()


@dataclass
class Doc:
    """A committed document incarnation, as far as generation needs it."""

    id: int
    kind: str
    scope: DocScope
    key: str | None
    created_at: int
    retired_at: int | None = None

    @property
    def address(self) -> DocAddress:
        """The incarnation's logical address."""
        return DocAddress(self.kind, ScopeRef.of(self.scope), self.key)

    @property
    def rewindable(self) -> bool:
        """Whether every revision is kept."""
        return isinstance(self.scope, ConversationScope) and self.scope.history == "rewindable"


@dataclass
class Model:
    """What has been committed, updated from each accepted batch."""

    seq: int = 0
    max_id: int = 0
    kinds: dict[int, str] = field(default_factory=dict)
    conversations: dict[int, ForkPoint | None] = field(default_factory=dict)
    entries: dict[int, int] = field(default_factory=dict)
    tasks: dict[int, int] = field(default_factory=dict)
    submissions: dict[int, tuple[int, SubmissionType, str | None]] = field(default_factory=dict)
    docs: dict[int, Doc] = field(default_factory=dict)

    def apply(self, writes: Sequence[Write], seq: int) -> None:
        """Record an accepted batch committed at ``seq``."""
        self.seq = seq
        for write in writes:
            if isinstance(write, PutConversation):
                self._claim(write.record.id, "conversation")
                self.conversations[write.record.id] = write.record.parent
            elif isinstance(write, PutEntry):
                self._claim(write.record.id, "entry")
                self.entries[write.record.id] = write.record.conversation_id
            elif isinstance(write, PutTask):
                self._claim(write.record.id, "task")
                self.tasks[write.record.id] = write.record.conversation_id
            elif isinstance(write, PutSubmission):
                record = write.record
                self._claim(record.id, "submission")
                self.submissions[record.id] = (
                    record.conversation_id,
                    record.type,
                    record.request_id,
                )
            elif isinstance(write, (CreateDocument, CopyDocument)):
                self._claim(write.id, "document")
                self.docs[write.id] = Doc(write.id, write.kind, write.scope, write.key, seq)
            elif isinstance(write, RetireDocument):
                self.docs[write.id].retired_at = seq

    def _claim(self, record_id: int, kind: str) -> None:
        self.kinds[record_id] = kind
        self.max_id = max(self.max_id, record_id)

    def live_docs(self) -> list[Doc]:
        """Documents not retired, in ID order."""
        return [d for d in self.docs.values() if d.retired_at is None]

    def history_of(self, conversation_id: int) -> list[int]:
        """Entries of a conversation and its ancestors (ignoring caps): fork point candidates."""
        result: list[int] = []
        seen: set[int] = set()
        current: int | None = conversation_id
        while current is not None and current not in seen:
            seen.add(current)
            result.extend(e for e, c in self.entries.items() if c == current)
            parent = self.conversations.get(current)
            current = None if parent is None else parent.conversation_id
        return sorted(result)


class BatchDrawer:
    """Draws one batch against a ``Model``; new records of the batch may be referenced."""

    def __init__(
        self,
        model: Model,
        draw: Draw,
        mint: Callable[[], int],
        current_value: Callable[[int], tuple[int, JsonObject] | None],
    ) -> None:
        self.model = model
        self.draw = draw
        self.mint = mint
        self.current_value = current_value
        self.next_id = model.max_id + 1
        self.new_conversations: list[int] = []
        self.new_tasks: dict[int, int] = {}

    # -- choices -------------------------------------------------------------

    def bad(self) -> bool:
        """Whether to break a rule this time (about one in ten); shrinks to ``False``."""
        return bool(self.draw(st.integers(0, 9)) == 9)

    def pick(self, options: Sequence[Any]) -> Any:
        """One of ``options`` (which must not be empty)."""
        return pick(self.draw, options)

    def fresh_id(self) -> int:
        """An unused ID: one minted by the backend, the next one, or an explicit jump ahead."""
        how = self.draw(st.integers(0, 2))
        if how == 1:
            minted = self.mint()
            self.next_id = max(self.next_id, minted + 1)
            return minted
        if how == 2:
            self.next_id += self.draw(st.integers(1, 40))
        self.next_id += 1
        return self.next_id - 1

    def new_or_taken_id(self) -> int:
        """Usually a fresh ID; sometimes one that already belongs to a record."""
        if self.model.kinds and self.bad():
            return int(self.pick(sorted(self.model.kinds)))
        return self.fresh_id()

    def conversation_id(self) -> int:
        """An existing conversation (committed or new in this batch), or a missing one."""
        options = sorted(self.model.conversations) + self.new_conversations
        if not options or self.bad():
            return self.model.max_id + 1000
        return int(self.pick(options))

    def task_id(self) -> int | None:
        """An existing task, or ``None`` when there is none."""
        options = sorted(self.model.tasks) + sorted(self.new_tasks)
        return int(self.pick(options)) if options else None

    # -- writes ----------------------------------------------------------------

    def batch(self) -> list[Write]:
        """A batch of any writes: one to four, or (rarely) none."""
        return self.writes(
            [
                self.entry,
                self.conversation,
                self.task,
                self.submission,
                self.create_doc,
                self.change_doc,
                self.retire_doc,
                self.copy_doc,
            ]
        )

    def table_batch(self) -> list[Write]:
        """A batch of table writes, submissions and tasks (replacements, request IDs) first."""
        return self.writes([self.submission, self.task, self.entry, self.conversation])

    def document_batch(self) -> list[Write]:
        """A batch of document writes (the kind with the most rules) and entries."""
        return self.writes(
            [self.change_doc, self.create_doc, self.entry, self.retire_doc, self.copy_doc]
        )

    def writes(self, makers: list[Callable[[], Write | None]]) -> list[Write]:
        count = 0 if self.draw(st.integers(0, 15)) == 15 else self.draw(st.integers(1, 3))
        writes: list[Write] = []
        for _ in range(count):
            write = self.pick(makers)()
            if write is not None:
                writes.append(write)
        return writes

    def fork_batch(self) -> list[Write]:
        """A fork as the kernel commits it: the conversation and copies of its documents.

        ``asOf`` documents are copied as of a point of their life, ``current`` ones
        as of now, ``initial`` ones not at all (R17); sometimes another write joins
        the batch (which may break R18 by touching a copied source).
        """
        if not self.model.conversations:
            return self.batch()
        parent_id = int(self.pick(sorted(self.model.conversations)))
        candidates = self.model.history_of(parent_id)
        at = int(self.pick(candidates)) if candidates else self.model.max_id
        child = self.fresh_id()
        writes: list[Write] = [PutConversation(ConversationRecord(child, ForkPoint(parent_id, at)))]
        for doc in self.model.live_docs():
            scope = doc.scope
            if not isinstance(scope, ConversationScope) or scope.conversation_id != parent_id:
                continue
            if scope.fork == "initial":
                continue
            point = self.model.seq
            if scope.fork == "asOf" and doc.rewindable:
                point = self.draw(st.integers(doc.created_at, self.model.seq))
            target = ConversationScope(child, scope.history, scope.fork)
            writes.append(CopyDocument(self.fresh_id(), doc.kind, target, doc.id, point, doc.key))
        if self.draw(st.booleans()):
            writes.extend(self.document_batch()[:1])
        return writes

    def conversation(self) -> Write:
        """A conversation: a root, a fork of a visible entry, or owned by a task."""
        if 1 not in self.model.conversations and self.draw(st.booleans()):
            record_id = 1
        else:
            record_id = self.new_or_taken_id()
        parent = owner = None
        if self.model.conversations and self.draw(st.booleans()):
            parent_id = self.conversation_id()
            candidates = self.model.history_of(parent_id)
            at = int(self.pick(candidates)) if candidates else self.model.max_id
            parent = ForkPoint(parent_id, at)
        task_id = self.task_id()
        if task_id is not None and self.draw(st.booleans()):
            owner_conversation = self.model.tasks.get(task_id, self.new_tasks.get(task_id, 0))
            owner = ConversationOwner(owner_conversation, task_id)
        self.new_conversations.append(record_id)
        return PutConversation(ConversationRecord(record_id, parent, owner))

    def entry(self) -> Write:
        """An entry, sometimes a head marker, sometimes with a value that is not JSON."""
        record_id = self.new_or_taken_id()
        conversation_id = self.conversation_id()
        head = None
        if self.draw(st.booleans()):
            head = record_id if self.draw(st.booleans()) else self.model.max_id
        data = self.draw(not_json) if self.bad() else self.draw(json_values)
        extras = self.draw(st.booleans())
        return PutEntry(
            EntryRecord(
                record_id,
                conversation_id,
                self.pick(["note", "pi.user", "é"]),
                model=[{"role": "user", "content": self.draw(json_values)}] if extras else None,
                data=data,
                head=head,
                edits=[{"target": head, "action": "omit"}] if extras and head else None,
                by_task_id=self.task_id() if extras else None,
            )
        )

    def task(self) -> Write:
        """A new task, or a whole-record replacement of one (which may try to move)."""
        status = self.pick(STATUSES)
        state: JsonObject = {"status": status, "checkpoint": {"phase": "p"}}
        if self.bad():
            state = {"checkpoint": {}}
        existing = sorted(self.model.tasks)
        if existing and self.draw(st.booleans()):
            record_id = int(self.pick(existing))
            conversation_id = self.model.tasks[record_id]
            if self.bad():
                conversation_id = self.conversation_id()
        else:
            record_id = self.new_or_taken_id()
            conversation_id = self.conversation_id()
            self.new_tasks[record_id] = conversation_id
        owner = self.task_id() if self.draw(st.booleans()) else None
        return PutTask(
            TaskRecord(
                record_id,
                conversation_id,
                self.pick(["job", "tool"]),
                1,
                self.draw(json_values),
                state,
                owner=owner,
                background=self.draw(st.booleans()),
                abort_requested=self.draw(st.booleans()),
                started_at=maybe(self.draw, lambda: self.draw(st.floats(0, 2e9))),
                ended_at=1.5 if status == "terminal" else None,
                memos={"m": self.draw(json_values)} if status != "terminal" else None,
            )
        )

    def submission(self) -> Write:
        """A new submission, or a replacement (changing status, request ID, or breaking rules)."""
        existing = sorted(self.model.submissions)
        request = self.pick([None, *REQUESTS])
        if existing and self.draw(st.booleans()):
            record_id = int(self.pick(existing))
            conversation_id, kind, _ = self.model.submissions[record_id]
            if self.bad():
                conversation_id = self.conversation_id()
            if self.bad():
                kind = "write" if kind == "input" else "input"
        else:
            record_id = self.new_or_taken_id()
            # Request IDs only collide within a conversation: favour busy ones.
            busy = sorted({identity[0] for identity in self.model.submissions.values()})
            if busy and self.draw(st.booleans()):
                conversation_id = int(self.pick(busy))
            else:
                conversation_id = self.conversation_id()
            kind = self.pick(["input", "write"])
        status = self.pick(SUB_STATUSES)
        entry = self.pick(sorted(self.model.entries)) if self.model.entries else None
        settled = status in ("done", "unanswered")
        return PutSubmission(
            SubmissionRecord(
                record_id,
                conversation_id,
                kind,
                status,
                request,
                entry=entry,
                answer=entry if status == "done" else None,
                reason="aborted" if status == "unanswered" else None,
                detail=self.draw(json_values) if settled else None,
            )
        )

    def scope(self) -> DocScope:
        """A session, conversation (any history and fork policy) or task scope."""
        which = self.draw(st.integers(0, 2))
        task_id = self.task_id()
        if which == 2 and task_id is not None:
            return TaskScope(task_id)
        if which >= 1:
            history = self.pick(["latest", "rewindable"])
            fork = self.pick(["asOf", "current", "initial"])
            return ConversationScope(self.conversation_id(), history, fork)
        return SessionScope()

    def create_doc(self) -> Write:
        """A creation with a complete base, at a free address unless breaking a rule."""
        scope = self.scope()
        taken = {d.address for d in self.model.live_docs()}
        free = [
            (kind, key)
            for kind in DOC_KINDS
            for key in KEYS
            if DocAddress(kind, ScopeRef.of(scope), key) not in taken
        ]
        kind, key = self.pick(free) if free and not self.bad() else (self.pick(DOC_KINDS), None)
        return CreateDocument(
            self.new_or_taken_id(),
            kind,
            scope,
            self.draw(st.integers(1, 2)),
            self.draw(json_objects),
            key,
        )

    def a_doc(self) -> Doc | None:
        """A live document, or sometimes a retired one."""
        live = self.model.live_docs()
        if live and not self.bad():
            return self.pick(live)
        every = list(self.model.docs.values())
        return self.pick(every) if every else None

    def change_doc(self) -> Write | None:
        """A base (maybe a new version) or a delta drawn against the current value."""
        doc = self.a_doc()
        if doc is None:
            return None
        current = self.current_value(doc.id)
        version, value = current if current is not None else (1, {})
        if self.draw(st.booleans()):
            new_version = version + 1 if self.draw(st.integers(0, 3)) == 3 else version
            return ChangeDocument(doc.id, new_version, base=self.draw(json_objects))
        ops: list[Op] = []
        for _ in range(self.draw(st.integers(1, 3))):
            op = self.operation(value)
            value = apply_ops(value, [op])  # type: ignore[assignment]
            ops.append(op)
        if self.bad():
            version += 1
        return ChangeDocument(doc.id, version, ops=ops)

    def operation(self, value: JsonObject) -> Op:
        """One operation that applies to ``value``."""
        nodes: list[tuple[list[str | int], Json]] = []

        def walk(node: Json, path: list[str | int]) -> None:
            nodes.append((path, node))
            if isinstance(node, dict):
                for key, child in node.items():
                    walk(child, [*path, key])
            elif isinstance(node, list):
                for index, child in enumerate(node):
                    walk(child, [*path, index])

        walk(value, [])
        path, node = self.pick(nodes)
        if not path:
            if self.draw(st.integers(0, 5)) == 5:
                return {"op": "set", "path": [], "value": self.draw(json_objects)}
            return {
                "op": "set",
                "path": [self.pick(["s", "l", "n"])],
                "value": self.draw(json_values),
            }
        if isinstance(node, str) and self.draw(st.booleans()):
            return {"op": "append", "path": path, "text": self.draw(st.text(max_size=3))}
        if isinstance(node, list) and self.draw(st.booleans()):
            index = self.draw(st.integers(0, len(node)))
            remove = self.draw(st.integers(0, len(node) - index))
            insert = self.draw(st.lists(json_values, max_size=2))
            return {
                "op": "splice",
                "path": path,
                "index": index,
                "remove": remove,
                "insert": insert,
            }
        if self.draw(st.booleans()):
            return {"op": "delete", "path": path}
        return {"op": "set", "path": path, "value": self.draw(json_values)}

    def retire_doc(self) -> Write | None:
        """A retirement of a live (or, rarely, retired or unknown) document."""
        doc = self.a_doc()
        return None if doc is None else RetireDocument(doc.id)

    def copy_doc(self) -> Write | None:
        """A fork-style copy of a conversation document into another conversation."""
        sources = [d for d in self.model.docs.values() if isinstance(d.scope, ConversationScope)]
        if not sources:
            return None
        source: Doc = self.pick(sources)
        assert isinstance(source.scope, ConversationScope)
        end = self.model.seq if source.retired_at is None else source.retired_at - 1
        if source.rewindable and end >= source.created_at:
            at = self.draw(st.integers(source.created_at, end))
        else:
            at = self.model.seq
        if self.bad():
            at = self.draw(st.integers(0, self.model.seq + 1))
        kind, key = source.kind, source.key
        taken = {d.address.scope.id for d in self.model.live_docs() if d.address.kind == kind}
        free = [c for c in sorted(self.model.conversations) if c not in taken]
        target_id = self.pick(free) if free and not self.bad() else self.conversation_id()
        target = ConversationScope(target_id, source.scope.history, source.scope.fork)
        if self.bad():
            kind = self.pick(DOC_KINDS)
            key = self.pick(KEYS)
        return CopyDocument(self.new_or_taken_id(), kind, target, source.id, at, key)
