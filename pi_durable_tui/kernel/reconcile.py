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

Queued inputs are withdrawn once per conversation while a cascade reaches it:
``cancelled`` remembers the conversations already handed to the hook, and
forgets those no cascade reaches any more, so a later cascade through the same
conversation withdraws again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_durable_tui.kernel.ownership import (
    cascade_targets,
    ordinary_owned_work,
    traverse_conversation,
)
from pi_durable_tui.kernel.tasks import (
    has_cancellation_intent,
    is_scheduler_outcome,
    with_state,
)
from pi_durable_tui.storage.records import TaskRecord

if TYPE_CHECKING:
    from pi_durable_tui.kernel.session import Session
    from pi_durable_tui.kernel.tx import Tx


def _conversations_below(session: Session, record: TaskRecord) -> set[int]:
    """Conversations a cascade from ``record`` reaches: strictly below it (R48).

    The walk follows owned tasks and owned conversations, and stops at background
    tasks (a boundary without intent of its own; one with intent is a cascade
    source itself).
    """
    live = session.live
    found: set[int] = set()
    stack = [record.id]
    while stack:
        task_id = stack.pop()
        stack.extend(live.children(task_id))  # owned tasks are never background (R11)
        for conversation_id in live.owned_conversations(task_id):
            if conversation_id in found:
                continue
            found.add(conversation_id)
            stack.extend(
                r.id for r in traverse_conversation(live, conversation_id) if not r.background
            )
    return found


async def _fail_fast_marks(session: Session) -> list[TaskRecord]:
    """Live members of ``fail_fast`` waits to mark because another member failed (R52).

    The first member (in ``on`` order) that holds or ended with an outcome other
    than ``completed`` keeps its outcome unmarked; every other live member gets a
    mark, a held one included (its own owned work is then cancelled). The waiter
    itself is never marked.
    """
    live = session.live
    marks: dict[int, TaskRecord] = {}
    for waiter in live.tasks():
        state = waiter.state
        if state["status"] != "waiting" or state.get("policy") != "fail_fast":
            continue
        on: list[int] = state["on"]
        failed: int | None = None
        for member in on:
            record = live.task(member) or await session.storage.task(member)
            outcome = None if record is None else record.state.get("outcome")
            if isinstance(outcome, dict) and outcome.get("status") != "completed":
                failed = member
                break
        if failed is None:
            continue
        for member in on:
            record = live.task(member)
            if member != failed and record is not None and not record.abort_requested:
                marks[member] = record
    return list(marks.values())


async def reconcile_once(session: Session, cancelled: set[int]) -> bool:
    """Commit every derived change due now; return whether task records changed.

    Args:
        session: The Session.
        cancelled: Conversations whose queued inputs were withdrawn while a
            cascade reaches them. Updated once the commit has landed: new ones
            are added, ones no cascade reaches any more are dropped.
    """
    changed = [False]
    reached: set[int] = set()

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
            if is_scheduler_outcome(outcome):
                await session.hooks.scheduler_outcome(tx, final, outcome)
        changed[0] = bool(tx.tasks)
        reached.clear()
        for record in live.tasks():
            candidate = tx.candidate_task(record.id) or record
            if has_cancellation_intent(candidate):
                reached.update(_conversations_below(session, candidate))
        fresh = sorted(reached - cancelled)
        if fresh:
            await session.hooks.conversations_cancelled(tx, fresh)

    await session.run_commit(apply)
    # REMINDER: only after the commit landed; a failed commit withdrew nothing.
    cancelled.intersection_update(reached)
    cancelled.update(reached)
    return changed[0]
