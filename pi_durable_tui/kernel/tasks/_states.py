"""The states a task phase commits, and the stored JSON of outcomes (R37, R38, R49, R51).

A phase moves its task only through ``await runtime.commit(fn)``, where ``fn(tx)``
returns the next state:

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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from pi_durable_tui.storage.json_ops import Json, JsonObject

WaitPolicy = Literal["all_settled", "fail_fast"]
OutcomeStatus = Literal["completed", "failed", "aborted", "orphaned", "faulted"]


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
"""What a runtime commit callback may return to move its task (``None`` leaves it)."""

Outcome: TypeAlias = Completed | Failed | Aborted
"""The outcomes a task writes itself."""


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
