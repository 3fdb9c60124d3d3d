"""``ToolCallApi``, the ``api`` a tool's ``execute`` receives, and ``CallProgress`` behind it.

``ToolCallApi`` shows a tool author the ``ToolApi`` surface and nothing else
(issue 14); what the tool task reads back (the buffer, the details, the
diagnostics, ``settle``) is ``CallProgress``, which the task holds and the tool
never sees. Output goes into a ``ToolOutputBuffer`` (bounded, exact dropped counts, control
characters stripped from the retained window, R102). The harness's
``ThrottledCommitter`` (``harness/_progress.py``, shared with streamed partials)
commits the slot's changes (``output``, ``dropped_bytes``, ``dropped_lines``,
``details``, ``diagnostics``) with the adaptive throttle of R103: the first change
after an idle period at once, then at least ``progress.output_interval_ms`` apart
and at most about 100 KiB/s of written bytes, one commit in flight, changes made
meanwhile coalesced. A slot update applies only while the round still
holds a slot with this task's ID. The output window of a progress commit passes
through the harness's ``SecretRedactor.streaming`` first, withholding a possible
start of a secret at its end; the commit itself redacts every other string
(the session's filter, issue 13). ``details()`` resolves once
a commit holds the value (R104); the terminal commit is the final flush.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from pi_durable_tui.harness._progress import ProgressThrottle, ThrottledCommitter
from pi_durable_tui.harness._runtime import HarnessRuntime, TaskScope
from pi_durable_tui.harness._services import HarnessServices
from pi_durable_tui.harness.extensions import Diagnostic, OutputLimits, Severity
from pi_durable_tui.harness.state import LIVE_DOC, slot_of_task
from pi_durable_tui.harness.tool._output import ToolOutputBuffer
from pi_durable_tui.kernel import Tx
from pi_durable_tui.storage.json_ops import Json, copy_json

if TYPE_CHECKING:
    from pi_durable_tui.env import ExecutionEnv, OutputWindow

T = TypeVar("T")
_UNSET: Any = object()
_MISSING: Any = object()


class NoEnvironment(RuntimeError):
    """The harness has no execution environment for this conversation (R96, R118)."""

    def __init__(self) -> None:
        super().__init__("No execution environment is configured")


class CallProgress:
    """A running call's progress and its throttled commits: the tool task's side (R102-R104).

    Args:
        runtime: The tool task's runtime.
        services: The harness's services (the streaming redactor).
        limits: The tool's output limits.
        interval_ms: ``progress.output_interval_ms`` read when execution started.
    """

    def __init__(
        self,
        runtime: HarnessRuntime,
        services: HarnessServices,
        limits: OutputLimits,
        interval_ms: int,
    ) -> None:
        self._runtime = runtime
        self.limits = limits
        self.interval_ms = interval_ms
        self.buffer = ToolOutputBuffer(limits)
        throttle = ProgressThrottle(min_interval_ms=interval_ms)
        self._committer = ThrottledCommitter(self._commit_progress, throttle)
        self.details_value: Json = _UNSET
        self.diagnostics: list[Diagnostic] = []
        self._details_waiters: list[asyncio.Future[None]] = []
        self._settled = False
        self._committed_output = ""
        self._redactor = services.redactor

    def check_open(self, call_id: str) -> None:
        """Refuse a change after the call settled.

        Raises:
            RuntimeError: After the call settled.
        """
        if self._settled:
            raise RuntimeError(f"Tool call {call_id} has settled")

    def changed(self) -> None:
        """Schedule a progress commit (R103)."""
        self._committer.changed()

    def details(self, value: Json) -> asyncio.Future[None]:
        """Record the running details; the future resolves once a commit holds them."""
        self.details_value = copy_json(value)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._details_waiters.append(future)
        self.changed()
        return future

    async def _commit_progress(self) -> int:
        """Commit what changed; returns the bytes of output the commit wrote (R103)."""
        snapshot = self._progress_fields()
        waiters, self._details_waiters = self._details_waiters, []
        output = snapshot["output"]
        shown = self._committed_output
        # An output that grew at its end is stored as an append of the new text;
        # anything else (a sliding tail) replaces the whole string.
        written = output[len(shown) :] if output.startswith(shown) else output
        conversation_id, task_id = self._runtime.conversation_id, self._runtime.task_id

        async def write(tx: Tx) -> bool:
            live = await tx.doc(LIVE_DOC, conversation_id)
            slot = slot_of_task(live, task_id)
            if slot is None:
                return False
            slot.update(snapshot)
            return True

        if await self._runtime.commit(write):
            self._committed_output = output
        for future in waiters:
            if not future.done():
                future.set_result(None)
        return len(written.encode("utf-8", "surrogatepass"))

    def _progress_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "output": self._redactor.streaming(self.buffer.text),
            "dropped_bytes": self.buffer.dropped_bytes,
            "dropped_lines": self.buffer.dropped_lines,
        }
        if self.details_value is not _UNSET:
            fields["details"] = copy_json(self.details_value)
        if self.diagnostics:
            fields["diagnostics"] = [d.to_json() for d in self.diagnostics]
        return fields

    async def settle(self) -> None:
        """Stop progress commits; the terminal commit writes the final state (R85, R104).

        A progress commit in flight is allowed to land first (it holds the line
        before the terminal commit anyway); a committer that only waits is cancelled.
        """
        self._settled = True
        if not self.buffer.finished:
            self.buffer.finish()  # an incomplete character at the end becomes U+FFFD
        await self._committer.stop()

    @property
    def settled(self) -> bool:
        """Whether the call settled (no more output or progress commits)."""
        return self._settled

    @property
    def last_details(self) -> Json:
        """The last value given to ``details()``, or ``None`` (R97, R104)."""
        return None if self.details_value is _UNSET else self.details_value

    def resolve_details(self) -> None:
        """Resolve ``details()`` waiters: the terminal commit holds their values."""
        waiters, self._details_waiters = self._details_waiters, []
        for future in waiters:
            if not future.done():
                future.set_result(None)


class ToolCallApi(TaskScope):
    """The ``ToolApi`` of one execution of one tool call: what a tool author may use.

    A ``TaskScope`` of the tool task's invocation: ``task_id``,
    ``conversation_id``, ``aborted``, ``definition``, ``conversation`` and
    ``wait_for_task`` are the runtime's own, not forwarded.

    Args:
        runtime: The tool task's runtime.
        services: The harness's services (the session, for ``abort_task``).
        progress: The call's progress, which output, details and diagnostics go to.
        call_id: The provider's call ID.
        env: The environment built for this execution, or ``None``.
    """

    def __init__(
        self,
        runtime: HarnessRuntime,
        services: HarnessServices,
        progress: CallProgress,
        call_id: str,
        env: ExecutionEnv | None,
    ) -> None:
        super().__init__(*runtime._share())
        self._harness_runtime = runtime
        self._session = services.session
        self._progress = progress
        self._call_id = call_id
        self._env = env

    @property
    def call_id(self) -> str:
        """The provider's call ID."""
        return self._call_id

    @property
    def env(self) -> ExecutionEnv:
        """The execution environment.

        Raises:
            NoEnvironment: When none is configured.
        """
        if self._env is None:
            raise NoEnvironment()
        return self._env

    @property
    def output_window(self) -> OutputWindow | None:
        """The window an environment may skip to, for tail-retaining tools (R105)."""
        limits = self._progress.limits
        if limits.retain != "tail":
            return None
        from pi_durable_tui.env import OutputWindow

        return OutputWindow(
            max_bytes=limits.max_bytes,
            max_lines=limits.max_lines,
            min_interval_ms=self._progress.interval_ms,
            bytes_per_second=102400,
        )

    def output(self, chunk: str | bytes, skipped: tuple[int, int, bool] | None = None) -> None:
        """Append output (R102); ``skipped`` adds what an environment skipped (R105).

        ``skipped`` is ``(bytes, newlines, ends_line)``: the counts of the output the
        environment dropped just before ``chunk``, and whether it ended a line.

        Raises:
            RuntimeError: After the call settled.
        """
        progress = self._progress
        progress.check_open(self._call_id)
        if skipped is not None:
            byte_count, line_count, ends_line = skipped
            progress.buffer.skip(byte_count, line_count, ends_line=ends_line)
        if chunk:
            progress.buffer.write(chunk)
        progress.changed()

    def details(self, value: Json) -> asyncio.Future[None]:
        """Replace the running details now (R104).

        Returns:
            A future resolved after the commit holding the value; awaiting it is
            optional (the value is recorded at the call).

        Raises:
            RuntimeError: After the call settled.
        """
        self._progress.check_open(self._call_id)
        return self._progress.details(value)

    def diagnostic(self, severity: Severity, message: str, code: str | None = None) -> None:
        """Record a model-visible remark; it is committed with the next progress commit."""
        self._progress.diagnostics.append(Diagnostic(severity, message, code))
        self._progress.changed()

    @overload
    async def commit(self, fn: Callable[[Tx], Awaitable[T]]) -> T: ...
    @overload
    async def commit(self, fn: Callable[[Tx], T]) -> T: ...
    async def commit(self, fn: Callable[[Tx], Any]) -> Any:
        """Commit as the tool task (entries it appends get ``by_task_id``)."""
        return await self._harness_runtime.commit(fn)

    async def memo(self, name: str, candidate: Any = _MISSING) -> Json:
        """The task's first-writer-wins memo (R40)."""
        if candidate is _MISSING:
            return await self._harness_runtime.memo(name)
        return await self._harness_runtime.memo(name, candidate)

    async def abort_task(self, task_id: int) -> Literal["terminal", "marked"]:
        """Abort a task of the session (R46): explicit aborts reach background tasks."""
        return await self._session.abort_task(task_id)
