"""Derived task changes, committed apart from the commits that caused them.

Some consequences of a commit are never written in that commit itself (R48):
they are derived afterwards, in a *reconcile* commit, and again at open so a
crash cannot lose them:

- cascade abort marks on live non-background work below an owner with
  cancellation intent (R48), and the withdrawal of queued inputs in the
  conversations the cascade reaches (through ``SessionHooks``);
- ``fail_fast`` waits: once a member of ``on`` holds or ends with an outcome
  other than ``completed``, every other live member gets an abort mark (R52);
- held (``completing``) tasks whose ordinary owned work drained become terminal;
  a held scheduler-written outcome gets its cleanup now (R53, R54).

``block_reason`` says why a definition cannot take a pending or waiting task
(R44): blocked is derived, never stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pi_durable_tui.kernel.ownership import (
    cascade_targets,
    ordinary_owned_work,
    traverse_conversation,
)
from pi_durable_tui.kernel.tasks import (
    BlockedReason,
    TaskDefinition,
    has_cancellation_intent,
    is_scheduler_outcome,
    with_state,
)
from pi_durable_tui.storage.records import TaskRecord

if TYPE_CHECKING:
    from pi_durable_tui.kernel.session import Session
    from pi_durable_tui.kernel.tx import Tx


@dataclass(frozen=True, slots=True)
class Blocked:
    """Why no definition can take a task now (R44)."""

    reason: BlockedReason
    message: str
    error: BaseException | None = None
    definition_id: int = 0
    """``id()`` of the definition that failed to migrate; retried only for another one."""


def block_reason(
    record: TaskRecord, definition: TaskDefinition | None, previous: Blocked | None
) -> Blocked | None:
    """Return why ``definition`` cannot take ``record``, or ``None`` when it can (R44)."""
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
            definition_id=id(definition),
        )
    if (
        previous is not None
        and previous.reason == "migration_failed"
        and previous.definition_id == id(definition)
    ):
        return previous
    return None


def _conversations_below(session: Session, record: TaskRecord) -> set[int]:
    live = session.live
    found: set[int] = set()
    stack = [record.id]
    while stack:
        task_id = stack.pop()
        stack.extend(live.children(task_id))
        for conversation_id in live.owned_conversations(task_id):
            if conversation_id in found:
                continue
            found.add(conversation_id)
            stack.extend(r.id for r in traverse_conversation(live, conversation_id))
    return found


async def _fail_fast_marks(session: Session) -> list[TaskRecord]:
    live = session.live
    marks: dict[int, TaskRecord] = {}
    for waiter in live.tasks():
        state = waiter.state
        if state["status"] != "waiting" or state.get("policy") != "fail_fast":
            continue
        on: list[int] = state["on"]  # type: ignore[assignment]
        failed = False
        for member in on:
            record = live.task(member) or await session.storage.task(member)
            if record is None:
                continue
            outcome = record.state.get("outcome")
            if isinstance(outcome, dict) and outcome.get("status") != "completed":
                failed = True
                break
        if not failed:
            continue
        for member in on:
            record = live.task(member)
            if record is not None and not record.abort_requested and record.status != "completing":
                marks[member] = record
    return list(marks.values())


async def reconcile_once(session: Session, cancelled: set[int]) -> bool:
    """Commit every derived change due now; return whether task records changed.

    Args:
        session: The Session.
        cancelled: Conversations whose queued inputs were already withdrawn; new
            ones are added.
    """
    changed = [False]

    async def apply(tx: Tx) -> None:
        live = session.live
        marks = {r.id: r for r in cascade_targets(live)}
        for record in await _fail_fast_marks(session):
            marks.setdefault(record.id, record)
        for record in marks.values():
            tx.put_task(with_state(record, record.state, abort_requested=True))
        now = session.clock.now()
        for record in live.tasks():
            if record.status != "completing" or ordinary_owned_work(live, record.id):
                continue
            current = tx.candidate_task(record.id) or record
            outcome = current.state["outcome"]
            final = with_state(
                current, {"status": "terminal", "outcome": outcome}, memos=None, ended_at=now
            )
            tx.put_task(final)
            if is_scheduler_outcome(outcome):  # type: ignore[arg-type]
                await session.hooks.scheduler_outcome(tx, final, outcome)  # type: ignore[arg-type]
        changed[0] = bool(tx.tasks)
        reached: set[int] = set()
        for record in live.tasks():
            candidate = tx.candidate_task(record.id) or record
            if has_cancellation_intent(candidate):
                reached |= _conversations_below(session, candidate)
        fresh = sorted(reached - cancelled)
        if fresh:
            await session.hooks.conversations_cancelled(tx, fresh)
            cancelled.update(fresh)

    await session.run_commit(apply)
    return changed[0]
