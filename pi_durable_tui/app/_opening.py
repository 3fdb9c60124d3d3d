"""``OpeningSession``: the screen's model and controller while the session opens.

``pidurable`` paints its first frame before it imports the harness and opens the
store (issue 8: first paint at most twice a bare Textual app's). The screen starts
on an ``OpeningSession``: an empty transcript, the working directory in the
footer and ``Opening session...`` in the status line. Once the screen has painted,
``start()`` runs the opener; when it returns the session's own model and
controller, the screen's listeners follow the real model and are told that
everything changed, and every later read and call goes straight through.

An action taken meanwhile waits for the session: a prompt typed and sent during
start-up is submitted once the session is open (the screen runs controller calls
one at a time, in order). Esc, withdrawing and paging have nothing to act on yet
and do nothing; reads answer "nothing yet". When the opener fails, ``on_failure``
gets the error (``pidurable`` leaves the screen and prints it) and waiting actions
raise ``SessionNotOpened``. ``close()`` stops an opening still running (what it
had opened is closed by the opener's own undo) or closes the session's controller.

This module imports only the view values: the screen can paint without the harness.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence

from pi_durable_tui.app._ports import Controller, ExportFormat, HostAction, ScreenModel
from pi_durable_tui.app._view import (
    ApprovalQuestion,
    Block,
    CommandInfo,
    ConversationInfo,
    Footer,
    ModelChoice,
    Notice,
    QueueItem,
    SessionInfo,
    SkillInfo,
    TaskNode,
    TrustQuestion,
    ViewChange,
)

OPENING_STATUS = "Opening session..."
"""The status line until the session is open."""

EVERYTHING = ViewChange(
    transcript_reset=True,
    queue=True,
    tasks=True,
    footer=True,
    status=True,
    notices=True,
    trust=True,
    approval=True,  # a request a killed process left waiting shows again (issue 13)
)
"""The change the screen is told when the session's own model takes over."""

SessionOpener = Callable[[], Awaitable[tuple[ScreenModel, Controller]]]
"""Opens the session and returns its model and controller (the controller owns the session)."""


class SessionNotOpened(RuntimeError):
    """The session failed to open, or the screen closed first: the action cannot run."""


class OpeningSession:
    """A ``ScreenModel`` and ``Controller`` that hands over to the session's once it opens.

    Args:
        cwd: The working directory, shown in the footer meanwhile.
        opener: Opens the session (run by ``start()``).
        on_failure: Called with the opener's error (not with a cancellation).
        waiting: The status line until ``start()`` when the session is not opened
            at once (``pidurable -r``: the user picks it first); ``Opening
            session...`` from then on.
    """

    def __init__(
        self,
        cwd: str,
        opener: SessionOpener,
        on_failure: Callable[[BaseException], None],
        *,
        waiting: str | None = None,
    ) -> None:
        self._status = waiting or OPENING_STATUS
        self._footer = Footer(cwd=cwd, model="…")  # not known until the session opens
        self._opener = opener
        self._on_failure = on_failure
        self._task: asyncio.Task[None] | None = None
        self._settled = asyncio.Event()
        self._model: ScreenModel | None = None
        self._controller: Controller | None = None
        self._listeners: list[Callable[[ViewChange], None]] = []
        self._unsubscribe_real: Callable[[], None] | None = None
        self._closing: asyncio.Future[None] | None = None

    @property
    def opened(self) -> bool:
        """Whether the session's own model and controller have taken over."""
        return self._controller is not None

    def start(self) -> None:
        """Begin opening the session, on the running loop; later calls do nothing."""
        if self._task is None and self._closing is None:
            self._task = asyncio.get_running_loop().create_task(self._open())
            if self._status != OPENING_STATUS:
                self._status = OPENING_STATUS
                self._forward(ViewChange(status=True))

    async def wait_opened(self) -> None:
        """Wait until the session is open.

        Raises:
            SessionNotOpened: It failed to open, or ``close()`` came first.
        """
        await self._controlled()

    async def _open(self) -> None:
        try:
            model, controller = await self._opener()
        except asyncio.CancelledError:
            self._settled.set()
            raise
        except BaseException as error:
            self._settled.set()
            self._on_failure(error)
            return
        self._model, self._controller = model, controller
        self._unsubscribe_real = model.subscribe(self._forward)
        self._settled.set()
        self._forward(EVERYTHING)

    def _forward(self, change: ViewChange) -> None:
        for listener in list(self._listeners):
            listener(change)

    async def _controlled(self) -> Controller:
        await self._settled.wait()
        if self._controller is None or self._closing is not None:
            raise SessionNotOpened("The session is not open (it failed to open, or closed).")
        return self._controller

    # -- ScreenModel ------------------------------------------------------------------

    @property
    def blocks(self) -> Sequence[Block]:
        """The session's blocks; none while it opens."""
        return () if self._model is None else self._model.blocks

    @property
    def has_older(self) -> bool:
        """Whether older blocks exist (never while it opens)."""
        return self._model is not None and self._model.has_older

    @property
    def queue(self) -> Sequence[QueueItem]:
        """The session's queue; empty while it opens."""
        return () if self._model is None else self._model.queue

    @property
    def tasks(self) -> Sequence[TaskNode]:
        """The session's task tree; empty while it opens."""
        return () if self._model is None else self._model.tasks

    @property
    def footer(self) -> Footer:
        """The session's footer; the working directory alone while it opens."""
        return self._footer if self._model is None else self._model.footer

    @property
    def status(self) -> str:
        """``Opening session...`` (or the waiting text), then the session's status line."""
        return self._status if self._model is None else self._model.status

    @property
    def busy(self) -> bool:
        """Whether the shown conversation runs (not while it opens)."""
        return self._model is not None and self._model.busy

    @property
    def notices(self) -> Sequence[Notice]:
        """The session's notices; none while it opens."""
        return () if self._model is None else self._model.notices

    @property
    def trust_question(self) -> TrustQuestion | None:
        """The session's trust question; none while it opens."""
        return None if self._model is None else self._model.trust_question

    @property
    def approval(self) -> ApprovalQuestion | None:
        """The session's call waiting for a decision; none while it opens."""
        return None if self._model is None else self._model.approval

    def block(self, key: str) -> Block | None:
        """The loaded block with this key (none while it opens)."""
        return None if self._model is None else self._model.block(key)

    def subscribe(self, listener: Callable[[ViewChange], None]) -> Callable[[], None]:
        """Call ``listener`` after each change, the hand-over included; returns unsubscribe."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return unsubscribe

    # -- Controller -------------------------------------------------------------------

    def refusal(self, action: HostAction) -> str | None:
        """The opened controller's answer; while opening, the action waits and it answers then."""
        return None if self._controller is None else self._controller.refusal(action)

    async def submit(self, text: str, *, follow_up: bool = False) -> None:
        """Submit once the session is open."""
        await (await self._controlled()).submit(text, follow_up=follow_up)

    async def abort(self) -> list[str]:
        """Abort the foreground work; nothing runs while the session opens."""
        return [] if self._controller is None else await self._controller.abort()

    async def withdraw(self, submission_id: int) -> str | None:
        """Withdraw a queued item; nothing is queued while the session opens."""
        return None if self._controller is None else await self._controller.withdraw(submission_id)

    async def load_older(self, count: int) -> int:
        """Load older blocks; there are none while the session opens."""
        return 0 if self._controller is None else await self._controller.load_older(count)

    async def compact(self, instructions: str | None = None) -> None:
        """Compact once the session is open."""
        await (await self._controlled()).compact(instructions)

    async def cycle_thinking(self) -> str:
        """Move to the next thinking level once the session is open."""
        return await (await self._controlled()).cycle_thinking()

    async def cycle_permission_mode(self) -> str:
        """Move to the next permission mode once the session is open."""
        return await (await self._controlled()).cycle_permission_mode()

    async def permissions(self) -> list[str]:
        """The mode and rules in force once the session is open."""
        return await (await self._controlled()).permissions()

    async def reload_extensions(self) -> list[str]:
        """Reload the extension files once the session is open."""
        return await (await self._controlled()).reload_extensions()

    async def mcp_servers(self) -> list[str]:
        """The MCP servers once the session is open."""
        return await (await self._controlled()).mcp_servers()

    async def clients(self) -> list[str]:
        """Who is attached once the session is open."""
        return await (await self._controlled()).clients()

    def models(self) -> list[ModelChoice]:
        """The models ``/model`` offers; none until the session is open."""
        return [] if self._controller is None else self._controller.models()

    async def set_model(self, ref: str) -> None:
        """Use a model once the session is open."""
        await (await self._controlled()).set_model(ref)

    async def conversations(self) -> list[ConversationInfo]:
        """The session's conversations, once it is open."""
        return await (await self._controlled()).conversations()

    async def switch_conversation(self, conversation_id: int) -> None:
        """Show another conversation once the session is open."""
        await (await self._controlled()).switch_conversation(conversation_id)

    async def fork(self, entry_id: int) -> str:
        """Fork once the session is open."""
        return await (await self._controlled()).fork(entry_id)

    async def new_session(self) -> None:
        """Start a new session once this one is open."""
        await (await self._controlled()).new_session()

    async def sessions(self) -> list[SessionInfo]:
        """The stored sessions of this directory, once the session is open."""
        return await (await self._controlled()).sessions()

    async def open_session(self, path: str) -> None:
        """Switch to another stored session once this one is open."""
        await (await self._controlled()).open_session(path)

    async def export(self, fmt: ExportFormat, path: str | None = None) -> str:
        """Write the transcript once the session is open."""
        return await (await self._controlled()).export(fmt, path)

    def custom_commands(self) -> list[CommandInfo]:
        """The custom commands; none until the session is open."""
        return [] if self._controller is None else self._controller.custom_commands()

    async def run_custom_command(self, name: str, arguments: str) -> None:
        """Run a custom command once the session is open."""
        await (await self._controlled()).run_custom_command(name, arguments)

    def skills(self) -> list[SkillInfo]:
        """The skills; none until the session is open."""
        return [] if self._controller is None else self._controller.skills()

    def complete_path(self, prefix: str) -> list[str]:
        """Completions for ``@``; none until the session is open."""
        return [] if self._controller is None else self._controller.complete_path(prefix)

    def history(self) -> Sequence[str]:
        """Earlier prompts; none until the session is open."""
        return () if self._controller is None else self._controller.history()

    def refresh_settings(self) -> None:
        """Re-read the settings once the session is open (nothing to do before)."""
        if self._controller is not None:
            self._controller.refresh_settings()

    async def answer_trust(self, question_id: str, trusted: bool) -> None:
        """Answer a trust question once the session is open."""
        await (await self._controlled()).answer_trust(question_id, trusted)

    async def decide(self, call_id: str, choice: str, message: str | None = None) -> None:
        """Decide a waiting call once the session is open."""
        await (await self._controlled()).decide(call_id, choice, message)

    async def stop_task(self, task_id: int) -> str:
        """Stop a live task once the session is open."""
        return await (await self._controlled()).stop_task(task_id)

    async def background_command(self) -> str:
        """Move the running command once the session is open."""
        return await (await self._controlled()).background_command()

    async def running_jobs(self) -> int:
        """The jobs leaving would end: none while the session is still opening."""
        controller = self._controller
        return 0 if controller is None else await controller.running_jobs()

    def leave_jobs_running(self) -> None:
        """Leave the jobs running at exit (only an open session has any)."""
        controller = self._controller
        if controller is not None:
            controller.leave_jobs_running()

    async def close(self) -> None:
        """Stop the opening or close the session; safe to call twice and concurrently."""
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._close())
        await asyncio.shield(self._closing)

    async def _close(self) -> None:
        task = self._task
        if task is not None and not task.done():
            # REMINDER: cancelling the opener is safe: what it opened is closed by
            # its own undo (AgentApp.open, start_screen) before the cancellation ends.
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._settled.set()  # waiting actions end with SessionNotOpened
        if self._unsubscribe_real is not None:
            self._unsubscribe_real()
            self._unsubscribe_real = None
        if self._controller is not None:
            await self._controller.close()
