"""The task scheduler: the loop, its passes, and reservation (R22, R23, R36, R44, R49).

The scheduler keeps no durable state of its own: everything it decides is a
commit, and everything it knows comes from the Session's live index. Nothing runs
until ``resume()`` (R23). Then its loop wakes on every publication, registry
change and ended invocation, and runs a *pass*:

1. reconcile (``reconcile.reconcile_once``): derived abort marks, held tasks
   whose owned work drained, in commits of their own (R48, R52, R53);
2. one reservation commit decides, on the line, which live tasks can run and
   moves them to ``running`` (R36): a ``pending`` task, a ``waiting`` task whose
   ``on`` is all terminal, an abort-marked task whose ordinary owned work drained
   (R47). A task whose definition is newer is migrated in that same commit
   (R44); a held (``completing``) task is never reserved. Then an invocation
   starts for each (``invocations``).
3. an abort-marked task no definition can take is orphaned instead, each in a
   commit of its own (R49).

The rest lives in modules of its own, reachable from here: running task code
(``invocations``), aborts (``aborts``), waits (``waits``) and definition
resolution (``resolution``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from pi_durable_tui.kernel import aborts
from pi_durable_tui.kernel.errors import SessionClosed
from pi_durable_tui.kernel.hooks import Report
from pi_durable_tui.kernel.invocations import Invocations
from pi_durable_tui.kernel.ownership import cascade_source, ordinary_owned_work
from pi_durable_tui.kernel.publication import CommitInfo
from pi_durable_tui.kernel.reconcile import reconcile_once
from pi_durable_tui.kernel.resolution import Blocked, Resolution, migrate_task
from pi_durable_tui.kernel.runtime import InvocationMode
from pi_durable_tui.kernel.tasks import (
    TaskDefinition,
    checkpoint_of,
    orphaned_outcome,
    with_state,
)
from pi_durable_tui.kernel.transitions import finish_outcome, resolve_transitions
from pi_durable_tui.kernel.waits import Waits
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.records import TaskRecord

if TYPE_CHECKING:
    from pi_durable_tui.kernel.session import Session
    from pi_durable_tui.kernel.tx import Tx

Decision = tuple[InvocationMode, TaskDefinition] | Blocked | None
"""What a pass does with a live task: start it in a mode, note it blocked, or skip it."""


class Scheduler:
    """Runs a Session's durable tasks. Created by the Session."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._enabled = False
        self._wake = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None
        self.invocations = Invocations(self)
        self.resolution = Resolution(session)
        self.waits = Waits(session)
        self.cancelled_conversations: set[int] = set()
        """Conversations whose queued inputs were withdrawn while a cascade reaches them."""
        session.subscribe(self._on_commit)
        session.registry.subscribe(self.wake)

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
        self.session.check_usable()
        if not self._enabled:
            self._enabled = True
            self._loop = asyncio.ensure_future(self._run())
        self.wake()

    def wake(self) -> None:
        """Ask for a pass soon (a no-op until scheduling starts)."""
        self._wake.set()

    def wake_if_enabled(self) -> None:
        """Wake the loop if scheduling runs."""
        if self._enabled:
            self.wake()

    def invocation_ended(self) -> None:
        """Called when an invocation ends: waits may hold now, and the next pass may run."""
        self.waits.check_conditions()
        if not self.session.closing:
            self.wake_if_enabled()

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
                self.session.report(Report("scheduler_error", _message(error), error))

    def _stopped(self) -> bool:
        return self.session.closing or self.session.failed is not None

    # -- commits from the Session --

    async def prepare(self, tx: Tx) -> None:
        """Resolve task transitions of a commit before it goes to storage."""
        await resolve_transitions(self.session, tx)

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
        self.waits.on_commit(info)
        self.wake_if_enabled()

    # -- the pass --

    async def reconcile_at_open(self) -> None:
        """Turn surviving ``running`` tasks into ``pending``, then reconcile (R22).

        Checkpoints, memos and abort marks are kept. Nothing is orphaned,
        migrated or dispatched here.
        """
        running = [r for r in self.session.live.tasks() if r.status == "running"]
        if running:

            def reset(tx: Tx) -> None:
                for record in running:
                    tx.put_task(with_state(record, {**record.state, "status": "pending"}))

            await self.session.run_commit(reset)
        await self._reconcile()

    async def _reconcile(self) -> None:
        for _ in range(64):  # each round may drain further holds; the bound only guards bugs
            if not await reconcile_once(self.session, self.cancelled_conversations):
                return

    def decide(self, record: TaskRecord) -> Decision:
        """Decide on the line what a pass does with a live task (R36, R44, R47, R49).

        Returns:
            ``(mode, definition)`` to reserve it, ``Blocked`` when it is due but no
            definition can take it, or ``None`` when it is not due.
        """
        live = self.session.live
        if record.id in self.invocations or not record.is_live or record.status == "completing":
            return None
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
        if self.session.closing:
            return
        now = self.session.clock.now()
        reserved: list[tuple[int, TaskDefinition, InvocationMode]] = []
        orphans: list[int] = []

        def reserve(tx: Tx) -> None:
            reserved.clear()
            orphans.clear()
            # REMINDER: decide inside the reservation commit, on the line: work created
            # below an abort-marked task between a decision and its reservation would
            # otherwise start an abort handler before that work ended (R47).
            for record in self.session.live.tasks():
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
                tx.put_task(
                    with_state(
                        record,
                        {"status": "running", "checkpoint": checkpoint},
                        input=task_input,
                        version=definition.version,
                        started_at=record.started_at if record.started_at is not None else now,
                    )
                )

        await self.session.run_commit(reserve)
        for task_id, definition, mode in reserved:
            self.resolution.unblocked(task_id)
            self.invocations.start(task_id, definition, mode)
        for task_id in orphans:
            await self._orphan(task_id)

    async def _orphan(self, task_id: int) -> None:
        async def orphan(tx: Tx) -> None:
            current = tx.candidate_task(task_id)
            if current is None or not current.abort_requested:
                return
            decision = self.decide(current)  # re-decided on the line
            if isinstance(decision, Blocked):
                await self.write_scheduler_outcome(tx, current, orphaned_outcome(decision.reason))

        await self.session.run_commit(orphan)

    async def write_scheduler_outcome(
        self, tx: Tx, record: TaskRecord, outcome: JsonObject
    ) -> None:
        """Stage a ``faulted`` or ``orphaned`` outcome, with cleanup when it is final (R45, R54)."""
        final = finish_outcome(self.session, tx, record, outcome)
        if not final.is_live:
            await self.session.hooks.scheduler_outcome(tx, final, outcome)

    # -- aborts (R46, R57) and waits (R56, R58): see ``aborts`` and ``waits`` --

    async def abort_task(self, task_id: int) -> Literal["terminal", "marked"]:
        """Mark a task for abort, signal and join its run invocation (R46)."""
        return await aborts.abort_task(self, task_id)

    async def abort_conversation(
        self,
        conversation_id: int,
        *,
        background: bool = False,
        also: Callable[[Tx], Any] | None = None,
    ) -> None:
        """Mark a conversation's work for abort, then wait for it to stop (R57)."""
        await aborts.abort_conversation(self, conversation_id, background=background, also=also)

    async def wait_for_task(self, task_id: int) -> TaskRecord:
        """Return a task's terminal record, waiting for it if it is live (R56)."""
        return await self.waits.wait_for_task(task_id)

    async def wait_until(self, condition: Callable[[], bool]) -> None:
        """Wait until a condition over committed state holds (re-checked after each commit)."""
        await self.waits.wait_until(condition)

    async def wait_for_idle(self, conversation_id: int | None = None) -> None:
        """Wait until a conversation (or every root conversation) has no ordinary work (R58)."""
        await self.waits.wait_for_idle(conversation_id)

    def harness_idle(self) -> bool:
        """Whether no live non-background task is reachable from an ownerless conversation."""
        return self.waits.harness_idle()

    # -- shutdown (R8, R27) --

    def session_failed(self, error: BaseException) -> None:
        """Fail every waiter and stop invocations after the Session was poisoned (R8)."""
        self.waits.fail_all(error)
        self.invocations.signal_all()
        if self._loop is not None:
            self._loop.cancel()

    async def close(self) -> None:
        """Stop scheduling, signal every invocation and join them all (R27)."""
        if self._loop is not None:
            self._loop.cancel()
        await self.invocations.stop_all()
        if self._loop is not None:
            await asyncio.wait([self._loop])
        self.waits.fail_all(SessionClosed())


def _message(error: BaseException) -> str:
    return str(error) or type(error).__name__
