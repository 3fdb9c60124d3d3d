"""The runtime a harness task's phases receive, and the wrapping into kernel tasks.

``TaskScope`` is what every object bound to one task invocation shows, written
once: ``task_id``, ``conversation_id``, ``aborted``, ``wait_for_task``,
``definition`` and ``conversation``. ``HarnessRuntime`` and a tool's ``api``
(``tool/_tool_api.py``) are both scopes, so neither forwards these to the other
(issue 14).

``HarnessRuntime`` is the kernel's ``TaskRuntime`` (commit, memo, sleep, outcomes,
wait for a task, the abort signal) plus what a harness task needs: ``agent()``,
resolved at most once per phase from that phase's registry snapshot (R33);
``env()``, built at each call (R118); ``models``; ``settings()``; and
``conversation(id)``, a handle bound to this invocation (R42, R107).

``KernelTasks`` turns each ``HarnessTask`` into a kernel ``TaskDefinition`` whose
handlers build a ``HarnessRuntime`` around the kernel runtime. It does so once per
definition object, so the kernel sees a stable object per definition and notices a
reload by identity (R35).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pi_durable_tui.ai import Models
from pi_durable_tui.harness._errors import HarnessClosed
from pi_durable_tui.harness._services import HarnessServices
from pi_durable_tui.harness._settings import Settings
from pi_durable_tui.harness._submission_types import Input
from pi_durable_tui.harness.conversations import Submission
from pi_durable_tui.harness.extensions import HarnessTask, Registry
from pi_durable_tui.harness.state import ResolvedAgent
from pi_durable_tui.kernel import (
    Continuation,
    TaskDefinition,
    TaskGateClosed,
    TaskRegistry,
    TaskRuntime,
    Tx,
)
from pi_durable_tui.kernel import define_task as define_kernel_task
from pi_durable_tui.storage.json_ops import Json, JsonObject
from pi_durable_tui.storage.records import TaskRecord

if TYPE_CHECKING:
    from pi_durable_tui.env import ExecutionEnv
    from pi_durable_tui.harness.conversations import Conversation

T = TypeVar("T")
_MISSING: Any = object()


class TaskScope:
    """What every object bound to one task invocation shows (R38-R43, R107).

    Args:
        runtime: The kernel runtime of this invocation.
        services: The harness's shared services.
        conversations: Builds conversation handles.
    """

    def __init__(
        self,
        runtime: TaskRuntime,
        services: HarnessServices,
        conversations: Callable[[int], Conversation],
    ) -> None:
        self._runtime = runtime
        self._services = services
        self._conversations = conversations

    def _share(self) -> tuple[TaskRuntime, HarnessServices, Callable[[int], Conversation]]:
        """This scope's parts, for another scope of the same invocation."""
        return self._runtime, self._services, self._conversations

    @property
    def task_id(self) -> int:
        """The task."""
        return self._runtime.task_id

    @property
    def conversation_id(self) -> int:
        """The task's conversation (it never changes, R12)."""
        return self._runtime.conversation_id

    @property
    def aborted(self) -> asyncio.Event:
        """Set when the invocation is signalled or ends (R42)."""
        return self._runtime.aborted

    async def wait_for_task(self, task_id: int) -> TaskRecord:
        """Wait until a task is terminal (R43, R56)."""
        return await self._runtime.wait_for_task(task_id)

    def definition(self, task: HarnessTask | str) -> TaskDefinition:
        """The kernel definition installed for a harness task, for ``tx.create_task``.

        Raises:
            KeyError: When no task of that name is installed.
        """
        return self._services.task_definition(task if isinstance(task, str) else task.name)

    def conversation(self, conversation_id: int) -> BoundConversation:
        """A handle on a conversation, usable only while this invocation runs (R42, R107)."""
        return BoundConversation(self._conversations(conversation_id), self.aborted)


class HarnessRuntime(TaskScope):
    """What a harness task's phase (or abort handler) may use; built as a ``TaskScope``."""

    _agent: ResolvedAgent | None = None  # resolved at the first agent() of the phase

    @property
    def models(self) -> Models:
        """The models this harness can call."""
        return self._services.models

    def settings(self) -> Settings:
        """The settings as they are now (R34)."""
        return self._services.settings()

    def now(self) -> float:
        """The harness clock, in milliseconds."""
        return self._services.session.clock.now()

    async def commit(self, fn: Callable[[Tx], Any], *, then: Continuation | None = None) -> Any:
        """A gated commit as this task; ``fn`` may return the next state (R38).

        ``then``: a waiting task's next step for this commit (``Continuation``).
        """
        return await self._runtime.commit(fn, then=then)

    def offer_continuation(self, builder: Callable[..., Awaitable[Continuation | None]]) -> None:
        """Offer this task's next step to the task that will end its wait (issue 14)."""
        self._runtime.offer_continuation(builder)

    async def continuation(self, *args: Any) -> Continuation | None:
        """The step of a waiter whose wait this task ends, built now (issue 14)."""
        return await self._runtime.continuation(*args)

    async def memo(self, name: str, candidate: Json = _MISSING) -> Json:
        """Read or store a memo (first writer wins, R40)."""
        if candidate is _MISSING:
            return await self._runtime.memo(name)
        return await self._runtime.memo(name, candidate)

    async def sleep(self, until: float) -> None:
        """Sleep until the clock reaches ``until`` (ms) (R41)."""
        await self._runtime.sleep(until)

    async def outcomes(self, task_ids: Sequence[int]) -> list[JsonObject]:
        """Return the outcomes of terminal tasks in order (R52)."""
        return await self._runtime.outcomes(task_ids)

    async def agent(self) -> ResolvedAgent:
        """The conversation's agent, resolved once per phase (R33)."""
        if self._agent is None:
            self._agent = await self._services.agent(self.conversation_id)
        return self._agent

    async def env(self) -> ExecutionEnv | None:
        """Build the conversation's environment now; ``None`` when none is configured (R118).

        Raises:
            Exception: Whatever the environment factory raised.
        """
        agent = await self.agent()
        return self._services.build_env(self.conversation_id, agent.cwd)


class BoundConversation:
    """A conversation handle that rejects once its invocation ended (R42, R107).

    Args:
        conversation: The underlying handle.
        ended: The invocation's signal.
    """

    def __init__(self, conversation: Conversation, ended: asyncio.Event) -> None:
        self._conversation = conversation
        self._ended = ended

    @property
    def conversation_id(self) -> int:
        """The conversation."""
        return self._conversation.id

    def _check(self) -> None:
        if self._ended.is_set():
            raise TaskGateClosed("The invocation holding this conversation handle has ended")

    async def submit(self, submission: Input) -> Submission:
        """Admit an input (only inputs: R107)."""
        self._check()
        if not isinstance(submission, Input):
            raise TypeError("A task's conversation handle accepts only Input submissions")
        return await self._conversation.submit(submission)

    async def abort(self, *, background: bool = False) -> None:
        """Abort the conversation's work (R57)."""
        self._check()
        await self._conversation.abort(background=background)

    async def wait_for_idle(self) -> None:
        """Wait until the conversation is ordinarily idle (R58)."""
        self._check()
        await self._conversation.wait_for_idle()


def with_services(
    phase: Callable[[TaskRecord, HarnessRuntime, HarnessServices], Awaitable[None]],
) -> Callable[[TaskRecord, HarnessRuntime], Awaitable[None]]:
    """Wrap a built-in task's phase so that it receives the harness services.

    Only the built-in tasks' definitions wrap their phases this way (issue 14): an
    extension's task sees a ``HarnessRuntime`` and nothing behind it.

    Args:
        phase: The phase, taking ``(task, runtime, services)``.

    Returns:
        A phase taking ``(task, runtime)``, as a task definition wants it.
    """

    async def run(task: TaskRecord, runtime: HarnessRuntime) -> None:
        await phase(task, runtime, runtime._services)

    return run


class KernelTasks:
    """Keeps a kernel task registry in step with the harness registry (R32, R35).

    Args:
        registry: The harness registry.
        services_ref: Returns the services once the harness is open.
        conversations: Builds conversation handles.
    """

    def __init__(
        self,
        registry: Registry,
        services_ref: Callable[[], HarnessServices],
        conversations: Callable[[int], Conversation],
    ) -> None:
        self._registry = registry
        self._services_ref = services_ref
        self._conversations = conversations
        self._wrapped: dict[HarnessTask, TaskDefinition] = {}
        self.kernel_registry = TaskRegistry()
        self._sync()
        self._unsubscribe = registry.subscribe(self._sync)

    def definition(self, name: str) -> TaskDefinition:
        """Return the kernel definition installed for ``name``."""
        definition = self.kernel_registry.get(name)
        if definition is None:
            raise KeyError(f"Task {name} is not installed")
        return definition

    def close(self) -> None:
        """Stop following the harness registry."""
        self._unsubscribe()

    def _sync(self) -> None:
        tasks = self._registry.snapshot().tasks
        current = self.kernel_registry.snapshot()
        wanted = {name: self._wrap(task) for name, task in tasks.items()}
        changed = [d for name, d in wanted.items() if current.get(name) is not d]
        removed = [name for name in current if name not in wanted]
        if removed:
            self.kernel_registry.uninstall(*removed)
        if changed:
            self.kernel_registry.install(*changed)
        # Forget wrappers of definitions no longer installed (they can never return:
        # a reinstall is a new object).
        live = set(tasks.values())
        self._wrapped = {task: d for task, d in self._wrapped.items() if task in live}

    def _wrap(self, task: HarnessTask) -> TaskDefinition:
        wrapped = self._wrapped.get(task)
        if wrapped is None:
            wrapped = define_kernel_task(
                task.name,
                initial=task.initial,
                phases={name: self._handler(phase) for name, phase in task.phases.items()},
                abort=self._handler(task.abort),
                version=task.version,
                migrate=task.migrate,
            )
            self._wrapped[task] = wrapped
        return wrapped

    def _handler(
        self, phase: Callable[[TaskRecord, HarnessRuntime], Awaitable[None]]
    ) -> Callable[[TaskRecord, TaskRuntime], Awaitable[None]]:
        async def handler(task: TaskRecord, runtime: TaskRuntime) -> None:
            services = self._services_ref()
            if services.closing:
                raise HarnessClosed()
            await phase(task, HarnessRuntime(runtime, services, self._conversations))

        return handler
