"""What a tool's ``execute`` holds: the ``ToolApi`` protocol (R102-R107).

Tools see this narrow face, never the tool task or the Harness:

- ``output(chunk)`` streams text into a bounded buffer whose retained window is
  committed to ``pi.live`` with the progress throttle (R102, R103);
- ``details(value)`` replaces the running details at once and returns an
  awaitable that resolves once they are committed (R104); ``diagnostic(...)``
  adds a model-visible remark (R104);
- ``env`` is the conversation's execution environment, built for this execution
  (R118); it raises ``No execution environment is configured`` when there is none;
- ``commit(fn)`` is a runtime commit as the tool task (entries get ``by_task_id``);
  ``memo`` is the task's first-writer-wins memo (R40);
- ``conversation(id)`` returns a handle accepting input submissions, ``abort`` and
  ``wait_for_idle``, bound to this invocation (R107);
- ``definition(task)`` gives the kernel definition of an installed harness task,
  so a tool can create durable tasks with ``tx.create_task``;
- ``task_id``, ``call_id``, ``conversation_id`` and ``aborted`` (set before the
  coroutine is cancelled, so a tool can stop a process group cleanly).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, overload

from pi_durable_tui.storage.json_ops import Json

if TYPE_CHECKING:
    from pi_durable_tui.env import ExecutionEnv, OutputWindow
    from pi_durable_tui.harness._submission_types import Input
    from pi_durable_tui.harness.extensions._task_def import HarnessTask
    from pi_durable_tui.kernel import TaskDefinition, Tx
    from pi_durable_tui.storage.records import SubmissionRecord, TaskRecord

T = TypeVar("T")

Severity = Literal["info", "warn", "error"]
"""How serious a diagnostic is (R98)."""


class SubmissionView(Protocol):
    """A submission as a tool holds it; ``Submission`` is one.

    Defined here so that the protocols tools see import nothing above them.
    """

    @property
    def id(self) -> int:
        """The submission ID."""
        ...

    async def status(self) -> SubmissionRecord:
        """Return the committed record (R68)."""
        ...

    async def wait(self) -> SubmissionRecord:
        """Wait until the submission settles and return the settled record (R68)."""
        ...


class ToolConversation(Protocol):
    """A conversation as a tool may drive it (R107)."""

    @property
    def conversation_id(self) -> int:
        """The conversation."""
        ...

    async def submit(self, submission: Input) -> SubmissionView:
        """Admit an input submission; derive request IDs from ``api.task_id`` (R107)."""
        ...

    async def abort(self, *, background: bool = False) -> None:
        """Abort the conversation's work (R57)."""
        ...

    async def wait_for_idle(self) -> None:
        """Wait until the conversation is ordinarily idle (R58)."""
        ...


class ToolApi(Protocol):
    """What a tool's ``execute(args, api)`` may use."""

    @property
    def task_id(self) -> int:
        """The tool task's ID: stable across a crash, so request IDs derive from it."""
        ...

    @property
    def call_id(self) -> str:
        """The provider's tool-call ID (not unique across a session, R107)."""
        ...

    @property
    def conversation_id(self) -> int:
        """The conversation the call belongs to."""
        ...

    @property
    def aborted(self) -> asyncio.Event:
        """Set when the call is being aborted, before its coroutine is cancelled."""
        ...

    @property
    def env(self) -> ExecutionEnv:
        """The execution environment (raises when none is configured)."""
        ...

    @property
    def output_window(self) -> OutputWindow | None:
        """For tail-retaining tools: what an environment may skip (R105)."""
        ...

    def output(self, chunk: str | bytes, skipped: tuple[int, int, bool] | None = None) -> None:
        """Append output; ``skipped`` adds (bytes, newlines, ends_line) an environment skipped."""
        ...

    def details(self, value: Json) -> Awaitable[None]:
        """Replace the running details now; await the result to know they are committed (R104)."""
        ...

    def diagnostic(self, severity: Severity, message: str, code: str | None = None) -> None:
        """Record a model-visible remark, committed with the next progress commit."""
        ...

    @overload
    async def commit(self, fn: Callable[[Tx], Awaitable[T]]) -> T: ...
    @overload
    async def commit(self, fn: Callable[[Tx], T]) -> T: ...
    async def commit(self, fn: Callable[[Tx], Any]) -> Any:
        """Commit as the tool task (entries it appends get ``by_task_id``)."""
        ...

    async def memo(self, name: str, candidate: Any = ...) -> Json:
        """The task's first-writer-wins memo (R40)."""
        ...

    def definition(self, task: HarnessTask | str) -> TaskDefinition:
        """The kernel definition installed for a harness task, for ``tx.create_task``."""
        ...

    def conversation(self, conversation_id: int) -> ToolConversation:
        """A handle on another conversation, bound to this invocation (R107)."""
        ...

    async def abort_task(self, task_id: int) -> Literal["terminal", "marked"]:
        """Abort a task of the session (R46), such as a background job the call ends."""
        ...

    async def wait_for_task(self, task_id: int) -> TaskRecord:
        """Wait until a task of the session is terminal (R56)."""
        ...
