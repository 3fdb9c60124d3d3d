"""``TaskRuntime``: what a phase or abort handler may do (R38-R43).

One runtime belongs to one invocation. Every operation is gated: it rejects once
the invocation has ended (``Task <id> invocation has ended``), while the Session
closes, when the task is not running (``Task <id> is terminal`` / ``is
<status>``), and, for a run invocation, when the task carries a durable abort
mark (``Task <id> has a durable abort mark``).

- ``commit(fn, then=None)``: a gated commit; ``fn(tx)`` may return the task's next
  state, which replaces the state in the same commit as the callback's other
  writes; ``then`` carries a waiting task's next step (``_continuations``).
  Entries appended through it get ``by_task_id``. An abort handler may not
  return ``Waiting`` (R43).
- ``memo(name, candidate)``: first writer wins, in one gated commit (R40).
- ``sleep(until)``, ``outcomes(ids)``, ``wait_for_task(id)``.
- ``aborted``: an ``asyncio.Event`` set when the invocation is signalled, just
  before its coroutine is cancelled, so code can stop a process group cleanly;
  it is also set when the invocation ends for any other reason (R42), and
  ``sleep`` and ``wait_for_task`` reject as soon as it is set, even when they run
  in a helper coroutine the phase started.

A runtime shows authors only these (``_SURFACE``). The scheduler keeps its own
side of the invocation (the signal, whether it ended, a refused wait) in an
``InvocationSignal`` the runtime reads but does not expose.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal, TypeVar, overload

from pi_durable_tui.kernel._errors import SessionClosed, TaskGateClosed, TaskNotFound
from pi_durable_tui.kernel._staging import StagedCommit
from pi_durable_tui.kernel._tx import Tx
from pi_durable_tui.kernel.tasks._continuations import (
    Builder,
    Continuation,
    ContinuationOffers,
    run_continuation,
)
from pi_durable_tui.kernel.tasks._host import TaskHost
from pi_durable_tui.kernel.tasks._states import (
    Aborted,
    Completed,
    Failed,
    Running,
    TaskState,
    Waiting,
)
from pi_durable_tui.kernel.tasks._transitions import apply_state
from pi_durable_tui.storage.json_ops import Json, JsonObject, check_json, copy_json
from pi_durable_tui.storage.records import TaskRecord

T = TypeVar("T")
InvocationMode = Literal["run", "abort"]
_MISSING: Any = object()


@dataclass(eq=False)
class InvocationSignal:
    """The kernel's side of one invocation's runtime: its signal and whether it ended."""

    aborted: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the invocation is signalled or ends (R42)."""
    ended: bool = False
    wait_refused: TaskGateClosed | None = None
    """Set when an abort handler tried to wait; the task faults with it (R43)."""

    def end(self) -> None:
        """Mark the invocation ended: every operation rejects, and the signal is set (R42)."""
        self.ended = True
        self.aborted.set()


class TaskRuntime:
    """The runtime handed to a task's phases and abort handler. Created by the scheduler.

    Args:
        host: The Session, as the tasks part sees it.
        wait_for_task: Waits until a task is terminal and returns its record.
        task_id: The task.
        mode: ``run`` for phases, ``abort`` for the abort handler.
        signal: The invocation's signal, kept by the scheduler.
        offers: The Session's continuation offers (``_continuations``).
    """

    _SURFACE: ClassVar[frozenset[str]] = frozenset(
        {
            "commit",
            "continuation",
            "offer_continuation",
            "transition",
            "memo",
            "sleep",
            "outcomes",
            "wait_for_task",
            "aborted",
            "task_id",
            "conversation_id",
            "mode",
        }
    )
    """The public members: what phase and abort handlers may use (DESIGN.md 3.1)."""

    def __init__(
        self,
        host: TaskHost,
        wait_for_task: Callable[[int], Awaitable[TaskRecord]],
        task_id: int,
        mode: InvocationMode,
        signal: InvocationSignal,
        offers: ContinuationOffers | None = None,
    ) -> None:
        self._host = host
        self._wait_for_task = wait_for_task
        self._task_id = task_id
        self._mode: InvocationMode = mode
        self._signal = signal
        self._offers = offers if offers is not None else ContinuationOffers()

    @property
    def task_id(self) -> int:
        """The task this runtime runs."""
        return self._task_id

    @property
    def mode(self) -> InvocationMode:
        """``run`` in a phase, ``abort`` in the abort handler."""
        return self._mode

    @property
    def aborted(self) -> asyncio.Event:
        """Set when the invocation is signalled (before it is cancelled) or ends (R42)."""
        return self._signal.aborted

    def _ended_error(self) -> TaskGateClosed:
        return TaskGateClosed(f"Task {self._task_id} invocation has ended")

    def _record(self) -> TaskRecord | None:
        return self._host.live.task(self._task_id)

    @property
    def conversation_id(self) -> int:
        """The task's conversation (it never changes, R12).

        Raises:
            TaskGateClosed: When the task is terminal.
        """
        record = self._record()
        if record is None:
            raise TaskGateClosed(f"Task {self._task_id} is terminal")
        return record.conversation_id

    def _gate(self, record: TaskRecord | None) -> TaskRecord:
        if self._signal.ended:
            raise self._ended_error()
        if self._host.closing:
            raise SessionClosed()
        if record is None or not record.is_live:
            raise TaskGateClosed(f"Task {self._task_id} is terminal")
        if record.status != "running":
            raise TaskGateClosed(f"Task {self._task_id} is {record.status}")
        if self._mode == "run" and record.abort_requested:
            raise TaskGateClosed(f"Task {self._task_id} has a durable abort mark")
        return record

    @overload
    async def commit(
        self, fn: Callable[[Tx], Awaitable[T]], *, then: Continuation | None = None
    ) -> T: ...
    @overload
    async def commit(self, fn: Callable[[Tx], T], *, then: Continuation | None = None) -> T: ...

    async def commit(self, fn: Callable[[Tx], Any], *, then: Continuation | None = None) -> Any:
        """Commit on the line as this task; ``fn`` may return the task's next state (R38).

        Args:
            fn: Receives the ``Tx``. Returning a ``Running``, ``Waiting``,
                ``Completed``, ``Failed`` or ``Aborted`` moves the task in the same
                commit; returning ``None`` (or anything else) leaves it.
            then: A waiting task's next step, run in this commit when the commit
                ends that task's wait (``_continuations``, issue 14).

        Returns:
            What ``fn`` returned.

        Raises:
            TaskGateClosed: When the gate is closed (see the module docstring), or an
                abort handler returned ``Waiting`` (R43).
            WaitRejected: ``fn`` returned an invalid wait (R51, R52).
        """

        async def gated(staged: StagedCommit) -> Any:
            self._gate(staged.candidate_task(self._task_id))
            result = fn(Tx(staged))
            if inspect.isawaitable(result):
                result = await result
            if isinstance(result, (Running, Waiting, Completed, Failed, Aborted)):
                if self._mode == "abort" and isinstance(result, Waiting):
                    # REMINDER: remembered, so the task faults with this message even
                    # when the handler catches the error and returns.
                    self._signal.wait_refused = TaskGateClosed(
                        f"Abort handler of task {self._task_id} cannot wait"
                    )
                    raise self._signal.wait_refused
                state: TaskState = result

                async def apply() -> None:  # once the whole commit is staged (R53)
                    await apply_state(self._host, staged, self._task_id, state)

                staged.on_prepare.append(apply)
            if then is not None:

                async def carry_on() -> None:  # after this task's own state (R53)
                    await run_continuation(self._host, staged, then)

                staged.on_prepare.append(carry_on)
            return result

        return await self._host.run(gated, origin_task=self._task_id)

    def offer_continuation(self, builder: Builder) -> None:
        """Offer this task's next step to the task whose commit will end its wait.

        ``builder(record, *args)`` gets this task's record and what the ending task
        passes to ``continuation``; it returns a ``Continuation`` or ``None``. The
        offer lasts until it is used or this task's next invocation starts.
        """
        self._offers.offer(self._task_id, builder)

    async def continuation(self, *args: Any) -> Continuation | None:
        """The step of a waiter whose wait ends with this task, built now (or ``None``).

        Call it just before the commit that ends this task, outside the line, and
        pass the result as that commit's ``then``.
        """
        found = self._offers.take(self._host.live, self._task_id)
        if found is None:
            return None
        record, builder = found
        return await builder(record, *args)

    async def transition(self, state: TaskState) -> None:
        """Commit only a new state (a shorthand for ``commit(lambda tx: state)``)."""
        await self.commit(lambda tx: state)

    async def memo(self, name: str, candidate: Json = _MISSING) -> Json:
        """Read a memo, or store ``candidate`` unless a value exists (first writer wins, R40).

        Args:
            name: The memo's name (looked up as an own key only).
            candidate: The value to store if none exists; omit it to only read.

        Returns:
            The committed value (``None`` when reading a memo that does not exist).
        """
        if candidate is _MISSING:
            memos = self._gate(self._record()).memos or {}
            return copy_json(memos[name]) if name in memos else None
        check_json(candidate, f"memo {name!r}")

        def write(staged: StagedCommit) -> Json:
            record = self._gate(staged.candidate_task(self._task_id))
            memos = dict(record.memos or {})
            if name in memos:
                return copy_json(memos[name])
            memos[name] = copy_json(candidate)
            staged.put_task(replace(record, memos=memos))
            return copy_json(candidate)

        return await self._host.run(write, origin_task=self._task_id)

    async def sleep(self, until: float) -> None:
        """Sleep until the clock reaches ``until`` (ms); rejects once signalled (R41).

        Raises:
            TaskGateClosed: When the invocation is signalled or ends, before or
                during the sleep.
        """
        await self._until_signalled(self._host.clock.sleep_until(until))

    async def outcomes(self, task_ids: Sequence[int]) -> list[JsonObject]:
        """Return the outcomes of terminal tasks, in order (R52).

        Raises:
            TaskGateClosed: ``Task <id> is not terminal`` for a live (or held) task.
            TaskNotFound: For an unknown task.
        """
        self._gate(self._record())
        results: list[JsonObject] = []
        for task_id in task_ids:
            record = await self._host.read_task(task_id)
            if record is None:
                raise TaskNotFound(task_id)
            if record.is_live:
                raise TaskGateClosed(f"Task {task_id} is not terminal")
            results.append(copy_json(record.state["outcome"]))  # type: ignore[arg-type]
        return results

    async def wait_for_task(self, task_id: int) -> TaskRecord:
        """Wait until another task is terminal and return its record (R43, R56).

        Abort handlers use it for background tasks they created. It rejects like
        ``sleep`` once the invocation is signalled or ends.
        """
        self._gate(self._record())
        return await self._until_signalled(self._wait_for_task(task_id))

    async def _until_signalled(self, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable`` unless the invocation's signal comes first (R41, R42)."""
        if self._signal.ended or self._signal.aborted.is_set():
            if inspect.iscoroutine(awaitable):
                awaitable.close()  # never started; close it so it is not reported
            raise self._ended_error()
        work = asyncio.ensure_future(awaitable)
        signal = asyncio.ensure_future(self._signal.aborted.wait())
        try:
            await asyncio.wait((work, signal), return_when=asyncio.FIRST_COMPLETED)
        finally:
            signal.cancel()
            if not work.done():
                work.cancel()
        if work.done() and not work.cancelled():
            return work.result()
        raise self._ended_error()
