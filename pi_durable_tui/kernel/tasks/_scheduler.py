"""The task scheduler: the loop, its passes, and reservation (R22, R23, R36, R44, R45, R49).

The scheduler keeps no durable state of its own: everything it decides is a
commit, and everything it knows comes from the Session's live index. Nothing runs
until ``resume()`` (R23). Then its loop wakes on every publication, registry
change, ended invocation and backoff timer, and runs a *pass*:

1. reconcile (``_reconcile``): derived abort marks and held tasks whose owned
   work drained, in commits of their own (R48, R52, R53, R54);
2. one reservation commit decides, on the line, which live tasks can run and
   moves them to ``running`` (R36) - in the live index only, unless the task
   migrates: a ``running`` status in a store nobody else writes is seen by no
   reader, and reopen turns it back into ``pending`` anyway (R22); the task's
   next commit stores it (issue 14): a ``pending`` task, a ``waiting`` task whose
   ``on`` is all terminal, an abort-marked task whose ordinary owned work drained
   (R47). A task whose definition is newer is migrated in that same commit
   (R44); a held (``completing``) task is never reserved. Then an invocation
   starts for each (``_invocations``).
3. an abort-marked task no definition can take is orphaned instead, each in a
   commit of its own (R49, ``_aborts``).

A task whose scheduler write failed (its cleanup hook raised, R45) sits out the
passes until its backoff ends (``_backoff``); a timer on the Session's clock
wakes the loop then.

The parts it composes each live in a module of their own and know nothing of
this one: running task code (``_invocations``), aborts and orphaning
(``_aborts``), waits (``_waits``), definition resolution (``_resolution``).
"""

from __future__ import annotations

import asyncio
from typing import Literal

from pi_durable_tui.kernel._errors import SessionClosed
from pi_durable_tui.kernel._hooks import Report
from pi_durable_tui.kernel._publication import CommitInfo
from pi_durable_tui.kernel._staging import StagedCommit
from pi_durable_tui.kernel.tasks._aborts import Aborts
from pi_durable_tui.kernel.tasks._backoff import WriteBackoff
from pi_durable_tui.kernel.tasks._definitions import TaskDefinition
from pi_durable_tui.kernel.tasks._host import TaskHost
from pi_durable_tui.kernel.tasks._invocations import Invocations
from pi_durable_tui.kernel.tasks._ownership import (
    cascade_source,
    conversation_busy_tasks,
    ordinary_owned_work,
)
from pi_durable_tui.kernel.tasks._reconcile import (
    finish_scheduler_hold,
    reconcile_once,
    scheduler_holds,
)
from pi_durable_tui.kernel.tasks._records import checkpoint_of, with_state
from pi_durable_tui.kernel.tasks._registry import TaskRegistry
from pi_durable_tui.kernel.tasks._resolution import Blocked, Resolution, migrate_task
from pi_durable_tui.kernel.tasks._runtime import InvocationMode
from pi_durable_tui.kernel.tasks._waits import Waits
from pi_durable_tui.storage.records import TaskRecord

Decision = tuple[InvocationMode, TaskDefinition] | Blocked | None
"""What a pass does with a live task: start it in a mode, note it blocked, or skip it."""


class Scheduler:
    """Runs a Session's durable tasks. Created by the Session.

    Args:
        host: The Session, as the tasks part sees it.
        registry: The definitions tasks run under; a publication wakes the loop.
    """

    def __init__(self, host: TaskHost, registry: TaskRegistry) -> None:
        self._host = host
        self._enabled = False
        self._wake = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None
        self._timer: tuple[float, asyncio.Task[None]] | None = None
        self._reserving = False
        """Set by a pass's reservation callback: its own publication needs no new pass."""
        self.resolution = Resolution(registry, host.report)
        self.waits = Waits(host)
        self.backoff = WriteBackoff(host.clock, host.report)
        self.invocations = Invocations(
            host, self.waits, self.resolution, self.backoff, self._invocation_ended
        )
        self.aborts = Aborts(host, self.invocations, self.resolution, self.backoff)
        host.subscribe(self._on_commit)
        registry.subscribe(self.wake)

    # -- control (R23) --

    @property
    def enabled(self) -> bool:
        """Whether scheduling has started (R23)."""
        return self._enabled

    @property
    def blocked(self) -> dict[int, Blocked]:
        """Live tasks no definition can take now (derived, never stored; R44)."""
        return self.resolution.blocked

    def resume(self) -> None:
        """Start scheduling; idempotent (R23).

        Raises:
            SessionClosed: After ``close()`` started.
            SessionFailed: After the Session failed.
        """
        self._host.check_usable()
        if not self._enabled:
            self._enabled = True
            self._loop = asyncio.ensure_future(self._run())
        self.wake()

    def wake(self) -> None:
        """Ask for a pass soon (a no-op until scheduling starts)."""
        self._wake.set()

    def _wake_if_enabled(self) -> None:
        if self._enabled:
            self.wake()

    def _invocation_ended(self) -> None:
        self.waits.check_conditions()  # waits may hold now, and the next pass may run
        if not self._host.closing:
            self._wake_if_enabled()

    async def _run(self) -> None:
        while not self._stopped():
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._pass()
            except (SessionClosed, asyncio.CancelledError):
                return
            except Exception as error:  # a bug in a hook: report and keep scheduling
                if self._stopped():
                    return
                self._host.report(Report("scheduler_error", _message(error), error))

    def _stopped(self) -> bool:
        return self._host.closing or self._host.failed is not None

    def _on_commit(self, info: CommitInfo) -> None:
        for record in info.tasks:
            before = info.previous_tasks.get(record.id)
            invocation = self.invocations.get(record.id)
            if (
                invocation is not None
                and invocation.mode == "run"
                and record.abort_requested
                and not (before is not None and before.abort_requested)
            ):
                self.invocations.signal(invocation)  # durable mark first, then the signal
            if not record.is_live:
                self.resolution.forget(record.id)
                self.backoff.forget(record.id)
        self.waits.on_commit(info)
        if self._reserving:
            # REMINDER: the reservation is published on the line right after its
            # callback decided every live task, and the pass starts each reserved
            # invocation before it returns: nothing the reservation wrote makes
            # another task due, so a pass for it would find nothing (issue 14: two
            # of a tool round's seven passes). Every other commit still wakes the loop.
            self._reserving = False
            return
        self._wake_if_enabled()

    # -- the pass --

    async def reconcile_at_open(self) -> None:
        """Turn surviving ``running`` tasks into ``pending``, then reconcile (R22).

        Checkpoints, memos and abort marks are kept. Nothing is orphaned,
        migrated or dispatched here.
        """
        running = [r for r in self._host.live.tasks() if r.status == "running"]
        if running:

            def reset(staged: StagedCommit) -> None:
                for record in running:
                    staged.put_task(with_state(record, {**record.state, "status": "pending"}))

            await self._host.run(reset)
        await self._reconcile()

    async def _reconcile(self) -> None:
        for _ in range(64):  # each round may drain further holds; the bound only guards bugs
            changed = await reconcile_once(self._host, self.aborts.cancelled_conversations)
            for task_id in scheduler_holds(self._host.live):
                if self.backoff.due(task_id):
                    finished = finish_scheduler_hold(self._host, task_id)
                    changed = bool(await self.backoff.guard(task_id, finished)) or changed
            if not changed:
                return

    def decide(self, record: TaskRecord) -> Decision:
        """Decide on the line what a pass does with a live task (R36, R44, R45, R47, R49).

        Returns:
            ``(mode, definition)`` to reserve it, ``Blocked`` when it is due but no
            definition can take it, or ``None`` when it is not due.
        """
        live = self._host.live
        if record.id in self.invocations or not record.is_live or record.status == "completing":
            return None
        if not self.backoff.due(record.id):
            return None  # its last scheduler write failed; the timer brings it back (R45)
        mode: InvocationMode = "abort" if record.abort_requested else "run"
        if mode == "abort":
            if ordinary_owned_work(live, record.id):
                return None  # bottom-up: owned work ends first (R47)
        else:
            if record.status == "waiting":
                on: list[int] = record.state["on"]
                if any(live.task(i) is not None for i in on):
                    return None
            if cascade_source(live, record) is not None:
                return None  # the next reconcile marks it (R48)
        definition, blocked = self.resolution.check(record)
        if blocked is not None:
            return blocked
        assert definition is not None
        return mode, definition

    async def _pass(self) -> None:
        await self._reconcile()
        if self._host.closing:
            return
        if all(self.decide(record) is None for record in self._host.live.tasks()):
            # Nothing due: no reservation run of the line. Safe off the line, because
            # whatever makes a task due (a commit, an ended invocation, a publication,
            # a backoff timer) wakes the loop for another pass.
            self._arm_retry()
            return
        now = self._host.clock.now()
        reserved: list[tuple[int, TaskDefinition, InvocationMode]] = []
        orphans: list[int] = []

        def reserve(staged: StagedCommit) -> None:
            reserved.clear()
            orphans.clear()
            self._reserving = True
            # REMINDER: decide inside the reservation commit, on the line: work created
            # below an abort-marked task between a decision and its reservation would
            # otherwise start an abort handler before that work ended (R47).
            for record in self._host.live.tasks():
                decision = self.decide(record)
                if decision is None:
                    continue
                if isinstance(decision, Blocked):
                    self.resolution.note_blocked(record, decision)
                    if record.abort_requested:
                        orphans.append(record.id)
                    continue
                mode, definition = decision
                checkpoint = checkpoint_of(record)
                assert checkpoint is not None, "only a held or terminal task has no checkpoint"
                try:
                    task_input, checkpoint = migrate_task(record, checkpoint, definition)
                except Exception as error:  # blocked until another definition shows up
                    self.resolution.note_migration_failed(record, definition, error)
                    continue
                reserved.append((record.id, definition, mode))
                if record.status == "running" and record.version == definition.version:
                    continue  # already reserved: its invocation ended early (R37 3b, R45)
                reserved_record = with_state(
                    record,
                    {"status": "running", "checkpoint": checkpoint},
                    input=task_input,
                    version=definition.version,
                    started_at=record.started_at if record.started_at is not None else now,
                )
                if (
                    record.version == definition.version
                    and task_input == record.input
                    and checkpoint == checkpoint_of(record)
                    # A background task's first start is stored at once: it may wait
                    # for hours (a quiet job) in a session that stores nothing else,
                    # and its clock must survive a crash (``CommitLine._carried``
                    # covers the foreground, whose next commit comes soon).
                    and not (record.background and record.started_at is None)
                ):
                    # Only the status and started_at change: nothing the store's
                    # readers act on (see ``StagedCommit.reserve_task``).
                    staged.reserve_task(reserved_record)
                else:
                    staged.put_task(reserved_record)  # a migration is durable (R44)

        try:
            await self._host.run(reserve)
        finally:
            self._reserving = False  # a reservation that staged nothing published nothing
        for task_id, definition, mode in reserved:
            self.resolution.unblocked(task_id)
            self.invocations.start(task_id, definition, mode)
        for task_id in orphans:
            await self.aborts.orphan(task_id)
        self._arm_retry()

    def _arm_retry(self) -> None:
        """Wake the loop when the earliest backoff ends (R45)."""
        deadline = self.backoff.next_retry()
        if self._timer is not None:
            armed, timer = self._timer
            if not timer.done() and deadline is not None and armed <= deadline:
                return  # a wake at or before that time is already set
            timer.cancel()
            self._timer = None
        if deadline is not None:
            self._timer = (deadline, asyncio.ensure_future(self._wake_at(deadline)))

    async def _wake_at(self, deadline: float) -> None:
        await self._host.clock.sleep_until(deadline)
        self._timer = None
        self.wake()

    # -- aborts (R46, R57) and waits (R56, R58): see ``_aborts`` and ``_waits`` --

    async def abort_task(self, task_id: int) -> Literal["terminal", "marked"]:
        """Mark a task for abort, signal and join its run invocation (R46)."""
        result = await self.aborts.abort_task(task_id)
        if result == "marked":
            self._wake_if_enabled()
        return result

    async def abort_conversation(self, conversation_id: int, *, background: bool = False) -> None:
        """Mark a conversation's work for abort, then wait for it to stop (R57).

        With ``background`` the traversal crosses background tasks, and the wait
        also covers every task the commit marked.
        """
        marked = await self.aborts.mark_conversation(conversation_id, background=background)
        self.resume()
        live = self._host.live
        await self.waits.wait_until(
            lambda: (
                not conversation_busy_tasks(live, conversation_id)
                and (not background or all(live.task(i) is None for i in marked))
            )
        )

    # -- shutdown (R8, R27) --

    def session_failed(self, error: BaseException) -> None:
        """Fail every waiter and stop invocations after the Session was poisoned (R8)."""
        self.waits.fail_all(error)
        self.invocations.signal_all()
        self._stop_loop()

    def _stop_loop(self) -> None:
        if self._loop is not None:
            self._loop.cancel()
        if self._timer is not None:
            self._timer[1].cancel()
            self._timer = None

    async def close(self) -> None:
        """Stop scheduling, signal every invocation and join them all (R27)."""
        self._stop_loop()
        await self.invocations.stop_all()
        if self._loop is not None:
            await asyncio.wait([self._loop])
        self.waits.fail_all(SessionClosed())


def _message(error: BaseException) -> str:
    return str(error) or type(error).__name__
