"""The ``Conversation`` handle: submit, abort, configure, fork, compact, read (R57-R69, R24-R26).

A handle names one conversation of an open harness; holding it costs nothing and it
never caches transcript state. Operations that ask for progress (``submit``,
``abort``, ``compact``, ``wait_for_idle``) start scheduling (R23); reads never do,
and neither do views and watches (``view_state``, ``watch``, R123, R124).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pi_durable_tui.harness._errors import ConversationBusy, SubmissionRejected
from pi_durable_tui.harness._services import HarnessServices
from pi_durable_tui.harness._submission_types import EntryDraft, Input, Write
from pi_durable_tui.harness.context import ContextView, load_context
from pi_durable_tui.harness.conversations._creation import CreationHook
from pi_durable_tui.harness.conversations._inbox import PlannedRequest, admit
from pi_durable_tui.harness.conversations._shell import (
    ShellOutcome,
    begin_shell,
    finish_shell,
    settle_interrupted_shell,
    shell_progress,
)
from pi_durable_tui.harness.conversations._submissions import Submission
from pi_durable_tui.harness.state import (
    INBOX_DOC,
    LIVE_DOC,
    RESET,
    AgentChange,
    configure,
    is_busy,
    user_message,
)
from pi_durable_tui.harness.views import ViewState, ViewWatch, view_state, watch_view
from pi_durable_tui.kernel import (
    ConversationOwned,
    DocDefinition,
    Ownerless,
    Report,
    SessionClosed,
    SessionFailed,
    TaskOwned,
    Tx,
)
from pi_durable_tui.storage.errors import StorageRejected
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.records import ConversationRecord, EntryRecord

if TYPE_CHECKING:
    from pi_durable_tui.env import ExecutionEnv

Init = Callable[[Tx, int], "Awaitable[None] | None"]
"""``init(tx, conversation_id)``: runs last in a creating commit (R24-R26)."""

_ADMISSION_ERRORS = (
    ConversationBusy,
    SubmissionRejected,
    SessionFailed,
    SessionClosed,
    StorageRejected,
)
"""Errors of an admission itself: raised as they are, never retried without the plan."""


class Conversation:
    """A handle on one conversation of an open harness.

    Args:
        services: The harness's shared services.
        creation: The creation hook (conveniences initialize in their callback).
        conversation_id: The conversation.
    """

    def __init__(
        self, services: HarnessServices, creation: CreationHook, conversation_id: int
    ) -> None:
        self._services = services
        self._creation = creation
        self.id = conversation_id

    def __repr__(self) -> str:
        return f"<Conversation {self.id}>"

    # -- progress --

    async def submit(self, submission: Input | Write | str) -> Submission:
        """Admit a submission in one commit and return its handle (R59).

        Args:
            submission: An ``Input``, a ``Write``, or text (an ``Input`` with the
                default ``when_busy="follow_up"``).

        Returns:
            The handle; ``await handle.wait()`` for the answer.

        Raises:
            ConversationBusy: A ``when_busy="reject"`` input while busy.
            SubmissionRejected: A request ID reused for another type.
            HarnessClosed: After ``close()``.
        """
        self._services.check_open()
        if isinstance(submission, str):
            submission = Input(submission)
        services = self._services

        planned = await self._first_request(submission)

        def admission(plan: PlannedRequest | None) -> Callable[[Tx], Awaitable[Any]]:
            return lambda tx: admit(tx, services, self.id, submission, plan)

        try:
            record = await services.session.commit(admission(planned))
        except _ADMISSION_ERRORS:
            raise
        except Exception as error:
            if planned is None:
                raise
            # Nothing of that commit landed: admit the input alone; its generation
            # prepares itself. REMINDER: a plan never costs the input.
            text = f"Applying the planned first request failed: {error}"
            services.report(Report("admission_plan_failed", text, error))
            record = await services.session.commit(admission(None))
        services.session.resume()
        return Submission(services, record)

    async def _first_request(self, submission: Input | Write) -> PlannedRequest | None:
        """Plan the request of the run an input to an idle conversation starts (issue 14).

        The admission then creates the generation at ``request``: one commit
        fewer per turn. Only a plan nothing was committed after is used (``admit``).
        """
        services = self._services
        planner = services.request_planner
        if planner is None or not isinstance(submission, Input):
            return None
        live = await services.session.snapshot(LIVE_DOC, self.id) or {}
        inbox = await services.session.snapshot(INBOX_DOC, self.id) or {}
        if is_busy(live) or inbox.get("items"):
            return None  # queued, not placed: the boundary that places it plans anew
        # REMINDER: the published seq, not ``storage.last_seq``: the snapshots above and
        # the plan's context are as of it, and the store's can be a commit ahead.
        seq = services.session.published_seq
        coming = user_message(submission.content_json(), services.session.clock.now())
        try:
            plan = await planner(services, self.id, [coming])
        except Exception:
            # REMINDER: the generation's own preparation meets the same error and
            # reports or fails it as R78 and R83 say; planning early must not
            # refuse the input instead.
            return None
        return PlannedRequest(plan, seq) if plan is not None else None

    async def reset(self, handoff: str | None = None) -> Submission:
        """Start a fresh context, optionally holding a handoff text (R69)."""
        model = None
        if handoff is not None:
            now = int(self._services.session.clock.now())
            model = [{"role": "user", "content": handoff, "timestamp": now}]
        return await self.submit(Write(EntryDraft(RESET, model=model, head="self")))

    async def abort(self, *, background: bool = False) -> None:
        """Abort the conversation's work and wait until it is idle (R57, R67).

        Queued inputs are withdrawn (settled ``unanswered``/``aborted``); queued
        writes stay. Background tasks keep running unless ``background=True``.
        """
        self._services.check_open()
        self._services.session.resume()
        await self._services.session.abort_conversation(self.id, background=background)

    async def wait_for_idle(self) -> None:
        """Wait until no ordinary work of the conversation is live (R58)."""
        self._services.check_open()
        self._services.session.resume()
        await self._services.session.wait_for_idle(self.id)

    async def compact(self, instructions: str | None = None) -> int:
        """Start a manual compaction; returns its task ID (R108-R114).

        The compaction is ordinary work of the conversation (Esc aborts it); its
        summary is placed as a write submission.
        """
        self._services.check_open()
        services = self._services
        data: JsonObject = {"reason": "manual"}
        if instructions:
            data["instructions"] = instructions

        def start(tx: Tx) -> int:
            task = tx.create_task(
                services.task_definition("pi.compaction"),
                data,
                ownership=ConversationOwned(),
                conversation_id=self.id,
            )
            return task.id

        task_id = await services.session.commit(start)
        services.session.resume()
        return task_id

    async def commit(self, fn: Callable[[Tx], Any]) -> Any:
        """Run a raw commit and return what ``fn`` returned (R1, R70).

        A raw commit follows no admission rules: ``tx.create_submission`` writes a
        record without a busy check or an inbox item, and ``tx.create_task`` or
        ``tx.create_conversation`` work as in the kernel (a conversation created
        here still gets the harness documents, R25). It does not start scheduling.

        Args:
            fn: ``fn(tx)``, sync or async; pass this conversation's ``id`` to
                the ``Tx`` methods that take a conversation.

        Returns:
            What ``fn`` returned.

        Raises:
            HarnessClosed: After ``close()``.
        """
        self._services.check_open()
        return await self._services.session.commit(fn)

    # -- configuration and structure --

    async def configure(self, change: AgentChange) -> None:
        """Change the conversation's agent (R29); applies from the next request."""
        self._services.check_open()
        await self._services.session.commit(lambda tx: configure(tx, self.id, change))

    async def fork(
        self,
        at: int,
        *,
        ownership: Ownerless | TaskOwned | None = None,
        agent: AgentChange | None = None,
        init: Init | None = None,
    ) -> Conversation:
        """Fork this conversation at a visible entry, in one commit (R17, R26).

        Args:
            at: The fork entry (inclusive).
            ownership: ``Ownerless()`` (default) or ``TaskOwned(task_id)``.
            agent: A change applied to the fork's copied agent.
            init: ``init(tx, conversation_id)``, run last in the commit.

        Returns:
            The new conversation.
        """
        self._services.check_open()
        creation = self._creation

        async def fork(tx: Tx) -> ConversationRecord:
            record = tx.fork_conversation(self.id, at, ownership or Ownerless())
            await finish_creation(tx, creation, record, agent, init)
            return record

        record = await self._services.session.commit(fork)
        return Conversation(self._services, self._creation, record.id)

    # -- reads (never start scheduling; after close they raise HarnessClosed) --

    async def snapshot(self, definition: DocDefinition) -> JsonObject | None:
        """Return a committed document of the conversation (``None`` when absent)."""
        self._services.check_open()
        return await self._services.session.snapshot(definition, self.id)

    async def entries(self, *, before: int | None = None, limit: int = 50) -> list[EntryRecord]:
        """Return up to ``limit`` visible entries before ``before``, newest first."""
        self._services.check_open()
        page = await self._services.session.storage.scan_entries(
            self.id,
            max_entry_id=None if before is None else before - 1,
            order="desc",
            limit=limit,
        )
        return [stored.entry for stored in page.items]

    async def view_state(self, tail: int | None = None) -> ViewState:
        """Mount the conversation's view: active entries and built-in documents (R123).

        Args:
            tail: ``None`` for every active entry, or keep the head marker and only
                the newest ``tail`` other entries (page older ones with
                ``view.older(before=...)``).

        Returns:
            The state; ``close()`` it when done (it also ends when the harness closes).

        Raises:
            UnknownConversation: The conversation does not exist.
            ValueError: A negative or non-integer ``tail``.
        """
        services = self._services
        return await view_state(services.session, self.id, tail, services.report)

    async def watch(self, tail: int | None = None) -> ViewWatch:
        """Watch the conversation's view frame by frame: ``async for frame in watch`` (R124).

        Args:
            tail: As for ``view_state``.

        Returns:
            The watch; ``await watch.stop()`` when done.

        Raises:
            UnknownConversation: The conversation does not exist.
            ValueError: A negative or non-integer ``tail``.
        """
        return await watch_view(self._services.session, self.id, tail)

    async def context(self, at: int | None = None) -> ContextView:
        """Return the model context as of an entry (or now) (R71-R76)."""
        self._services.check_open()
        return await load_context(self._services.session.storage, self.id, at)

    # -- the user's shell commands (``_shell``) --

    async def environment(self) -> ExecutionEnv | None:
        """Build the conversation's execution environment now (R118), as its tools get it."""
        self._services.check_open()
        agent = await self._services.agent(self.id)
        return self._services.build_env(self.id, agent.cwd)

    async def begin_shell(self, command: str, *, context: bool) -> None:
        """Commit that the user runs ``command`` (``!cmd``; ``!!cmd`` without ``context``).

        Raises:
            ShellRefused: The conversation runs, or another user command runs.
        """
        self._services.check_open()
        now = self._services.session.clock.now()
        await self._services.session.commit(
            lambda tx: begin_shell(tx, self.id, command, context, now)
        )

    async def shell_progress(self, output: str, dropped_lines: int, dropped_bytes: int) -> None:
        """Commit the running user command's retained output so far."""
        self._services.check_open()
        await self._services.session.commit(
            lambda tx: shell_progress(tx, self.id, output, dropped_lines, dropped_bytes)
        )

    async def finish_shell(self, outcome: ShellOutcome) -> int | None:
        """Commit how the running user command ended; the write's submission ID (R59)."""
        self._services.check_open()
        services = self._services
        now = services.session.clock.now()
        submission_id = await services.session.commit(
            lambda tx: finish_shell(tx, services, self.id, outcome, now)
        )
        services.session.resume()
        return submission_id

    async def settle_interrupted_shell(self) -> str | None:
        """On reopen: the user command a killed process left becomes ``interrupted``.

        Returns:
            Its command, or ``None`` when none was left running.
        """
        self._services.check_open()
        services = self._services
        now = services.session.clock.now()
        return await services.session.commit(
            lambda tx: settle_interrupted_shell(tx, services, self.id, now)
        )


async def finish_creation(
    tx: Tx,
    creation: CreationHook,
    record: ConversationRecord,
    agent: AgentChange | None,
    init: Init | None,
) -> None:
    """Initialize a conversation this commit created, then apply ``agent`` and ``init`` (R25)."""
    await creation.initialize(tx, record)
    if agent is not None:
        await configure(tx, record.id, agent)
    if init is not None:
        result = init(tx, record.id)
        if result is not None:
            await result
