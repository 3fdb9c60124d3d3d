"""Task definitions, the states a phase may commit, and task-record helpers.

A durable task is a state machine attached to one conversation (reference
sections 1.6 and 2.5). Its definition (``define_task``) names the phases; each
phase is ``async def phase(task, runtime)`` and moves the task only through
``await runtime.commit(fn)``, where ``fn(tx)`` returns the next state:

- ``Running(checkpoint)``: continue at another (or the same) phase;
- ``Waiting(on=[...], policy=..., checkpoint=...)``: park until the tasks in ``on``
  are terminal (R51, R52);
- an outcome: ``Completed(result)``, ``Failed(message, detail, result)`` or
  ``Aborted(reason, result)``;
- ``None``: leave the state as it was.

The scheduler writes the two remaining outcomes itself: ``orphaned`` (no code can
take an aborted task, R49) and ``faulted`` (a bug or a phase without progress,
R37). Stored shapes (``TaskRecord.state``)::

    {"status": "pending" | "running", "checkpoint": {"phase": ..., ...}}
    {"status": "waiting", "checkpoint": {...}, "on": [ids], "policy": "all_settled" | "fail_fast"}
    {"status": "completing" | "terminal", "outcome": {"status": "completed", "result": ...}}
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from pi_durable_tui.storage.json_ops import Json, JsonObject, check_json, copy_json
from pi_durable_tui.storage.records import TaskRecord

if TYPE_CHECKING:
    from pi_durable_tui.kernel.runtime import TaskRuntime

WaitPolicy = Literal["all_settled", "fail_fast"]
OutcomeStatus = Literal["completed", "failed", "aborted", "orphaned", "faulted"]
BlockedReason = Literal["missing_task", "task_too_old", "migration_failed"]

PhaseHandler: TypeAlias = Callable[[TaskRecord, "TaskRuntime"], Awaitable[None]]
"""``async def phase(task, runtime)``: run one phase; commit progress through ``runtime``."""


@dataclass(frozen=True, slots=True)
class Running:
    """Continue running at ``checkpoint`` (a JSON object with a ``phase``)."""

    checkpoint: JsonObject


@dataclass(frozen=True, slots=True)
class Waiting:
    """Park until every task in ``on`` is terminal, then resume at ``checkpoint``."""

    on: Sequence[int]
    checkpoint: JsonObject
    policy: WaitPolicy = "all_settled"


@dataclass(frozen=True, slots=True)
class Completed:
    """The task succeeded with ``result``."""

    result: Json = None


@dataclass(frozen=True, slots=True)
class Failed:
    """The task failed; ``message`` is for people, ``detail`` for programs."""

    message: str
    detail: Json = None
    result: Json = None


@dataclass(frozen=True, slots=True)
class Aborted:
    """The task's abort handler ended it."""

    reason: str | None = None
    result: Json = None


TaskState: TypeAlias = Running | Waiting | Completed | Failed | Aborted
Outcome: TypeAlias = Completed | Failed | Aborted


def outcome_json(outcome: Outcome) -> JsonObject:
    """Return the stored JSON of a task-written outcome."""
    if isinstance(outcome, Completed):
        return {"status": "completed", "result": outcome.result}
    if isinstance(outcome, Failed):
        error: JsonObject = {"message": outcome.message}
        if outcome.detail is not None:
            error["detail"] = outcome.detail
        data: JsonObject = {"status": "failed", "error": error}
    else:
        data = {"status": "aborted"}
        if outcome.reason is not None:
            data["reason"] = outcome.reason
    if outcome.result is not None:
        data["result"] = outcome.result
    return data


def faulted_outcome(message: str) -> JsonObject:
    """Return the stored JSON of a scheduler-written ``faulted`` outcome (R37)."""
    return {"status": "faulted", "error": {"message": message}}


def orphaned_outcome(reason: str) -> JsonObject:
    """Return the stored JSON of a scheduler-written ``orphaned`` outcome (R49)."""
    return {"status": "orphaned", "reason": reason}


def is_scheduler_outcome(outcome: Mapping[str, Any]) -> bool:
    """Whether an outcome was written by the scheduler (gets cleanup, R45)."""
    return outcome.get("status") in ("faulted", "orphaned")


def has_cancellation_intent(record: TaskRecord) -> bool:
    """An abort mark, or a held outcome other than ``completed`` (R-1.7, R55)."""
    if not record.is_live:
        return False
    if record.abort_requested:
        return True
    state = record.state
    return state["status"] == "completing" and state["outcome"]["status"] != "completed"


def checkpoint_of(record: TaskRecord) -> JsonObject | None:
    """Return a live task's checkpoint, or ``None`` for a held or terminal task."""
    checkpoint = record.state.get("checkpoint")
    return checkpoint if isinstance(checkpoint, dict) else None


def phase_of(record: TaskRecord) -> str | None:
    """Return the phase named by a live task's checkpoint."""
    checkpoint = checkpoint_of(record)
    phase = None if checkpoint is None else checkpoint.get("phase")
    return phase if isinstance(phase, str) else None


def with_state(record: TaskRecord, state: JsonObject, **changes: Any) -> TaskRecord:
    """Return the record with a new state (and other field changes)."""
    return replace(record, state=state, **changes)


def check_checkpoint(checkpoint: object, what: str) -> JsonObject:
    """Return a checkpoint after checking it is a JSON object with a string ``phase``.

    Raises:
        TypeError: When it is not JSON, not an object, or lacks a phase.
    """
    if not isinstance(checkpoint, dict) or not isinstance(checkpoint.get("phase"), str):
        raise TypeError(f"{what} must be a JSON object with a string 'phase', got {checkpoint!r}")
    check_json(checkpoint, what)
    return copy_json(checkpoint)  # type: ignore[return-value]


AbortHandler: TypeAlias = Callable[[TaskRecord, "TaskRuntime"], Awaitable[None]]
"""``async def abort(task, runtime)``: commit a terminal outcome for an abort-marked task."""


@dataclass(frozen=True, eq=False)
class TaskDefinition:
    """A durable task kind. Build it with ``define_task``; compared by identity (R35)."""

    name: str
    version: int
    initial: Callable[[Json], JsonObject]
    phases: Mapping[str, PhaseHandler]
    abort: AbortHandler
    migrate: Callable[[Json, JsonObject, int], tuple[Json, JsonObject]] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def can_take(self, stored_version: int) -> bool:
        """Whether this definition can run a task stored at ``stored_version`` (R35, R44)."""
        return stored_version == self.version or (
            stored_version < self.version and self.migrate is not None
        )


def define_task(
    name: str,
    *,
    initial: Callable[[Json], JsonObject],
    phases: Mapping[str, PhaseHandler],
    abort: AbortHandler,
    version: int = 1,
    migrate: Callable[[Json, JsonObject, int], tuple[Json, JsonObject]] | None = None,
) -> TaskDefinition:
    """Define a durable task kind.

    Args:
        name: The task kind, unique in a registry (for example ``pi.tool``).
        initial: ``initial(input)`` returns the first checkpoint (``{"phase": ...}``).
        phases: Maps each phase name to ``async def phase(task, runtime)``.
        abort: ``async def abort(task, runtime)``; mandatory. It runs once, in a
            fresh invocation, after the task's ordinary owned work has drained,
            and must commit an outcome (R43).
        version: A positive integer.
        migrate: ``migrate(input, checkpoint, from_version)`` returns
            ``(input, checkpoint)`` at ``version`` (R44).

    Returns:
        The definition token.

    Raises:
        ValueError: For an empty name, a bad version, or no phases.
    """
    if not name:
        raise ValueError("Task name must be a non-empty string")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"Task {name} version must be a positive integer")
    if not phases:
        raise ValueError(f"Task {name} needs at least one phase")
    return TaskDefinition(
        name=name,
        version=version,
        initial=initial,
        phases=dict(phases),
        abort=abort,
        migrate=migrate,
    )


@dataclass(frozen=True, slots=True)
class ConversationOwned:
    """Ownership of a task by its conversation (optionally a background task)."""


@dataclass(frozen=True, slots=True)
class TaskOwned:
    """Ownership of a task or conversation by a live task."""

    task_id: int


@dataclass(frozen=True, slots=True)
class Ownerless:
    """A root conversation, owned by no task."""


TaskOwnership: TypeAlias = ConversationOwned | TaskOwned
ConversationOwnership: TypeAlias = Ownerless | TaskOwned
