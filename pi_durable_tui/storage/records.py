"""Records: conversations, entries, tasks, submissions and document incarnations.

Records are frozen dataclasses whose payload fields hold plain JSON values
(reference section 1.2-1.8). Backends keep them as JSON text made by
``to_json`` and rebuild them with ``from_json`` on every read, so every record a
backend returns is a detached copy (R10, R128). Both methods come from
``JsonRecord`` (``_record_json``), which derives the format from the fields.
All IDs are integers from one global space shared by every kind (R-1.2):
conversation 1 is the root, minted IDs start at 2, and no ID is ever used by
two records of different kinds.

JSON keys are snake_case; optional fields (default ``None``) that are ``None``
are left out, after the fields that are always written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeAlias, TypeVar

from pi_durable_tui.storage._record_json import JsonRecord, json_codec
from pi_durable_tui.storage.json_ops import Json, JsonObject

ROOT_CONVERSATION_ID = 1
"""The reserved ID of the root conversation (R-1.2)."""

FIRST_MINTED_ID = 2
MAX_ID = 2**53 - 1
"""The largest ID; minting beyond it fails with ``ID space is exhausted``."""

RecordKind = Literal["conversation", "entry", "task", "submission", "document"]
TaskStatus = Literal["pending", "running", "waiting", "completing", "terminal"]
LIVE_TASK_STATUSES: tuple[TaskStatus, ...] = ("pending", "running", "waiting", "completing")
SubmissionType = Literal["input", "write"]
SubmissionStatus = Literal["queued", "placed", "done", "unanswered"]
History = Literal["latest", "rewindable"]
ForkPolicy = Literal["initial", "current", "asOf"]


@dataclass(frozen=True, slots=True)
class ForkPoint(JsonRecord):
    """Where a fork branches off: the parent conversation and the fork entry (inclusive)."""

    conversation_id: int
    at: int


@dataclass(frozen=True, slots=True)
class ConversationOwner(JsonRecord):
    """The task that owns a conversation, and that task's conversation (R-1.3)."""

    conversation_id: int
    task_id: int


@dataclass(frozen=True, slots=True)
class ConversationRecord(JsonRecord):
    """A conversation: an ID, an optional fork point and an optional owner. Immutable."""

    id: int
    parent: ForkPoint | None = field(
        default=None,
        metadata=json_codec(encode=JsonRecord.to_json, decode=ForkPoint.from_json),
    )
    owner: ConversationOwner | None = field(
        default=None,
        metadata=json_codec(encode=JsonRecord.to_json, decode=ConversationOwner.from_json),
    )


@dataclass(frozen=True, slots=True)
class EntryRecord(JsonRecord):
    """An immutable transcript entry (R-1.4).

    ``model`` holds the messages this entry contributes to model context, ``data``
    application JSON, ``head`` makes the entry a head marker (the first kept
    entry of the active range), ``edits`` are context edits, and ``by_task_id`` is
    stamped when a task's runtime commit appended it.
    """

    id: int
    conversation_id: int
    kind: str
    model: list[Json] | None = None
    data: Json = None
    head: int | None = None
    edits: list[Json] | None = None
    by_task_id: int | None = None


@dataclass(frozen=True, slots=True)
class TaskRecord(JsonRecord):
    """A durable task: a state machine attached to one conversation (R-1.6).

    ``state`` is a JSON object whose ``status`` is one of ``TaskStatus``:
    ``{"status": "pending"|"running", "checkpoint": {...}}``,
    ``{"status": "waiting", "checkpoint": {...}, "on": [ids], "policy": ...}`` (policy
    ``all_settled`` or ``fail_fast``),
    ``{"status": "completing"|"terminal", "outcome": {"status": ..., ...}}``.
    ``memos`` exist only while the task is live. Tasks are stored by whole-record
    replacement; ``conversation_id`` never changes (R12).
    """

    id: int
    conversation_id: int
    kind: str
    version: int
    input: Json = field(metadata=json_codec(missing_is_none=True))
    state: JsonObject
    owner: int | None = None
    background: bool = False
    abort_requested: bool = False
    started_at: float | None = None
    ended_at: float | None = None
    memos: JsonObject | None = None

    @property
    def status(self) -> TaskStatus:
        """The status of ``state``."""
        status: TaskStatus = self.state["status"]
        return status

    @property
    def is_live(self) -> bool:
        """Whether the task is not yet terminal."""
        return self.state["status"] != "terminal"


@dataclass(frozen=True, slots=True)
class SubmissionRecord(JsonRecord):
    """A durable host hand-off to one conversation (R-1.8).

    ``queued`` → ``placed`` (input) or ``done`` (write) → ``done`` / ``unanswered``;
    a settled record never changes again. Request IDs are unique per conversation.
    """

    id: int
    conversation_id: int
    type: SubmissionType
    status: SubmissionStatus
    request_id: str | None = None
    entry: int | None = None
    answer: int | None = None
    reason: str | None = None
    detail: Json = None


@dataclass(frozen=True, slots=True)
class SessionScope:
    """One document per session; current-only."""

    kind: Literal["session"] = "session"


@dataclass(frozen=True, slots=True)
class ConversationScope:
    """One document per conversation, with a history mode and a fork policy (R17)."""

    conversation_id: int
    history: History = "latest"
    fork: ForkPolicy = "initial"
    kind: Literal["conversation"] = "conversation"


@dataclass(frozen=True, slots=True)
class TaskScope:
    """One document per task; current-only, retired when the task ends (R56)."""

    task_id: int
    kind: Literal["task"] = "task"


DocScope: TypeAlias = SessionScope | ConversationScope | TaskScope


def scope_to_json(scope: DocScope) -> JsonObject:
    """Return a document scope as a JSON object."""
    if isinstance(scope, SessionScope):
        return {"kind": "session"}
    if isinstance(scope, ConversationScope):
        return {
            "kind": "conversation",
            "conversation_id": scope.conversation_id,
            "history": scope.history,
            "fork": scope.fork,
        }
    return {"kind": "task", "task_id": scope.task_id}


def scope_from_json(data: Any) -> DocScope:
    """Build a document scope from ``scope_to_json`` output."""
    kind = data["kind"]
    if kind == "session":
        return SessionScope()
    if kind == "conversation":
        return ConversationScope(data["conversation_id"], data["history"], data["fork"])
    if kind == "task":
        return TaskScope(data["task_id"])
    raise ValueError(f"unknown document scope {kind!r}")


@dataclass(frozen=True, slots=True)
class ScopeRef:
    """What a document is attached to: the session, a conversation, or a task.

    Unlike ``DocScope`` it carries no history or fork policy: it is the key part of
    a document address and the filter of document scans.
    """

    kind: Literal["session", "conversation", "task"]
    id: int | None = None

    @classmethod
    def of(cls, scope: DocScope) -> ScopeRef:
        """Return the reference of a full scope."""
        if isinstance(scope, SessionScope):
            return cls("session")
        if isinstance(scope, ConversationScope):
            return cls("conversation", scope.conversation_id)
        return cls("task", scope.task_id)


@dataclass(frozen=True, slots=True)
class DocAddress:
    """The logical address of a document: kind, what it is attached to, and family key."""

    kind: str
    scope: ScopeRef
    key: str | None = None


@dataclass(frozen=True, slots=True)
class DocumentRecord(JsonRecord):
    """One incarnation of a document (R-1.5).

    It is a member of the store from ``created_at`` (the seq of its creating
    commit) until ``retired_at`` (exclusive). Retiring and re-creating the same
    address makes a new incarnation with a new ID.
    """

    id: int
    kind: str
    scope: DocScope = field(metadata=json_codec(encode=scope_to_json, decode=scope_from_json))
    created_at: int
    key: str | None = None
    retired_at: int | None = None

    @property
    def address(self) -> DocAddress:
        """The logical address this incarnation occupies."""
        return DocAddress(self.kind, ScopeRef.of(self.scope), self.key)

    @property
    def current_only(self) -> bool:
        """Whether the incarnation keeps only its current content (R16, R20, R129).

        Session, task and ``latest`` conversation documents do; only ``rewindable``
        conversation documents keep their history.
        """
        scope = self.scope
        return not (isinstance(scope, ConversationScope) and scope.history == "rewindable")

    def alive_at(self, seq: int) -> bool:
        """Whether the incarnation is a member of the store at ``seq``."""
        return self.created_at <= seq and (self.retired_at is None or seq < self.retired_at)


@dataclass(frozen=True, slots=True)
class StoredEntry:
    """An entry together with the sequence number of the commit that stored it."""

    entry: EntryRecord
    commit_seq: int


@dataclass(frozen=True, slots=True)
class DocumentRead:
    """A document's content at a point: record, stored version, value, deltas since base."""

    record: DocumentRecord
    version: int
    value: JsonObject
    deltas_since_base: int


T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a scan and the cursor of the next page (``None`` at the end)."""

    items: list[T] = field(default_factory=list)
    cursor: JsonObject | None = None
