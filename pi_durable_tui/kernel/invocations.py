"""Running task code: invocations, the step before every phase, abort handlers.

An *invocation* runs a task's code once the scheduler has reserved it (R36):

- a **run** invocation runs phase handlers one after another. Before every
  phase (the first included) one *step* on the line decides, in this order
  (R37): (1) terminal, ``completing`` or ``waiting`` → stop; (2) the Session is
  closing → stop, keeping checkpoint and marks; (3) a durable abort mark → stop,
  a fresh abort invocation starts later; (3b) a live owner above has
  cancellation intent → stop, the cascade marks the task next; (4) the previous
  phase raised → ``faulted`` with its message; (6) the checkpoint did not change
  (compared as JSON, so key order is ignored) → ``faulted`` with ``Task <kind>
  phase <phase> returned without durable progress``; (5) otherwise take a fresh
  registry snapshot, hand over to a new definition that can take the task
  (back to ``pending``, R35), or run the handler of the checkpoint's phase.
- an **abort** invocation runs the definition's abort handler once; then a step
  applies rules 1, 2 and 4, and faults a task left without a terminal outcome
  (R43).

Signalling an invocation sets ``runtime.aborted`` *before* cancelling its
coroutine (DESIGN.md section 2). Whatever way an invocation ends (returned,
raised, cancelled, or cancelled before it ever ran) the same done-callback
retires it, so the scheduler never waits for an invocation that is gone.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pi_durable_tui.kernel.errors import SessionClosed
from pi_durable_tui.kernel.hooks import Report
from pi_durable_tui.kernel.ownership import cascade_source
from pi_durable_tui.kernel.runtime import InvocationMode, TaskRuntime
from pi_durable_tui.kernel.tasks import (
    PhaseHandler,
    TaskDefinition,
    checkpoint_of,
    faulted_outcome,
    phase_of,
    with_state,
)
from pi_durable_tui.storage.records import TaskRecord

if TYPE_CHECKING:
    from pi_durable_tui.kernel.scheduler import Scheduler
    from pi_durable_tui.kernel.tx import Tx

_FIRST: Any = object()
"""The "previous checkpoint" before an invocation's first phase: any checkpoint is new."""


@dataclass(eq=False)
class Invocation:
    """One running invocation of a task's phases or abort handler."""

    task_id: int
    mode: InvocationMode
    definition: TaskDefinition
    runtime: TaskRuntime
    signalled: bool = False
    coroutine: asyncio.Task[None] | None = None


class Invocations:
    """The active invocations of a Session's tasks, by task ID (at most one each).

    Args:
        scheduler: The scheduler that reserved the tasks; it writes scheduler
            outcomes and is woken when an invocation ends.
    """

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler
        self._session = scheduler.session
        self.active: dict[int, Invocation] = {}

    def __contains__(self, task_id: object) -> bool:
        return task_id in self.active

    def get(self, task_id: int) -> Invocation | None:
        """Return a task's active invocation."""
        return self.active.get(task_id)

    def start(self, task_id: int, definition: TaskDefinition, mode: InvocationMode) -> None:
        """Start an invocation of a task the scheduler has just reserved."""
        runtime = TaskRuntime(self._session, task_id, definition, mode, asyncio.Event())
        invocation = Invocation(task_id, mode, definition, runtime)
        self.active[task_id] = invocation
        invocation.coroutine = asyncio.ensure_future(self._invoke(invocation))
        # REMINDER: retire in a done-callback, not in a ``finally`` of ``_invoke``: a
        # coroutine cancelled before its first step never runs its ``finally``.
        invocation.coroutine.add_done_callback(lambda _: self._ended(invocation))

    def signal(self, invocation: Invocation) -> None:
        """Set the invocation's signal, then cancel its coroutine (idempotent)."""
        if invocation.signalled:
            return
        invocation.signalled = True
        invocation.runtime.aborted.set()  # REMINDER: set the event before cancelling.
        if invocation.coroutine is not None and not invocation.coroutine.done():
            invocation.coroutine.cancel()

    async def join(self, invocation: Invocation) -> None:
        """Wait until an invocation's coroutine has finished (even one ignoring its signal)."""
        if invocation.coroutine is not None:
            await asyncio.wait([invocation.coroutine])

    async def stop_all(self) -> None:
        """Signal every invocation and join them all (close, R27)."""
        invocations = list(self.active.values())
        for invocation in invocations:
            self.signal(invocation)
        coroutines = [i.coroutine for i in invocations if i.coroutine is not None]
        if coroutines:
            await asyncio.wait(coroutines)

    def signal_all(self) -> None:
        """Signal every invocation without waiting (the Session failed, R8)."""
        for invocation in list(self.active.values()):
            self.signal(invocation)

    def _ended(self, invocation: Invocation) -> None:
        invocation.runtime.end()
        if self.active.get(invocation.task_id) is invocation:
            del self.active[invocation.task_id]
        self._scheduler.invocation_ended()

    async def _invoke(self, invocation: Invocation) -> None:
        try:
            if invocation.mode == "run":
                await self._run_phases(invocation)
            else:
                await self._run_abort(invocation)
        except (SessionClosed, asyncio.CancelledError):
            pass
        except Exception as error:  # a rejected step write (R45): report; it runs again
            if self._session.failed is None and not self._session.closing:
                self._session.report(
                    Report("invocation_error", _message(error), error, invocation.task_id)
                )

    async def _run_phases(self, invocation: Invocation) -> None:
        previous: Any = _FIRST
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
                if invocation.signalled or self._session.closing:
                    return
                error = RuntimeError(f"Task {record.kind} phase {phase_of(record)} was cancelled")
            except Exception as raised:
                error = raised

    async def _step(
        self, invocation: Invocation, previous: Any, error: BaseException | None
    ) -> tuple[TaskRecord, PhaseHandler] | None:
        session = self._session
        result: list[tuple[TaskRecord, PhaseHandler] | None] = [None]

        async def step(tx: Tx) -> None:
            record = tx.candidate_task(invocation.task_id)
            if record is None or record.status != "running":
                return  # (1) terminal, held, waiting, or handed over
            if session.closing:
                return  # (2) checkpoint and marks stay for reopen
            if record.abort_requested:
                return  # (3) the abort invocation starts later
            if cascade_source(session.live, record) is not None:
                return  # (3b) the next reconcile commit marks it
            if error is not None:
                await self._scheduler.write_scheduler_outcome(
                    tx, record, faulted_outcome(_message(error))
                )
                return  # (4)
            checkpoint = checkpoint_of(record)
            if previous is not _FIRST and checkpoint == previous:
                message = (
                    f"Task {record.kind} phase {phase_of(record)} returned without durable progress"
                )
                await self._scheduler.write_scheduler_outcome(tx, record, faulted_outcome(message))
                return  # (6)
            current = session.registry.get(record.kind)  # (5) a fresh snapshot
            if current is not invocation.definition:
                if current is not None and current.can_take(record.version):
                    tx.put_task(with_state(record, {**record.state, "status": "pending"}))
                    return  # hand over at the phase boundary (R35)
                self._scheduler.resolution.report_handover_refused(record, current)
            handler = invocation.definition.phases.get(phase_of(record) or "")
            if handler is None:
                message = f"Task {record.kind} has no phase {phase_of(record)!r}"
                await self._scheduler.write_scheduler_outcome(tx, record, faulted_outcome(message))
                return
            result[0] = (record, handler)

        await session.run_commit(step)
        return result[0]

    async def _run_abort(self, invocation: Invocation) -> None:
        session = self._session
        record = session.live.task(invocation.task_id)
        if record is None:
            return
        error: BaseException | None = None
        try:
            await invocation.definition.abort(record, invocation.runtime)
        except asyncio.CancelledError:
            if invocation.signalled or session.closing:
                return
            error = RuntimeError(f"Abort handler of task {record.id} was cancelled")
        except Exception as raised:
            error = raised
        if invocation.runtime.wait_refused is not None:
            error = invocation.runtime.wait_refused

        async def step(tx: Tx) -> None:
            current = tx.candidate_task(invocation.task_id)
            if current is None or current.status != "running" or session.closing:
                return  # rules 1 and 2
            message = (
                _message(error)
                if error is not None
                else f"Abort handler of task {current.id} returned without a terminal outcome"
            )
            await self._scheduler.write_scheduler_outcome(tx, current, faulted_outcome(message))

        await session.run_commit(step)


def _message(error: BaseException) -> str:
    return str(error) or type(error).__name__
