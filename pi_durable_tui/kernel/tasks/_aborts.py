"""Explicit aborts and orphaning: one task, or a conversation's work (R46, R49, R57).

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
- ``mark_conversation(id, background=...)``: one commit marks every live task
  that traversal from the conversation reaches (ordinary traversal skips
  background tasks; ``background=True`` crosses them) and tells the harness
  which conversations to withdraw queued inputs from (R57). Waiting for the
  conversation to stop is the scheduler's part.
- ``orphan(id)``: the scheduler found an abort-marked task no definition can
  take once its owned work drained; the orphaning commit re-decides on the line.

Orphaning runs the cleanup hook (R45). When that fails, the task is marked
anyway (the mark must not depend on the harness's cleanup) and is orphaned
later, after a backoff (``_backoff``).
"""

from __future__ import annotations

from typing import Literal

from pi_durable_tui.kernel._errors import TaskNotFound
from pi_durable_tui.kernel._staging import StagedCommit
from pi_durable_tui.kernel._tx import Tx
from pi_durable_tui.kernel.tasks._backoff import WriteBackoff
from pi_durable_tui.kernel.tasks._host import TaskHost
from pi_durable_tui.kernel.tasks._invocations import Invocations
from pi_durable_tui.kernel.tasks._ownership import ordinary_owned_work, traverse_conversation
from pi_durable_tui.kernel.tasks._records import with_state
from pi_durable_tui.kernel.tasks._resolution import Blocked, Resolution
from pi_durable_tui.kernel.tasks._states import orphaned_outcome
from pi_durable_tui.kernel.tasks._transitions import write_scheduler_outcome
from pi_durable_tui.storage.records import TaskRecord


class Aborts:
    """Abort marks and orphaning for one Session's tasks.

    Args:
        host: The Session.
        invocations: The active invocations (signalled and joined on abort).
        resolution: Says whether a definition can take a task (R44).
        backoff: Holds back tasks whose cleanup failed (R45).
    """

    def __init__(
        self,
        host: TaskHost,
        invocations: Invocations,
        resolution: Resolution,
        backoff: WriteBackoff,
    ) -> None:
        self._host = host
        self._invocations = invocations
        self._resolution = resolution
        self._backoff = backoff
        self.cancelled_conversations: set[int] = set()
        """Conversations whose queued inputs were withdrawn while a cascade reaches them."""

    def orphan_reason(self, record: TaskRecord) -> Blocked | None:
        """Why an abort-marked task must be orphaned now, or ``None`` (R46, R49).

        It must when no invocation runs it, no ordinary owned work of it is live,
        and no definition can take it.
        """
        if not record.abort_requested or record.status == "completing":
            return None
        if record.id in self._invocations or ordinary_owned_work(self._host.live, record.id):
            return None
        _, blocked = self._resolution.check(record)
        return blocked

    async def abort_task(self, task_id: int) -> Literal["terminal", "marked"]:
        """Mark a task for abort, signal and join its run invocation (R46).

        Returns:
            ``"terminal"`` when the task had already ended, else ``"marked"``.

        Raises:
            TaskNotFound: For an unknown task.
        """
        host = self._host
        host.check_usable()
        record = await host.read_task(task_id)
        if record is None:
            raise TaskNotFound(task_id)
        if not record.is_live:
            return "terminal"
        live: bool | None = None
        if self._backoff.due(task_id):
            live = await self._backoff.guard(task_id, self._mark(task_id, orphan=True))
        if live is None:  # the orphaning cleanup failed, or waits: mark only (R45)
            live = await self._mark(task_id, orphan=False)
        if not live:
            return "terminal"
        invocation = self._invocations.get(task_id)
        if invocation is not None and invocation.mode == "run":
            self._invocations.signal(invocation)
            await self._invocations.join(invocation)
        return "marked"

    async def _mark(self, task_id: int, *, orphan: bool) -> bool:
        """Commit a task's abort mark, orphaning it when ``orphan`` and it must be.

        Returns:
            Whether the task was live (it may have ended while the call waited).
        """
        host = self._host

        async def mark(staged: StagedCommit) -> bool:
            current = staged.candidate_task(task_id)
            if current is None:  # it ended while this call waited for the line
                return False
            if not current.abort_requested:
                current = with_state(current, current.state, abort_requested=True)
                staged.put_task(current)
            blocked = self.orphan_reason(current) if orphan else None
            if blocked is not None:  # no code can take it: orphan it now (R49)
                outcome = orphaned_outcome(blocked.reason)
                await write_scheduler_outcome(host, staged, current, outcome)
            return True

        return await host.run(mark)

    async def mark_conversation(self, conversation_id: int, *, background: bool) -> list[int]:
        """Mark a conversation's work for abort in one commit (R57).

        Args:
            conversation_id: The conversation.
            background: Cross background boundaries.

        Returns:
            The IDs of the tasks the commit marked (or found marked).
        """
        host = self._host
        host.check_usable()
        marked: list[int] = []
        reached: set[int] = set()

        async def mark(staged: StagedCommit) -> None:
            marked.clear()
            reached.clear()
            reached.add(conversation_id)
            live = host.live
            for record in traverse_conversation(live, conversation_id, background):
                if record.background and not background:
                    continue  # visited by ordinary traversal, but only an explicit abort marks it
                reached.update(live.owned_conversations(record.id))
                marked.append(record.id)
                if not record.abort_requested:
                    staged.put_task(with_state(record, record.state, abort_requested=True))
            await host.hooks.conversations_cancelled(Tx(staged), sorted(reached))
            # REMINDER: noted on the line, before any reconcile commit can run, so the
            # cascade does not withdraw these conversations' inputs a second time. Had
            # this commit failed, no mark would exist and the next reconcile forgets them.
            self.cancelled_conversations.update(reached)

        await host.run(mark)
        return marked

    async def orphan(self, task_id: int) -> bool:
        """Orphan an abort-marked task no definition can take, if it still must be (R49).

        Returns:
            Whether the commit orphaned it; a failed cleanup puts it in backoff.
        """

        async def orphan(staged: StagedCommit) -> bool:
            current = staged.candidate_task(task_id)
            blocked = None if current is None else self.orphan_reason(current)
            if current is None or blocked is None:
                return False
            await write_scheduler_outcome(
                self._host, staged, current, orphaned_outcome(blocked.reason)
            )
            return True

        if not self._backoff.due(task_id):
            return False
        return bool(await self._backoff.guard(task_id, self._host.run(orphan)))
