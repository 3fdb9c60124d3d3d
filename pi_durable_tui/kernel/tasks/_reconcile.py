"""Derived task changes, committed apart from the commits that caused them.

Some consequences of a commit are never written in that commit itself (R48):
they are derived afterwards, in a *reconcile* commit, and again at open so a
crash cannot lose them:

- cascade abort marks on live non-background work below an owner with
  cancellation intent (R48), and the withdrawal of queued inputs in the
  conversations the cascade reaches (through ``SessionHooks``);
- ``fail_fast`` waits: once a member of ``on`` holds or ends with an outcome
  other than ``completed``, every other live member gets an abort mark (R52);
- held (``completing``) tasks whose ordinary owned work drained become terminal
  (R53). A held task-written outcome becomes final in the reconcile commit; a
  held scheduler-written one (``faulted``, ``orphaned``) in a commit of its own
  (``finish_scheduler_hold``), with the cleanup hook (R54), so a hook that fails
  holds back only its own task (R45).

Queued inputs are withdrawn once per conversation while a cascade reaches it:
``cancelled`` remembers the conversations already handed to the hook, and
forgets those no cascade reaches any more, so a later cascade through the same
conversation withdraws again.
"""

from __future__ import annotations

from pi_durable_tui.kernel._staging import StagedCommit
from pi_durable_tui.kernel._tx import Tx
from pi_durable_tui.kernel.tasks._host import TaskHost
from pi_durable_tui.kernel.tasks._ownership import (
    LiveIndex,
    cascade_targets,
    ordinary_owned_work,
    traverse_conversation,
)
from pi_durable_tui.kernel.tasks._records import (
    ended,
    has_cancellation_intent,
    is_scheduler_outcome,
    with_state,
)
from pi_durable_tui.storage.records import TaskRecord


def _conversations_below(live: LiveIndex, record: TaskRecord) -> set[int]:
    """Conversations a cascade from ``record`` reaches: strictly below it (R48).

    The walk follows owned tasks and owned conversations, and stops at background
    tasks (a boundary without intent of its own; one with intent is a cascade
    source itself).
    """
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


async def _fail_fast_marks(host: TaskHost) -> list[TaskRecord]:
    """Live members of ``fail_fast`` waits to mark because another member failed (R52).

    The first member (in ``on`` order) that holds or ended with an outcome other
    than ``completed`` keeps its outcome unmarked; every other live member gets a
    mark, a held one included (its own owned work is then cancelled). The waiter
    itself is never marked.
    """
    live = host.live
    marks: dict[int, TaskRecord] = {}
    for waiter in live.tasks():
        state = waiter.state
        if state["status"] != "waiting" or state.get("policy") != "fail_fast":
            continue
        on: list[int] = state["on"]
        failed: int | None = None
        for member in on:
            record = live.task(member) or await host.storage.task(member)
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


def _drained_holds(live: LiveIndex) -> list[TaskRecord]:
    """Held tasks whose ordinary owned work is no longer live (R53)."""
    return [
        record
        for record in live.tasks()
        if record.status == "completing" and not ordinary_owned_work(live, record.id)
    ]


async def reconcile_once(host: TaskHost, cancelled: set[int]) -> bool:
    """Commit every derived change due now; return whether task records changed.

    Args:
        host: The Session.
        cancelled: Conversations whose queued inputs were withdrawn while a
            cascade reaches them. Updated once the commit has landed: new ones
            are added, ones no cascade reaches any more are dropped.
    """
    idle = _reached_when_idle(host.live)
    if idle is not None and not idle - cancelled:
        # Nothing to commit: an idle check costs no run of the commit line. Read off
        # the line, this is safe because any commit that makes something due wakes
        # the scheduler for another pass, whose reconcile sees it.
        cancelled.intersection_update(idle)
        return False
    changed = [False]
    reached: set[int] = set()

    async def apply(staged: StagedCommit) -> None:
        live = host.live
        marks = {r.id: r for r in cascade_targets(live)}
        for record in await _fail_fast_marks(host):
            marks.setdefault(record.id, record)
        for record in marks.values():
            staged.put_task(with_state(record, record.state, abort_requested=True))
        now = host.clock.now()
        for record in _drained_holds(live):
            current = staged.candidate_task(record.id) or record
            outcome = current.state["outcome"]
            if is_scheduler_outcome(outcome):
                continue  # final in a commit of its own, with its cleanup
            staged.put_task(ended(current, outcome, now))
        changed[0] = bool(staged.tasks)
        reached.clear()
        for record in live.tasks():
            candidate = staged.candidate_task(record.id) or record
            if has_cancellation_intent(candidate):
                reached.update(_conversations_below(live, candidate))
        fresh = sorted(reached - cancelled)
        if fresh:
            await host.hooks.conversations_cancelled(Tx(staged), fresh)

    await host.run(apply)
    # REMINDER: only after the commit landed; a failed commit withdrew nothing.
    cancelled.intersection_update(reached)
    cancelled.update(reached)
    return changed[0]


def _reached_when_idle(live: LiveIndex) -> set[int] | None:
    """The conversations cancellations reach, when no mark or hold is due; else ``None``.

    Conservative: a ``fail_fast`` wait (whose members may need a storage read) counts
    as due, so ``reconcile_once`` decides it on the line.
    """
    if cascade_targets(live) or _drained_holds(live):
        return None
    reached: set[int] = set()
    for record in live.tasks():
        state = record.state
        if state["status"] == "waiting" and state.get("policy") == "fail_fast":
            return None
        if has_cancellation_intent(record):
            reached.update(_conversations_below(live, record))
    return reached


def scheduler_holds(live: LiveIndex) -> list[int]:
    """Held scheduler-written outcomes whose owned work drained: due to become final."""
    return [r.id for r in _drained_holds(live) if is_scheduler_outcome(r.state["outcome"])]


async def finish_scheduler_hold(host: TaskHost, task_id: int) -> bool:
    """Make a held ``faulted`` or ``orphaned`` outcome final, with its cleanup (R45, R54).

    Returns:
        Whether the task became terminal (it may have changed meanwhile).

    Raises:
        Exception: Whatever the cleanup hook raised; nothing was written.
    """

    async def finish(staged: StagedCommit) -> bool:
        record = staged.candidate_task(task_id)
        if record is None or record.status != "completing":
            return False
        if ordinary_owned_work(host.live, task_id):
            return False
        outcome = record.state["outcome"]
        final = ended(record, outcome, host.clock.now())
        staged.put_task(final)
        await host.hooks.scheduler_outcome(Tx(staged), final, outcome)
        return True

    return await host.run(finish)
