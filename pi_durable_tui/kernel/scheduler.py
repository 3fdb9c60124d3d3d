"""The task scheduler: reservation, invocations, steps, aborts (R36-R49, R57, R58).

The scheduler keeps no durable state of its own: everything it decides is a
commit, and everything it knows comes from the Session's live index. Its loop
wakes on every publication and registry change and runs a *pass*:

1. reconcile (``reconcile.plan_reconcile``): derived abort marks, held tasks whose
   owned work drained, in one commit (R48, R52, R53);
2. reserve every task that can run: a ``pending`` task, a ``waiting`` task whose
   ``on`` is all terminal, an abort-marked task whose ordinary owned work drained
   (R36, R47); one reservation commit moves them to ``running`` (migrating first
   when the definition is newer, R44), then an invocation starts for each.
   An abort-marked task no definition can take is orphaned instead (R49).

An invocation runs phase handlers one after another; before each, a *step* on the
line decides whether to stop, fault, hand over to a new definition, or run the
phase of the current checkpoint (R37). Aborting marks the task in storage first,
then signals the invocation (sets ``runtime.aborted``) and cancels its coroutine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pi_durable_tui.kernel.errors import KernelError, SessionClosed, TaskNotFound
from pi_durable_tui.kernel.hooks import Report
from pi_durable_tui.kernel.ownership import (
    cascade_source,
    conversation_busy_tasks,
    ordinary_owned_work,
    owner_chain,
    traverse_conversation,
)
from pi_durable_tui.kernel.publication import CommitInfo
from pi_durable_tui.kernel.reconcile import Blocked, block_reason, reconcile_once
from pi_durable_tui.kernel.runtime import InvocationMode, TaskRuntime
from pi_durable_tui.kernel.tasks import (
    TaskDefinition,
    checkpoint_of,
    faulted_outcome,
    orphaned_outcome,
    phase_of,
    with_state,
)
from pi_durable_tui.kernel.transitions import finish_outcome, resolve_transitions
from pi_durable_tui.storage.records import TaskRecord

if TYPE_CHECKING:
    from pi_durable_tui.kernel.session import Session
    from pi_durable_tui.kernel.tx import Tx

_UNSET: Any = object()


@dataclass(eq=False)
class Invocation:
    """One running invocation of a task's phases or abort handler."""

    task_id: int
    mode: InvocationMode
    definition: TaskDefinition
    runtime: TaskRuntime
    aborted: asyncio.Event = field(default_factory=asyncio.Event)
    signalled: bool = False
    coroutine: asyncio.Task[None] | None = None


class Scheduler:
    """Runs a Session's durable tasks. Created by the Session."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._enabled = False
        self._wake = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None
        self.invocations: dict[int, Invocation] = {}
        self.blocked: dict[int, Blocked] = {}
        self._reported: set[tuple[int, int]] = set()
        self._task_waiters: dict[int, list[asyncio.Future[TaskRecord]]] = {}
        self._condition_waiters: list[tuple[Callable[[], bool], asyncio.Future[None]]] = []
        self._cancelled_conversations: set[int] = set()
        session.subscribe(self._on_commit)
        session.registry.subscribe(self.wake)

    # -- control --

    @property
    def enabled(self) -> bool:
        """Whether scheduling has started (R23)."""
        return self._enabled

    def resume(self) -> None:
        """Start scheduling; idempotent (R23)."""
        self.session.check_usable()
        if not self._enabled:
            self._enabled = True
            self._loop = asyncio.ensure_future(self._run())
        self.wake()

    def wake(self) -> None:
        """Ask for a pass soon."""
        self._wake.set()

    async def _run(self) -> None:
        while not self.session.closing and self.session.failed is None:
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
                self._signal(invocation)
            if not record.is_live:
                self.blocked.pop(record.id, None)
                for future in self._task_waiters.pop(record.id, []):
                    if not future.done():
                        future.set_result(record)
        self._check_conditions()
        if self._enabled:
            self.wake()

    def _check_conditions(self) -> None:
        remaining = []
        for condition, future in self._condition_waiters:
            if future.done():
                continue
            if condition():
                future.set_result(None)
            else:
                remaining.append((condition, future))
        self._condition_waiters = remaining

    # -- the pass --

    async def reconcile_at_open(self) -> None:
        """Turn surviving ``running`` tasks into ``pending`` and derive marks (R22)."""
        running = [r for r in self.session.live.tasks() if r.status == "running"]
        if running:

            def reset(tx: Tx) -> None:
                for record in running:
                    tx.put_task(with_state(record, {**record.state, "status": "pending"}))

            await self.session.run_commit(reset)
        await self._reconcile()

    async def _reconcile(self) -> None:
        for _ in range(64):  # each round may drain further holds; the bound only guards bugs
            if not await reconcile_once(self.session, self._cancelled_conversations):
                return

    async def _pass(self) -> None:
        await self._reconcile()
        ready: list[tuple[TaskRecord, TaskDefinition, InvocationMode]] = []
        orphans: list[tuple[TaskRecord, str]] = []
        live = self.session.live
        for record in live.tasks():
            if record.id in self.invocations or self.session.closing:
                continue
            mode: InvocationMode = "abort" if record.abort_requested else "run"
            if record.status == "completing":
                continue
            if mode == "abort" and ordinary_owned_work(live, record.id):
                continue
            if mode == "run" and record.status == "waiting":
                on: list[int] = record.state["on"]  # type: ignore[assignment]
                if any(live.task(i) is not None for i in on):
                    continue
            if mode == "run" and cascade_source(live, record) is not None:
                continue  # the next reconcile marks it (R48)
            definition = self.session.registry.get(record.kind)
            blocked = block_reason(record, definition, self.blocked.get(record.id))
            if blocked is not None:
                self._note_blocked(record, blocked)
                if mode == "abort":
                    orphans.append((record, blocked.reason))
                continue
            assert definition is not None
            ready.append((record, definition, mode))
        for record, reason in orphans:
            await self._orphan(record, reason)
        if ready:
            await self._reserve(ready)

    def _note_blocked(self, record: TaskRecord, blocked: Blocked) -> None:
        self.blocked[record.id] = blocked
        key = (record.id, blocked.definition_id)
        if blocked.reason == "migration_failed" and key not in self._reported:
            self._reported.add(key)
            self.session.report(
                Report("migration_failed", blocked.message, blocked.error, task_id=record.id)
            )

    async def _orphan(self, record: TaskRecord, reason: str) -> None:
        async def orphan(tx: Tx) -> None:
            current = tx.candidate_task(record.id)
            if current is None or current.status == "completing":
                return
            await self.write_scheduler_outcome(tx, current, orphaned_outcome(reason))

        await self.session.run_commit(orphan)

    async def write_scheduler_outcome(self, tx: Tx, record: TaskRecord, outcome: Any) -> None:
        """Stage a ``faulted`` or ``orphaned`` outcome, with cleanup when it is final (R45, R54)."""
        final = finish_outcome(self.session, tx, record, outcome)
        if not final.is_live:
            await self.session.hooks.scheduler_outcome(tx, final, outcome)

    async def _reserve(
        self, ready: list[tuple[TaskRecord, TaskDefinition, InvocationMode]]
    ) -> None:
        now = self.session.clock.now()
        reserved: list[tuple[int, TaskDefinition, InvocationMode]] = []

        def reserve(tx: Tx) -> None:
            for record, definition, mode in ready:
                current = tx.candidate_task(record.id)
                if current is None or current.status == "completing":
                    continue
                checkpoint = checkpoint_of(current)
                assert checkpoint is not None
                task_input, version = current.input, current.version
                if version < definition.version:
                    assert definition.migrate is not None
                    try:
                        task_input, checkpoint = definition.migrate(task_input, checkpoint, version)
                    except Exception as error:  # blocked until another definition shows up
                        self._note_blocked(
                            current,
                            Blocked(
                                "migration_failed",
                                f"Task {current.id} migration failed: {error!r}",
                                error,
                                id(definition),
                            ),
                        )
                        continue
                    version = definition.version
                reserved.append((record.id, definition, mode))
                if current.status == "running" and version == current.version:
                    continue  # already reserved (a step's write was rejected, R45)
                tx.put_task(
                    with_state(
                        current,
                        {"status": "running", "checkpoint": checkpoint},
                        input=task_input,
                        version=version,
                        started_at=current.started_at if current.started_at is not None else now,
                    )
                )

        await self.session.run_commit(reserve)
        for task_id, definition, mode in reserved:
            self.blocked.pop(task_id, None)
            self._start(task_id, definition, mode)

    # -- invocations --

    def _start(self, task_id: int, definition: TaskDefinition, mode: InvocationMode) -> None:
        aborted = asyncio.Event()
        runtime = TaskRuntime(self.session, task_id, definition, mode, aborted)
        invocation = Invocation(task_id, mode, definition, runtime, aborted)
        self.invocations[task_id] = invocation
        invocation.coroutine = asyncio.ensure_future(self._invoke(invocation))

    def _signal(self, invocation: Invocation) -> None:
        if invocation.signalled:
            return
        invocation.signalled = True
        invocation.aborted.set()  # REMINDER: set the event before cancelling (DESIGN.md 2).
        if invocation.coroutine is not None and not invocation.coroutine.done():
            invocation.coroutine.cancel()

    async def _invoke(self, invocation: Invocation) -> None:
        try:
            if invocation.mode == "run":
                await self._run_phases(invocation)
            else:
                await self._run_abort(invocation)
        except (SessionClosed, asyncio.CancelledError):
            pass
        except KernelError as error:
            if self.session.failed is None:
                self.session.report(
                    Report("invocation_error", str(error), error, invocation.task_id)
                )
        finally:
            invocation.runtime.ended = True
            if self.invocations.get(invocation.task_id) is invocation:
                del self.invocations[invocation.task_id]
            self._check_conditions()
            if self._enabled and not self.session.closing:
                self.wake()

    async def _run_phases(self, invocation: Invocation) -> None:
        previous: Any = _UNSET
        error: BaseException | None = None
        while True:
            decision = await self._step(invocation, previous, error)
            if decision is None:
                return
            record, handler = decision
            previous = checkpoint_of(record)
            error = None
            try:
                await handler(record, invocation.runtime)
            except asyncio.CancelledError:
                if invocation.signalled or self.session.closing:
                    return
                error = KernelError(f"Task {record.kind} phase {phase_of(record)} was cancelled")
            except Exception as raised:
                error = raised

    async def _step(
        self, invocation: Invocation, previous: Any, error: BaseException | None
    ) -> tuple[TaskRecord, Any] | None:
        result: list[tuple[TaskRecord, Any] | None] = [None]

        async def step(tx: Tx) -> None:
            record = tx.candidate_task(invocation.task_id)
            if record is None or record.status != "running":
                return  # (1) terminal, held, waiting, or handed over
            if self.session.closing:
                return  # (2)
            if record.abort_requested:
                return  # (3) the abort invocation starts later
            if cascade_source(self.session.live, record) is not None:
                return  # (3b) the cascade marks it next
            if error is not None:
                await self.write_scheduler_outcome(tx, record, faulted_outcome(_message(error)))
                return  # (4)
            checkpoint = checkpoint_of(record)
            if previous is not _UNSET and checkpoint == previous:
                message = (
                    f"Task {record.kind} phase {phase_of(record)} returned without durable progress"
                )
                await self.write_scheduler_outcome(tx, record, faulted_outcome(message))
                return  # (6)
            current = self.session.registry.get(record.kind)
            if current is not invocation.definition:
                if current is not None and current.can_take(record.version):
                    tx.put_task(with_state(record, {**record.state, "status": "pending"}))
                    return  # (5) hand over at the phase boundary (R35)
                self._report_once(record, current)
            handler = invocation.definition.phases.get(phase_of(record) or "")
            if handler is None:
                message = f"Task {record.kind} has no phase {phase_of(record)!r}"
                await self.write_scheduler_outcome(tx, record, faulted_outcome(message))
                return
            result[0] = (record, handler)

        await self.session.run_commit(step)
        return result[0]

    def _report_once(self, record: TaskRecord, current: TaskDefinition | None) -> None:
        key = (record.id, id(current))
        if key not in self._reported:
            self._reported.add(key)
            self.session.report(
                Report(
                    "handover_refused",
                    f"Task {record.id} keeps its running definition: the new definition of "
                    f"{record.kind} cannot take version {record.version}",
                    task_id=record.id,
                )
            )

    async def _run_abort(self, invocation: Invocation) -> None:
        record = self.session.live.task(invocation.task_id)
        if record is None:
            return
        error: BaseException | None = None
        try:
            await invocation.definition.abort(record, invocation.runtime)
        except asyncio.CancelledError:
            if invocation.signalled or self.session.closing:
                return
            error = KernelError(f"Abort handler of task {record.id} was cancelled")
        except Exception as raised:
            error = raised

        async def step(tx: Tx) -> None:
            current = tx.candidate_task(invocation.task_id)
            if current is None or current.status != "running" or self.session.closing:
                return
            message = (
                _message(error)
                if error is not None
                else f"Abort handler of task {current.id} returned without a terminal outcome"
            )
            await self.write_scheduler_outcome(tx, current, faulted_outcome(message))

        await self.session.run_commit(step)

    # -- aborts (R46, R57) --

    async def abort_task(self, task_id: int) -> Literal["terminal", "marked"]:
        """Mark a task for abort, signal and join its run invocation (R46).

        Returns:
            ``"terminal"`` when the task had already ended, else ``"marked"``.

        Raises:
            TaskNotFound: For an unknown task.
        """
        self.session.check_usable()
        record = await self.session.read_task(task_id)
        if record is None:
            raise TaskNotFound(task_id)
        if not record.is_live:
            return "terminal"

        async def mark(tx: Tx) -> None:
            current = tx.candidate_task(task_id)
            if current is None:
                return
            marked = (
                current
                if current.abort_requested
                else with_state(current, current.state, abort_requested=True)
            )
            tx.put_task(marked)
            definition = self.session.registry.get(marked.kind)
            blocked = block_reason(marked, definition, self.blocked.get(task_id))
            if (
                blocked is not None
                and marked.status != "completing"
                and task_id not in self.invocations
                and not ordinary_owned_work(self.session.live, task_id)
            ):
                await self.write_scheduler_outcome(tx, marked, orphaned_outcome(blocked.reason))

        await self.session.run_commit(mark)
        invocation = self.invocations.get(task_id)
        if invocation is not None and invocation.mode == "run" and invocation.coroutine is not None:
            self._signal(invocation)
            await asyncio.wait([invocation.coroutine])
        self.resume_if_enabled()
        return "marked"

    def resume_if_enabled(self) -> None:
        """Wake the loop if scheduling runs."""
        if self._enabled:
            self.wake()

    async def abort_conversation(
        self,
        conversation_id: int,
        *,
        background: bool = False,
        also: Callable[[Tx], Any] | None = None,
    ) -> None:
        """Mark a conversation's work for abort, then wait for it to stop (R57).

        Args:
            conversation_id: The conversation.
            background: Cross background boundaries, and wait for every marked task.
            also: Extra writes in the marking commit (the harness withdraws queued inputs).
        """
        self.session.check_usable()
        marked: list[int] = []

        async def mark(tx: Tx) -> None:
            reached = list(traverse_conversation(self.session.live, conversation_id, background))
            conversations = {conversation_id}
            for record in reached:
                if not background and record.background:
                    continue
                conversations.update(self.session.live.owned_conversations(record.id))
                marked.append(record.id)
                if not record.abort_requested:
                    tx.put_task(with_state(record, record.state, abort_requested=True))
            await self.session.hooks.conversations_cancelled(tx, sorted(conversations))
            if also is not None:
                result = also(tx)
                if asyncio.iscoroutine(result):
                    await result

        await self.session.run_commit(mark)
        self.resume()
        await self.wait_until(
            lambda: (
                not conversation_busy_tasks(self.session.live, conversation_id)
                and (not background or all(self.session.live.task(i) is None for i in marked))
            )
        )

    # -- waits (R56, R58) --

    async def wait_for_task(self, task_id: int) -> TaskRecord:
        """Return a task's terminal record, waiting for it if it is live (R56)."""
        record = await self.session.read_task(task_id)
        if record is None:
            raise TaskNotFound(task_id)
        if not record.is_live:
            return record
        self.session.check_usable()
        future: asyncio.Future[TaskRecord] = asyncio.get_running_loop().create_future()
        self._task_waiters.setdefault(task_id, []).append(future)
        return await future

    async def wait_until(self, condition: Callable[[], bool]) -> None:
        """Wait until a condition over committed state holds (re-checked after each commit)."""
        if condition():
            return
        self.session.check_usable()
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._condition_waiters.append((condition, waiter))
        await waiter

    async def wait_for_idle(self, conversation_id: int | None = None) -> None:
        """Wait until a conversation (or every root conversation) has no ordinary work (R58)."""
        if conversation_id is None:
            await self.wait_until(self.harness_idle)
        else:
            await self.wait_until(
                lambda: not conversation_busy_tasks(self.session.live, conversation_id)
            )

    def harness_idle(self) -> bool:
        """Whether no live non-background task is reachable from an ownerless conversation."""
        live = self.session.live
        for record in live.tasks():
            if record.background:
                continue
            chain = list(owner_chain(live, record))
            top = chain[-1] if chain else record
            if any(owner.background for owner in chain):
                continue
            if live.conversation_owner(top.conversation_id) is None:
                return False
        return True

    # -- shutdown --

    def session_failed(self, error: BaseException) -> None:
        """Fail every waiter and stop invocations after the Session was poisoned (R8)."""
        self._fail_waiters(error)
        for invocation in list(self.invocations.values()):
            self._signal(invocation)
        if self._loop is not None:
            self._loop.cancel()

    def _fail_waiters(self, error: BaseException) -> None:
        for futures in self._task_waiters.values():
            for future in futures:
                if not future.done():
                    future.set_exception(error)
        self._task_waiters.clear()
        for _, waiter in self._condition_waiters:
            if not waiter.done():
                waiter.set_exception(error)
        self._condition_waiters.clear()

    async def close(self) -> None:
        """Stop scheduling, signal every invocation and join them all (R27)."""
        if self._loop is not None:
            self._loop.cancel()
        invocations = list(self.invocations.values())
        for invocation in invocations:
            self._signal(invocation)
        coroutines = [i.coroutine for i in invocations if i.coroutine is not None]
        if coroutines:
            await asyncio.wait(coroutines)
        if self._loop is not None:
            await asyncio.wait([self._loop])
        self._fail_waiters(SessionClosed())


def _message(error: BaseException) -> str:
    return str(error) or type(error).__name__
