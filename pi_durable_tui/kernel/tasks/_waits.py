"""Waiting for tasks and for idleness, resolved by publications (R56, R58).

Waits are futures resolved by the publication of the commit that made their
condition true, never by polling storage (DESIGN.md section 3.1):

- ``wait_for_task(id)`` resolves with the terminal record, in the publication of
  the commit that wrote it, or at once for a task that is already terminal (R56);
- ``wait_until(condition)`` re-checks a condition over committed state after
  every commit and every ended invocation;
- ``wait_for_idle`` waits until ordinary traversal from a conversation, or from
  every ownerless conversation, finds no live non-background task (R58).
  Blocked, waiting, sleeping and ``completing`` tasks are live.

Cancelling a wait cancels only that waiter (DESIGN.md section 2), and a
cancelled waiter is forgotten at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pi_durable_tui.kernel._errors import TaskNotFound
from pi_durable_tui.kernel._publication import CommitInfo
from pi_durable_tui.kernel.tasks._host import TaskHost
from pi_durable_tui.kernel.tasks._ownership import conversation_busy_tasks, owner_chain
from pi_durable_tui.storage.records import TaskRecord


class Waits:
    """The task and condition waiters of one Session.

    Args:
        host: The Session whose committed state the conditions read.
    """

    def __init__(self, host: TaskHost) -> None:
        self._host = host
        self._task_waiters: dict[int, list[asyncio.Future[TaskRecord]]] = {}
        self._conditions: list[tuple[Callable[[], bool], asyncio.Future[None]]] = []

    def on_commit(self, info: CommitInfo) -> None:
        """Resolve the waiters a published commit satisfied."""
        for record in info.tasks:
            if not record.is_live:
                for future in self._task_waiters.pop(record.id, []):
                    if not future.done():
                        future.set_result(record)
        self.check_conditions()

    def check_conditions(self) -> None:
        """Resolve every condition waiter whose condition holds now."""
        remaining = []
        for condition, future in self._conditions:
            if future.done():
                continue
            if condition():
                future.set_result(None)
            else:
                remaining.append((condition, future))
        self._conditions = remaining

    async def wait_for_task(self, task_id: int) -> TaskRecord:
        """Return a task's terminal record, waiting for it while it is live (R56).

        Raises:
            TaskNotFound: For an unknown task.
            SessionClosed: When the Session closes first (or is closed).
        """
        record = await self._host.read_task(task_id)
        if record is None:
            raise TaskNotFound(task_id)
        if not record.is_live:
            return record
        self._host.check_usable()
        future: asyncio.Future[TaskRecord] = asyncio.get_running_loop().create_future()
        waiters = self._task_waiters.setdefault(task_id, [])
        waiters.append(future)
        try:
            return await future
        finally:
            if not future.done() or future.cancelled():
                self._forget(task_id, future)

    def _forget(self, task_id: int, future: asyncio.Future[TaskRecord]) -> None:
        waiters = self._task_waiters.get(task_id)
        if waiters is not None and future in waiters:
            waiters.remove(future)
            if not waiters:
                del self._task_waiters[task_id]

    async def wait_until(self, condition: Callable[[], bool]) -> None:
        """Wait until a condition over committed state holds (re-checked after each commit).

        Raises:
            SessionClosed: When the Session closes first (or is closed).
        """
        if condition():
            return
        self._host.check_usable()
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (condition, waiter)
        self._conditions.append(entry)
        try:
            await waiter
        finally:
            if entry in self._conditions and (not waiter.done() or waiter.cancelled()):
                self._conditions.remove(entry)

    async def wait_for_idle(self, conversation_id: int | None = None) -> None:
        """Wait until a conversation (or every ownerless conversation) is idle (R58)."""
        live = self._host.live
        if conversation_id is None:
            await self.wait_until(self.harness_idle)
        else:
            await self.wait_until(lambda: not conversation_busy_tasks(live, conversation_id))

    def harness_idle(self) -> bool:
        """Whether no live non-background task is reachable from an ownerless conversation.

        A task is reachable when its owner chain (owner tasks and owning
        conversations) reaches an ownerless conversation through live,
        non-background tasks (R-1.7).
        """
        live = self._host.live
        for record in live.tasks():
            if record.background:
                continue
            chain = list(owner_chain(live, record))
            if any(owner.background for owner in chain):
                continue
            top = chain[-1] if chain else record
            if live.conversation_owner(top.conversation_id) is None:
                return False
        return True

    def fail_all(self, error: BaseException) -> None:
        """Fail every waiter (the Session closed or failed)."""
        for futures in self._task_waiters.values():
            for future in futures:
                if not future.done():
                    future.set_exception(error)
        self._task_waiters.clear()
        for _, waiter in self._conditions:
            if not waiter.done():
                waiter.set_exception(error)
        self._conditions.clear()
