"""Task definitions: ``define_task`` and ``TaskDefinition`` (reference 1.6, R35, R43, R44).

A durable task is a state machine attached to one conversation. Its definition
names the phases; each phase is ``async def phase(task, runtime)`` and moves the
task only through ``await runtime.commit(fn)`` (the states ``fn`` may return are
in ``_states``). The abort handler is mandatory: it runs once, in a fresh
invocation, after the task's ordinary owned work has drained (R43, R47).

Definitions compare by identity: installing a new definition object for a kind
is how hot reload is noticed (R35). A definition can take a task stored at its
own version, or at an older one when it has ``migrate`` (R44).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TypeAlias

from pi_durable_tui.kernel.tasks._records import check_checkpoint
from pi_durable_tui.kernel.tasks._runtime import TaskRuntime
from pi_durable_tui.storage.json_ops import Json, JsonObject, copy_json
from pi_durable_tui.storage.records import TaskRecord

PhaseHandler: TypeAlias = Callable[[TaskRecord, TaskRuntime], Awaitable[None]]
"""``async def phase(task, runtime)``: run one phase; commit progress through ``runtime``."""

AbortHandler: TypeAlias = Callable[[TaskRecord, TaskRuntime], Awaitable[None]]
"""``async def abort(task, runtime)``: commit a terminal outcome for an abort-marked task."""

Migration: TypeAlias = Callable[[Json, JsonObject, int], tuple[Json, JsonObject]]
"""``migrate(input, checkpoint, from_version)`` returns ``(input, checkpoint)`` now."""


@dataclass(frozen=True, eq=False)
class TaskDefinition:
    """A durable task kind. Build it with ``define_task``; compared by identity (R35)."""

    name: str
    version: int
    initial: Callable[[Json], JsonObject]
    phases: Mapping[str, PhaseHandler]
    abort: AbortHandler
    migrate: Migration | None = None

    def can_take(self, stored_version: int) -> bool:
        """Whether this definition can run a task stored at ``stored_version`` (R35, R44)."""
        return stored_version == self.version or (
            stored_version < self.version and self.migrate is not None
        )

    def first_checkpoint(self, task_input: Json) -> JsonObject:
        """Return the checkpoint a new task starts at: ``initial(input)``, checked.

        Raises:
            TypeError: When ``initial`` does not return a JSON object with a string phase.
        """
        return check_checkpoint(self.initial(copy_json(task_input)), f"{self.name} initial()")


def define_task(
    name: str,
    *,
    initial: Callable[[Json], JsonObject],
    phases: Mapping[str, PhaseHandler],
    abort: AbortHandler,
    version: int = 1,
    migrate: Migration | None = None,
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
