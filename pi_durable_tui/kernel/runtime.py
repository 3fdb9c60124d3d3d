"""``TaskRuntime``: what a phase or abort handler may do (R38-R43).

One runtime belongs to one invocation. Every operation is gated: it rejects once
the invocation has ended (``Task <id> invocation has ended``), while the Session
closes, when the task is not running (``Task <id> is terminal`` / ``is
<status>``), and, for a run invocation, when the task carries a durable abort
mark (``Task <id> has a durable abort mark``).

- ``commit(fn)``: a gated commit; ``fn(tx)`` may return the task's next state,
  which replaces the state in the same commit as the callback's other writes.
  Entries appended through it get ``by_task_id``. An abort handler may not
  return ``Waiting`` (R43).
- ``memo(name, candidate)``: first writer wins, in one gated commit (R40).
- ``sleep(until)``, ``outcomes(ids)``, ``wait_for_task(id)``.
- ``aborted``: an ``asyncio.Event`` set when the invocation is signalled, just
  before its coroutine is cancelled, so code can stop a process group cleanly;
  it is also set when the invocation ends for any other reason (R42), and
  ``sleep`` and ``wait_for_task`` reject as soon as it is set, even when they run
  in a helper coroutine the phase started.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from pi_durable_tui.kernel.errors import SessionClosed, TaskGateClosed, TaskNotFound
from pi_durable_tui.kernel.tasks import (
    Aborted,
    Completed,
    Failed,
    Running,
    TaskDefinition,
    TaskState,
    Waiting,
)
from pi_durable_tui.storage.json_ops import Json, JsonObject, check_json, copy_json
from pi_durable_tui.storage.records import TaskRecord

if TYPE_CHECKING:
    from pi_durable_tui.kernel.session import Session
    from pi_durable_tui.kernel.tx import Tx

T = TypeVar("T")
InvocationMode = Literal["run", "abort"]
_MISSING: Any = object()


class TaskRuntime:
    """The runtime handed to a task's phases and abort handler.

    Args:
        session: The Session.
        task_id: The task.
        definition: The definition this invocation runs (its snapshot, R35).
        mode: ``run`` for phases, ``abort`` for the abort handler.
        aborted: The invocation's signal.
    """

    def __init__(
        self,
        session: Session,
        task_id: int,
        definition: TaskDefinition,
        mode: InvocationMode,
        aborted: asyncio.Event,
    ) -> None:
        self.session = session
        self.task_id = task_id
        self.definition = definition
        self.mode = mode
        self.aborted = aborted
        self.ended = False
        self.wait_refused: TaskGateClosed | None = None
        """Set when an abort handler tried to wait; the task faults with it (R43)."""

    def end(self) -> None:
        """Mark the invocation ended: every operation rejects, and the signal is set (R42)."""
        self.ended = True
        self.aborted.set()

    def _ended_error(self) -> TaskGateClosed:
        return TaskGateClosed(f"Task {self.task_id} invocation has ended")

    @property
    def record(self) -> TaskRecord | None:
        """The task's newest committed record while it is live."""
        return self.session.live.task(self.task_id)

    @property
    def conversation_id(self) -> int:
        """The task's conversation (it never changes, R12)."""
        record = self.record
        if record is None:
            raise TaskGateClosed(f"Task {self.task_id} is terminal")
        return record.conversation_id

    def _gate(self, record: TaskRecord | None) -> TaskRecord:
        if self.ended:
            raise self._ended_error()
        if self.session.closing:
            raise SessionClosed()
        if record is None or not record.is_live:
            raise TaskGateClosed(f"Task {self.task_id} is terminal")
        if record.status != "running":
            raise TaskGateClosed(f"Task {self.task_id} is {record.status}")
        if self.mode == "run" and record.abort_requested:
            raise TaskGateClosed(f"Task {self.task_id} has a durable abort mark")
        return record

    def check(self) -> None:
        """Raise if an operation of this runtime would be rejected now."""
        self._gate(self.record)

    @overload
    async def commit(self, fn: Callable[[Tx], Awaitable[T]]) -> T: ...
    @overload
    async def commit(self, fn: Callable[[Tx], T]) -> T: ...

    async def commit(self, fn: Callable[[Tx], Any]) -> Any:
        """Commit on the line as this task; ``fn`` may return the task's next state (R38).

        Args:
            fn: Receives the ``Tx``. Returning a ``Running``, ``Waiting``,
                ``Completed``, ``Failed`` or ``Aborted`` moves the task in the same
                commit; returning ``None`` (or anything else) leaves it.

        Returns:
            What ``fn`` returned.

        Raises:
            TaskGateClosed: When the gate is closed (see the module docstring), or an
                abort handler returned ``Waiting`` (R43).
        """

        async def gated(tx: Tx) -> T:
            self._gate(tx.candidate_task(self.task_id))
            result = fn(tx)
            if inspect.isawaitable(result):
                result = await result
            if isinstance(result, (Running, Waiting, Completed, Failed, Aborted)):
                if self.mode == "abort" and isinstance(result, Waiting):
                    # REMINDER: remembered, so the task faults with this message even
                    # when the handler catches the error and returns.
                    self.wait_refused = TaskGateClosed(
                        f"Abort handler of task {self.task_id} cannot wait"
                    )
                    raise self.wait_refused
                tx.request_state(self.task_id, result)
            return result

        return await self.session.run_commit(gated, origin_task=self.task_id)

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
            memos = self._gate(self.record).memos or {}
            return copy_json(memos[name]) if name in memos else None
        check_json(candidate, f"memo {name!r}")

        def write(tx: Tx) -> Json:
            record = self._gate(tx.candidate_task(self.task_id))
            memos = dict(record.memos or {})
            if name in memos:
                return copy_json(memos[name])
            memos[name] = copy_json(candidate)
            tx.put_task(replace(record, memos=memos))
            return copy_json(candidate)

        return await self.session.run_commit(write, origin_task=self.task_id)

    async def sleep(self, until: float) -> None:
        """Sleep until the clock reaches ``until`` (ms); rejects once signalled (R41).

        Raises:
            TaskGateClosed: When the invocation is signalled or ends, before or
                during the sleep.
        """
        await self._until_signalled(self.session.clock.sleep_until(until))

    async def outcomes(self, task_ids: Sequence[int]) -> list[JsonObject]:
        """Return the outcomes of terminal tasks, in order (R52).

        Raises:
            TaskGateClosed: ``Task <id> is not terminal`` for a live (or held) task.
            TaskNotFound: For an unknown task.
        """
        self._gate(self.record)
        results: list[JsonObject] = []
        for task_id in task_ids:
            record = await self.session.read_task(task_id)
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
        self._gate(self.record)
        return await self._until_signalled(self.session.scheduler.wait_for_task(task_id))

    async def _until_signalled(self, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable`` unless the invocation's signal comes first (R41, R42)."""
        if self.ended or self.aborted.is_set():
            if inspect.iscoroutine(awaitable):
                awaitable.close()  # never started; close it so it is not reported
            raise self._ended_error()
        work = asyncio.ensure_future(awaitable)
        signal = asyncio.ensure_future(self.aborted.wait())
        try:
            await asyncio.wait((work, signal), return_when=asyncio.FIRST_COMPLETED)
        finally:
            signal.cancel()
            if not work.done():
                work.cancel()
        if work.done() and not work.cancelled():
            return work.result()
        raise self._ended_error()
