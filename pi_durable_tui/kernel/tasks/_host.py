"""``TaskHost``: what the tasks part needs from the Session that hosts it.

The tasks part sits below the Session (the Session composes the scheduler), yet
its modules commit on the Session's line, read its live index and report
through it. Rather than import the Session, they depend on this narrow protocol
(DESIGN.md section 1: the lower part defines what it needs), which the kernel's
commit line satisfies:

- ``run(fn, origin_task=)``: a commit on the mutation line whose callback
  receives the ``StagedCommit`` (kernel callbacks stage records directly; a
  ``Tx`` is made only for author code and hooks);
- the committed state it reads: ``storage``, ``live``, ``read_task``;
- ``clock``, ``hooks``, ``report``, ``subscribe``, and the Session's condition
  (``closing``, ``failed``, ``check_usable``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar, overload

from pi_durable_tui.kernel._clock import Clock
from pi_durable_tui.kernel._errors import SessionFailed
from pi_durable_tui.kernel._hooks import Report, SessionHooks
from pi_durable_tui.kernel._publication import Listener
from pi_durable_tui.kernel._staging import StagedCommit
from pi_durable_tui.kernel.tasks._ownership import LiveIndex
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.records import TaskRecord

T = TypeVar("T")


class TaskHost(Protocol):
    """The Session as the tasks part sees it."""

    @property
    def storage(self) -> Storage:
        """The Session's backend, for reads outside the staged commit."""
        ...

    @property
    def live(self) -> LiveIndex:
        """Live tasks and the conversations around them, current after every commit."""
        ...

    @property
    def clock(self) -> Clock:
        """The Session's time source."""
        ...

    @property
    def hooks(self) -> SessionHooks:
        """The harness's extension points (R45, R48, R57)."""
        ...

    @property
    def closing(self) -> bool:
        """Whether ``close()`` has started."""
        ...

    @property
    def failed(self) -> SessionFailed | None:
        """The failure that poisoned the Session, if any."""
        ...

    def check_usable(self) -> None:
        """Raise ``SessionFailed`` or ``SessionClosed`` when new operations are refused."""
        ...

    def report(self, report: Report) -> None:
        """Hand a problem to ``on_report`` (never raises)."""
        ...

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Receive every commit after it is stored; returns the unsubscribe function."""
        ...

    async def read_task(self, task_id: int) -> TaskRecord | None:
        """Return a task's committed record (live ones from memory)."""
        ...

    @overload
    async def run(
        self, fn: Callable[[StagedCommit], Awaitable[T]], *, origin_task: int | None = None
    ) -> T: ...
    @overload
    async def run(
        self, fn: Callable[[StagedCommit], T], *, origin_task: int | None = None
    ) -> T: ...
    async def run(
        self, fn: Callable[[StagedCommit], object], *, origin_task: int | None = None
    ) -> object:
        """Run ``fn(staged)`` on the mutation line and commit what it staged atomically."""
        ...
