"""The ``Harness``: a Session plus conversations, a registry, settings and environments.

Lifecycle (R21-R28):

- ``await Harness.open(storage, models=..., registry=..., ...)`` checks that the
  registry holds the built-in tasks (R21), opens the Session (which reconciles
  what a crash left, R22) and dispatches nothing (R23).
- ``resume()`` starts scheduling; so does any call that asks for progress
  (``Conversation.submit``, ``compact``, ``abort``, ``wait_for_idle``,
  ``Submission.wait``, ``Harness.wait_for_task`` / ``wait_for_idle``). Reads never
  do (``inspect``, ``task_graph``, ``usage``, documents, views).
- ``root()`` finds or creates conversation 1 (R24); ``conversation(id)`` is a
  handle on any conversation; ``create_conversation`` and ``Conversation.fork``
  make new ones in one commit (R25, R26).
- ``close()`` seals admission, ends views and watches, joins every invocation
  and closes storage; it writes no outcome, so interrupted work resumes at the
  next open (R27).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Literal

from pi_durable_tui.ai import Models
from pi_durable_tui.env import SecretRedactor
from pi_durable_tui.harness._errors import HarnessClosed, RegistryIncomplete
from pi_durable_tui.harness._runtime import KernelTasks
from pi_durable_tui.harness._services import EnvFactory, HarnessServices
from pi_durable_tui.harness._session_hooks import HarnessHooks
from pi_durable_tui.harness._settings import Settings, SettingsSource
from pi_durable_tui.harness.conversations import (
    Conversation,
    ConversationCreated,
    CreationHook,
    Init,
    Submission,
    finish_creation,
    withdraw,
)
from pi_durable_tui.harness.extensions import BUILTIN_TASKS, HarnessTask, Registry
from pi_durable_tui.harness.generation import plan_admitted_request
from pi_durable_tui.harness.permissions import PermissionMode, PermissionPolicy
from pi_durable_tui.harness.state import USAGE_DOC, AgentChange, total_usage
from pi_durable_tui.harness.tool import (
    Choice,
    commit_decision,
    session_policy,
    set_session_mode,
)
from pi_durable_tui.kernel import (
    Clock,
    CloseReason,
    Ownerless,
    Report,
    Session,
    TaskDefinition,
    TaskGraphState,
    TaskOwned,
    Tx,
)
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.records import ROOT_CONVERSATION_ID, ConversationRecord, TaskRecord


class Harness:
    """A durable agent harness over one store. Open it with ``await Harness.open(...)``."""

    def __init__(
        self, services: HarnessServices, creation: CreationHook, tasks: KernelTasks
    ) -> None:
        self._services = services
        self._creation = creation
        self._tasks = tasks

    @classmethod
    async def open(
        cls,
        storage: Storage,
        *,
        models: Models,
        registry: Registry,
        settings: SettingsSource | None = None,
        env: EnvFactory | None = None,
        clock: Clock | None = None,
        on_report: Callable[[Report], None] | None = None,
        conversation_created: ConversationCreated | None = None,
        redactor: SecretRedactor | None = None,
    ) -> Harness:
        """Open a harness over an open store (R21-R23).

        Args:
            storage: The store; the harness closes it on ``close()``.
            models: The models and providers requests use.
            registry: From ``create_registry()``; extensions may be installed and
                uninstalled while the harness runs (hot reload, R35).
            settings: A ``Settings`` or a callable returning the current settings;
                read again at every decision (R34).
            env: Builds a conversation's execution environment at each use (R118).
            clock: The time source (``SystemClock`` by default).
            on_report: Receives problems that are reported rather than raised.
            conversation_created: Runs in every commit that creates a conversation,
                after the built-in documents (R25).
            redactor: Hides secret values in every commit (issue 13); by default
                the values of this process's secret-looking environment variables
                and the keys of the configured providers, read now.

        Returns:
            The open harness; nothing runs until ``resume()`` or a progress call.

        Raises:
            RegistryIncomplete: The registry lacks built-in tasks (R21).
        """
        missing = [name for name in BUILTIN_TASKS if name not in registry.snapshot().tasks]
        if missing:
            await storage.close()
            raise RegistryIncomplete(missing)
        creation = CreationHook(conversation_created)
        if redactor is None:
            redactor = SecretRedactor.from_environ(extra=models.provider_keys())
        holder: list[Harness] = []
        tasks = KernelTasks(
            registry, lambda: holder[0]._services, lambda cid: holder[0].conversation(cid)
        )
        session = await Session.open(
            storage,
            registry=tasks.kernel_registry,
            clock=clock,
            hooks=HarnessHooks(creation, redactor),
            on_report=on_report,
        )
        services = HarnessServices(
            session=session,
            models=models,
            registry=registry,
            settings_source=settings if settings is not None else Settings(),
            env_factory=env,
            tasks=tasks,
            on_report=on_report,
            redactor=redactor,
            request_planner=plan_admitted_request,
        )
        harness = cls(services, creation, tasks)
        holder.append(harness)
        session.subscribe(services.submissions.on_commit)
        session.subscribe(services.remember_entries)
        session.closed.add_done_callback(harness._on_session_end)
        return harness

    def _on_session_end(self, future: asyncio.Future[CloseReason]) -> None:
        if future.cancelled():
            return
        reason = future.result()
        # REMINDER: a wait still pending when the harness ends would never settle.
        self._services.submissions.fail_all(
            reason.error if reason.error is not None else HarnessClosed()
        )

    # -- state --

    @property
    def models(self) -> Models:
        """The models requests use."""
        return self._services.models

    @property
    def redactor(self) -> SecretRedactor:
        """Hides secret values in every commit; printed output uses it too (issue 13)."""
        return self._services.redactor

    @property
    def registry(self) -> Registry:
        """The registry of extensions and tasks."""
        return self._services.registry

    @property
    def session(self) -> Session:
        """The underlying Session (documents, raw commits, task reads)."""
        return self._services.session

    @property
    def closed(self) -> asyncio.Future[CloseReason]:
        """Resolves when the harness ends: closed, or failed (R8)."""
        return self._services.session.closed

    def settings(self) -> Settings:
        """The settings as they are now (R34)."""
        return self._services.settings()

    def resume(self) -> None:
        """Start scheduling; idempotent (R23).

        Raises:
            HarnessClosed: After ``close()``.
        """
        self._services.check_open()
        self._services.session.resume()

    # -- conversations (R24-R26) --

    def conversation(self, conversation_id: int) -> Conversation:
        """Return a handle on a conversation (it is not checked to exist)."""
        return Conversation(self._services, self._creation, conversation_id)

    async def root(
        self, *, agent: AgentChange | None = None, init: Init | None = None
    ) -> Conversation:
        """Return conversation 1, creating it (with ``agent`` and ``init``) if absent (R24).

        When it exists, ``agent`` and ``init`` are ignored and nothing is written.
        """
        self._services.check_open()
        storage = self._services.session.storage
        if await storage.conversation(ROOT_CONVERSATION_ID) is None:
            creation = self._creation

            async def create(tx: Tx) -> None:
                if await tx.conversation(ROOT_CONVERSATION_ID) is not None:
                    return
                record = tx.create_root_conversation()
                await finish_creation(tx, creation, record, agent, init)

            await self._services.session.commit(create)
        return self.conversation(ROOT_CONVERSATION_ID)

    async def create_conversation(
        self,
        *,
        ownership: Ownerless | TaskOwned | None = None,
        agent: AgentChange | None = None,
        init: Init | None = None,
    ) -> Conversation:
        """Create a conversation in one commit (R25, R26).

        Args:
            ownership: ``Ownerless()`` (default) or ``TaskOwned(task_id)``.
            agent: A change applied after the creation hook.
            init: ``init(tx, conversation_id)``, run last in the commit.

        Returns:
            The new conversation.
        """
        self._services.check_open()
        creation = self._creation

        async def create(tx: Tx) -> ConversationRecord:
            record = tx.create_conversation(ownership or Ownerless())
            await finish_creation(tx, creation, record, agent, init)
            return record

        record = await self._services.session.commit(create)
        return self.conversation(record.id)

    # -- submissions and tasks --

    def definition(self, task: HarnessTask | str) -> TaskDefinition:
        """Return the kernel definition installed for a harness task, for ``tx.create_task``.

        Args:
            task: A ``define_task`` definition, or its name.

        Returns:
            The definition the session runs for that task name now.

        Raises:
            KeyError: When no task of that name is installed.
        """
        return self._services.task_definition(task if isinstance(task, str) else task.name)

    async def submission(self, submission_id: int) -> Submission | None:
        """Reacquire a submission handle (after a reopen, say); ``None`` if unknown (R68).

        Raises:
            HarnessClosed: After ``close()``.
        """
        self._services.check_open()
        record = await self._services.session.storage.submission(submission_id)
        return None if record is None else Submission(self._services, record)

    async def abort_submission(
        self, submission_id: int, conversation_id: int | None = None
    ) -> Literal["aborted", "already_placed", "settled", "not_found"]:
        """Withdraw a submission if it is still queued (R66).

        Args:
            submission_id: The submission.
            conversation_id: When given, a submission of another conversation
                counts as unknown.

        Returns:
            ``aborted`` (withdrawn: settled ``unanswered``/``aborted`` and removed
            from the inbox), ``already_placed``, ``settled``, or ``not_found``.
        """
        self._services.check_open()

        async def abort(tx: Tx) -> Literal["aborted", "already_placed", "settled", "not_found"]:
            return await withdraw(tx, submission_id, conversation_id)

        return await self._services.session.commit(abort)

    async def abort_task(self, task_id: int) -> Literal["terminal", "marked"]:
        """Abort one task (R46); explicit aborts reach background tasks too."""
        self._services.check_open()
        self._services.session.resume()
        return await self._services.session.abort_task(task_id)

    async def wait_for_task(self, task_id: int) -> TaskRecord:
        """Wait until a task is terminal and return its record (R56)."""
        self._services.check_open()
        self._services.session.resume()
        return await self._services.session.wait_for_task(task_id)

    async def wait_for_idle(self) -> None:
        """Wait until no ordinary work of any ownerless conversation is live (R58)."""
        self._services.check_open()
        self._services.session.resume()
        await self._services.session.wait_for_idle()

    # -- permissions (issue 13) --

    async def decide(
        self,
        conversation_id: int,
        call_id: str,
        choice: Choice,
        *,
        message: str | None = None,
        rule: str | None = None,
    ) -> None:
        """Commit the user's decision on a call waiting for one; the call then goes on.

        Args:
            conversation_id: The conversation of the call.
            call_id: The tool call's ID.
            choice: ``once``, ``session`` (an allow rule for this session),
                ``project`` (the same; the host writes the project's settings) or ``deny``.
            message: With ``deny``: what the model is told besides the refusal.
            rule: The rule ``session``/``project`` adds (default: the request's suggestion).

        Raises:
            DecisionRejected: The call is not waiting for a decision.
        """
        self._services.check_open()
        await commit_decision(
            self._services, conversation_id, call_id, choice, message=message, rule=rule
        )

    async def set_permission_mode(self, mode: PermissionMode) -> None:
        """Commit the session's permission mode (it wins over the settings' mode)."""
        self._services.check_open()
        await set_session_mode(self._services, mode)

    async def permission_policy(self) -> PermissionPolicy:
        """The mode and rules in force now (the settings and the session's choices)."""
        return await session_policy(self._services)

    # -- reads (never start scheduling) --

    async def inspect(self) -> JsonObject:
        """Return ``{scheduling, tasks, submissions}`` at one point of the line (R28).

        Raises:
            HarnessClosed: After ``close()``.
        """
        self._services.check_open()
        return await self._services.session.inspect()

    def task_graph(self) -> JsonObject:
        """Return every live task as a graph node (R126)."""
        return self._services.session.task_graph()

    def watch_task_graph(self) -> TaskGraphState:
        """Return the task graph kept current by publications (R126)."""
        return self._services.session.watch_task_graph()

    async def usage(self) -> JsonObject:
        """Sum the spend of every conversation (R116).

        Raises:
            HarnessClosed: After ``close()``.
        """
        self._services.check_open()
        session = self._services.session
        ledgers: list[JsonObject] = []
        cursor = None
        while True:
            page = await session.storage.scan_conversations(limit=500, cursor=cursor)
            for record in page.items:
                ledger = await session.snapshot(USAGE_DOC, record.id)
                if ledger is not None:
                    ledgers.append(ledger)
            if page.cursor is None:
                break
            cursor = page.cursor
        return total_usage(ledgers)

    # -- close (R27) --

    async def close(self) -> None:
        """Close the harness and its store; every call awaits the same shutdown (R27).

        Then every environment the harness built is cleaned up (issue 13): the
        processes its commands left are ended and their spill files deleted.
        """
        self._services.closing = True
        self._tasks.close()
        try:
            await self._services.session.close()
        finally:
            await asyncio.shield(self._services.cleanup_envs())
