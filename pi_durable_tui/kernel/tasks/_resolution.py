"""Which definition takes a task: blocked reasons, migrations, reports (R35, R44).

At every reservation (and at every phase boundary, for hot reload) the scheduler
asks the registry for the definition of a task's kind. The definition can take
the task when its version equals the stored one, or is higher and has a
``migrate``; otherwise the task is *blocked*, a derived status that is never
stored (R-1.6, R44):

- ``missing_task``: no definition of that kind is registered;
- ``task_too_old``: the stored version is newer than the definition;
- ``migration_failed``: a newer definition has no ``migrate``, or its ``migrate``
  threw (retried only once the registry resolves a *different* definition object).

Each problem is reported once per task, reason and definition object through
the Session's ``on_report``; publishing a new definition makes it worth
reporting again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pi_durable_tui.kernel._hooks import Report
from pi_durable_tui.kernel.tasks._definitions import TaskDefinition
from pi_durable_tui.kernel.tasks._records import check_checkpoint
from pi_durable_tui.kernel.tasks._registry import TaskRegistry
from pi_durable_tui.storage.json_ops import Json, JsonObject, check_json, copy_json
from pi_durable_tui.storage.records import TaskRecord

BlockedReason = Literal["missing_task", "task_too_old", "migration_failed"]


@dataclass(frozen=True, slots=True)
class Blocked:
    """Why no definition can take a task now (R44)."""

    reason: BlockedReason
    message: str
    error: BaseException | None = None
    definition: TaskDefinition | None = None
    """The definition whose ``migrate`` threw; only another object is tried again."""


def block_reason(
    record: TaskRecord, definition: TaskDefinition | None, previous: Blocked | None
) -> Blocked | None:
    """Return why ``definition`` cannot take ``record``, or ``None`` when it can (R44).

    Args:
        record: A live task.
        definition: What the registry resolves for its kind now.
        previous: What blocked the task before; a failed migration stays blocked
            while the registry still resolves the same definition object.
    """
    if definition is None:
        return Blocked("missing_task", f"Task kind {record.kind} is not registered")
    if record.version > definition.version:
        return Blocked(
            "task_too_old",
            f"Task {record.id} is stored at version {record.version}, newer than the "
            f"definition of {record.kind} (version {definition.version})",
        )
    if record.version < definition.version and definition.migrate is None:
        return Blocked(
            "migration_failed",
            f"Task {record.id} is stored at version {record.version} and the definition of "
            f"{record.kind} (version {definition.version}) has no migrate",
            definition=definition,
        )
    if (
        previous is not None
        and previous.reason == "migration_failed"
        and previous.definition is definition
    ):
        return previous
    return None


def migrate_task(
    record: TaskRecord, checkpoint: JsonObject, definition: TaskDefinition
) -> tuple[Json, JsonObject]:
    """Return the task's ``(input, checkpoint)`` at the definition's version (R44).

    ``migrate`` receives copies, so a migration that mutates its arguments cannot
    change the committed record.

    Raises:
        Exception: Whatever ``migrate`` raised, or ``TypeError`` when it returned
            something that is not JSON or a checkpoint without a phase.
    """
    if record.version == definition.version:
        return record.input, checkpoint
    assert definition.migrate is not None, "block_reason admits no migration without migrate"
    migrated = definition.migrate(copy_json(record.input), copy_json(checkpoint), record.version)  # type: ignore[arg-type]
    if not isinstance(migrated, tuple) or len(migrated) != 2:
        raise TypeError(f"{definition.name} migrate() must return (input, checkpoint)")
    task_input, new_checkpoint = migrated
    check_json(task_input, f"{definition.name} migrate() input")
    return copy_json(task_input), check_checkpoint(
        new_checkpoint, f"{definition.name} migrate() checkpoint"
    )


class Resolution:
    """Blocked tasks of one Session, and the problems already reported.

    Args:
        registry: The definitions tasks resolve against.
        report: Receives the problems (the Session's ``on_report``).
    """

    def __init__(self, registry: TaskRegistry, report: Callable[[Report], None]) -> None:
        self.registry = registry
        self._report = report
        self.blocked: dict[int, Blocked] = {}
        """Live tasks no definition can take now, by task ID (derived, never stored)."""
        self._reported: dict[int, list[tuple[str, TaskDefinition | None]]] = {}

    def check(self, record: TaskRecord) -> tuple[TaskDefinition | None, Blocked | None]:
        """Return the definition the registry resolves for a task and what blocks it."""
        definition = self.registry.get(record.kind)
        return definition, block_reason(record, definition, self.blocked.get(record.id))

    def note_blocked(self, record: TaskRecord, blocked: Blocked) -> None:
        """Remember that a task is blocked, and report it once per reason and definition."""
        self.blocked[record.id] = blocked
        definition = blocked.definition or self.registry.get(record.kind)
        if self._first_time(record.id, blocked.reason, definition):
            self._report(Report(blocked.reason, blocked.message, blocked.error, record.id))

    def note_migration_failed(
        self, record: TaskRecord, definition: TaskDefinition, error: BaseException
    ) -> None:
        """Block a task whose migration threw until another definition is published."""
        message = f"Task {record.id} migration to version {definition.version} failed: {error!r}"
        self.note_blocked(record, Blocked("migration_failed", message, error, definition))

    def unblocked(self, task_id: int) -> None:
        """Forget what blocked a task that a definition has taken."""
        self.blocked.pop(task_id, None)

    def report_handover_refused(self, record: TaskRecord, current: TaskDefinition | None) -> None:
        """Report, once per resolved definition, that a running task keeps its definition (R35)."""
        if not self._first_time(record.id, "handover_refused", current):
            return
        if current is None:
            why = f"{record.kind} is no longer registered"
        else:
            why = (
                f"the new definition of {record.kind} (version {current.version}) "
                f"cannot take version {record.version}"
            )
        self._report(
            Report(
                "handover_refused",
                f"Task {record.id} keeps its running definition: {why}",
                task_id=record.id,
            )
        )

    def forget(self, task_id: int) -> None:
        """Drop everything known about a task that became terminal."""
        self.blocked.pop(task_id, None)
        self._reported.pop(task_id, None)

    def _first_time(self, task_id: int, code: str, definition: TaskDefinition | None) -> bool:
        # Definitions are kept (not their id()) so a collected object's id cannot be
        # mistaken for a new definition's.
        seen = self._reported.setdefault(task_id, [])
        if any(c == code and d is definition for c, d in seen):
            return False
        seen.append((code, definition))
        return True
