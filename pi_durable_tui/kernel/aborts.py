"""Explicit aborts: one task, or a conversation's work (R46, R49, R57).

An abort is durable first: one commit writes the abort marks, and only then are
running invocations signalled. The abort handler of a marked task runs later,
in a fresh invocation, once its ordinary owned work has drained (R47); work
below a marked task is marked by the cascade in a later reconcile commit (R48).

- ``abort_task(id)``: ``"terminal"`` for an ended task; otherwise mark it, signal
  and join its run invocation, and return ``"marked"`` without waiting for the
  outcome. A task no definition can take, with no invocation and no live
  ordinary owned work, is settled ``orphaned`` by the marking commit itself
  (R46, R49). A ``completing`` task is only marked: it keeps its held outcome
  and its abort handler never runs.
- ``abort_conversation(id, background=...)``: one commit marks every live task
  that traversal from the conversation reaches (ordinary traversal skips
  background tasks; ``background=True`` crosses them) and tells the harness
  which conversations to withdraw queued inputs from; then it waits for the
  conversation to be idle (and, with ``background``, for every marked task).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from pi_durable_tui.kernel.errors import TaskNotFound
from pi_durable_tui.kernel.ownership import conversation_busy_tasks, traverse_conversation
from pi_durable_tui.kernel.resolution import Blocked
from pi_durable_tui.kernel.tasks import orphaned_outcome, with_state

if TYPE_CHECKING:
    from pi_durable_tui.kernel.scheduler import Scheduler
    from pi_durable_tui.kernel.tx import Tx


async def abort_task(scheduler: Scheduler, task_id: int) -> Literal["terminal", "marked"]:
    """Mark a task for abort, signal and join its run invocation (R46).

    Returns:
        ``"terminal"`` when the task had already ended, else ``"marked"``.

    Raises:
        TaskNotFound: For an unknown task.
    """
    session = scheduler.session
    session.check_usable()
    record = await session.read_task(task_id)
    if record is None:
        raise TaskNotFound(task_id)
    if not record.is_live:
        return "terminal"
    ended = [False]

    async def mark(tx: Tx) -> None:
        current = tx.candidate_task(task_id)
        if current is None:  # it ended while this call waited for the line
            ended[0] = True
            return
        if not current.abort_requested:
            current = with_state(current, current.state, abort_requested=True)
            tx.put_task(current)
        decision = scheduler.decide(current)
        if isinstance(decision, Blocked):  # no code can take it: orphan it now (R49)
            await scheduler.write_scheduler_outcome(tx, current, orphaned_outcome(decision.reason))

    await session.run_commit(mark)
    if ended[0]:
        return "terminal"
    invocation = scheduler.invocations.get(task_id)
    if invocation is not None and invocation.mode == "run":
        scheduler.invocations.signal(invocation)
        await scheduler.invocations.join(invocation)
    scheduler.wake_if_enabled()
    return "marked"


async def abort_conversation(
    scheduler: Scheduler,
    conversation_id: int,
    *,
    background: bool = False,
    also: Callable[[Tx], Any] | None = None,
) -> None:
    """Mark a conversation's work for abort, then wait for it to stop (R57).

    Args:
        scheduler: The Session's scheduler.
        conversation_id: The conversation.
        background: Cross background boundaries, and wait for every marked task.
        also: Extra writes in the marking commit.
    """
    session = scheduler.session
    session.check_usable()
    marked: list[int] = []
    reached: set[int] = set()

    async def mark(tx: Tx) -> None:
        marked.clear()
        reached.clear()
        reached.add(conversation_id)
        for record in traverse_conversation(session.live, conversation_id, background):
            if record.background and not background:
                continue  # visited by ordinary traversal, but only an explicit abort marks it
            reached.update(session.live.owned_conversations(record.id))
            marked.append(record.id)
            if not record.abort_requested:
                tx.put_task(with_state(record, record.state, abort_requested=True))
        await session.hooks.conversations_cancelled(tx, sorted(reached))
        if also is not None:
            result = also(tx)
            if asyncio.iscoroutine(result):
                await result
        # REMINDER: noted on the line, before any reconcile commit can run, so the
        # cascade does not withdraw these conversations' inputs a second time. Had
        # this commit failed, no mark would exist and the next reconcile forgets them.
        scheduler.cancelled_conversations.update(reached)

    await session.run_commit(mark)
    scheduler.resume()
    live = session.live
    await scheduler.waits.wait_until(
        lambda: (
            not conversation_busy_tasks(live, conversation_id)
            and (not background or all(live.task(i) is None for i in marked))
        )
    )
