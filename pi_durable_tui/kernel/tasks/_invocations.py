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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pi_durable_tui.kernel._errors import SessionClosed
from pi_durable_tui.kernel._staging import StagedCommit
from pi_durable_tui.kernel.tasks._backoff import WriteBackoff
from pi_durable_tui.kernel.tasks._continuations import ContinuationOffers
from pi_durable_tui.kernel.tasks._definitions import PhaseHandler, TaskDefinition
from pi_durable_tui.kernel.tasks._host import TaskHost
from pi_durable_tui.kernel.tasks._ownership import cascade_source
from pi_durable_tui.kernel.tasks._records import checkpoint_of, phase_of, with_state
from pi_durable_tui.kernel.tasks._resolution import Resolution
from pi_durable_tui.kernel.tasks._runtime import InvocationMode, InvocationSignal, TaskRuntime
from pi_durable_tui.kernel.tasks._states import faulted_outcome
from pi_durable_tui.kernel.tasks._transitions import write_scheduler_outcome
from pi_durable_tui.kernel.tasks._waits import Waits
from pi_durable_tui.storage.records import TaskRecord

_FIRST: Any = object()
"""The "previous checkpoint" before an invocation's first phase: any checkpoint is new."""


@dataclass(eq=False)
class Invocation:
    """One running invocation of a task's phases or abort handler."""

    task_id: int
    mode: InvocationMode
    definition: TaskDefinition
    runtime: TaskRuntime
    signal: InvocationSignal
    signalled: bool = False
    coroutine: asyncio.Task[None] | None = None


class Invocations:
    """The active invocations of a Session's tasks, by task ID (at most one each).

    Args:
        host: The Session.
        waits: Its waiters (a runtime's ``wait_for_task``).
        resolution: Reports a hand-over the registry cannot make (R35).
        backoff: Receives the step writes that failed (R45).
        on_ended: Called when an invocation ends, whatever the way.
    """

    def __init__(
        self,
        host: TaskHost,
        waits: Waits,
        resolution: Resolution,
        backoff: WriteBackoff,
        on_ended: Callable[[], None],
    ) -> None:
        self._host = host
        self._waits = waits
        self._resolution = resolution
        self._backoff = backoff
        self._on_ended = on_ended
        self.active: dict[int, Invocation] = {}
        self.offers = ContinuationOffers()
        """What waiting tasks offer the task that ends their wait (``_continuations``)."""

    def __contains__(self, task_id: object) -> bool:
        return task_id in self.active

    def get(self, task_id: int) -> Invocation | None:
        """Return a task's active invocation."""
        return self.active.get(task_id)

    def start(self, task_id: int, definition: TaskDefinition, mode: InvocationMode) -> None:
        """Start an invocation of a task the scheduler has just reserved."""
        signal = InvocationSignal()
        self.offers.drop(task_id)  # an offer belongs to the wait the task has left
        runtime = TaskRuntime(
            self._host, self._waits.wait_for_task, task_id, mode, signal, self.offers
        )
        invocation = Invocation(task_id, mode, definition, runtime, signal)
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
        invocation.signal.aborted.set()  # REMINDER: set the event before cancelling.
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
        invocation.signal.end()
        if self.active.get(invocation.task_id) is invocation:
            del self.active[invocation.task_id]
        self._on_ended()

    async def _invoke(self, invocation: Invocation) -> None:
        try:
            if invocation.mode == "run":
                await self._run_phases(invocation)
            else:
                await self._run_abort(invocation)
        except (SessionClosed, asyncio.CancelledError):
            pass
        except Exception as error:  # a rejected step write (R45): it runs again, later
            if self._host.failed is None and not self._host.closing:
                self._backoff.failed(invocation.task_id, error, "invocation_error")

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
                if invocation.signalled or self._host.closing:
                    return
                error = RuntimeError(f"Task {record.kind} phase {phase_of(record)} was cancelled")
            except Exception as raised:
                error = raised

    async def _step(
        self, invocation: Invocation, previous: Any, error: BaseException | None
    ) -> tuple[TaskRecord, PhaseHandler] | None:
        host = self._host
        result: list[tuple[TaskRecord, PhaseHandler] | None] = [None]

        async def step(staged: StagedCommit) -> None:
            record = staged.candidate_task(invocation.task_id)
            if record is None or record.status != "running":
                return  # (1) terminal, held, waiting, or handed over
            if host.closing:
                return  # (2) checkpoint and marks stay for reopen
            if record.abort_requested:
                return  # (3) the abort invocation starts later
            if cascade_source(host.live, record) is not None:
                return  # (3b) the next reconcile commit marks it
            if error is not None:
                outcome = faulted_outcome(_message(error))
                await write_scheduler_outcome(host, staged, record, outcome)
                return  # (4)
            checkpoint = checkpoint_of(record)
            if previous is not _FIRST and checkpoint == previous:
                message = (
                    f"Task {record.kind} phase {phase_of(record)} returned without durable progress"
                )
                await write_scheduler_outcome(host, staged, record, faulted_outcome(message))
                return  # (6)
            current = self._resolution.registry.get(record.kind)  # (5) a fresh snapshot
            if current is not invocation.definition:
                if current is not None and current.can_take(record.version):
                    staged.put_task(with_state(record, {**record.state, "status": "pending"}))
                    return  # hand over at the phase boundary (R35)
                self._resolution.report_handover_refused(record, current)
            handler = invocation.definition.phases.get(phase_of(record) or "")
            if handler is None:
                message = f"Task {record.kind} has no phase {phase_of(record)!r}"
                await write_scheduler_outcome(host, staged, record, faulted_outcome(message))
                return
            result[0] = (record, handler)

        await host.run(step)
        return result[0]

    async def _run_abort(self, invocation: Invocation) -> None:
        host = self._host
        record = host.live.task(invocation.task_id)
        if record is None:
            return
        error: BaseException | None = None
        try:
            await invocation.definition.abort(record, invocation.runtime)
        except asyncio.CancelledError:
            if invocation.signalled or host.closing:
                return
            error = RuntimeError(f"Abort handler of task {record.id} was cancelled")
        except Exception as raised:
            error = raised
        if invocation.signal.wait_refused is not None:
            error = invocation.signal.wait_refused

        async def step(staged: StagedCommit) -> None:
            current = staged.candidate_task(invocation.task_id)
            if current is None or current.status != "running" or host.closing:
                return  # rules 1 and 2
            message = (
                _message(error)
                if error is not None
                else f"Abort handler of task {current.id} returned without a terminal outcome"
            )
            await write_scheduler_outcome(host, staged, current, faulted_outcome(message))

        await host.run(step)


def _message(error: BaseException) -> str:
    return str(error) or type(error).__name__
