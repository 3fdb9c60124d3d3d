"""``OpeningSession``: the screen's model and controller while the session opens.

``pidurable`` paints its first frame before it imports the harness and opens the
store (issue 8: first paint at most twice a bare Textual app's). The screen starts
on an ``OpeningSession``: an empty transcript, the working directory in the
footer and ``Opening session...`` in the status line. Once the screen has painted,
``start()`` runs the opener; when it returns the session's own model and
controller, ``on_open`` hands them to the screen (``PidurableApp.hand_over``),
which talks to them directly from then on: nothing is forwarded for the life of
the session (issue 14).

An action taken meanwhile waits for the session: a prompt typed and sent during
start-up is submitted once the session is open (the screen runs controller calls
one at a time, in order): the one forwarding this module does. Esc, withdrawing
and paging have nothing to act on yet and do nothing; reads answer "nothing
yet". When the opener fails, ``on_failure`` gets the error (``pidurable`` leaves
the screen and prints it) and waiting actions raise ``SessionNotOpened``.
``close()`` stops an opening still running (what it had opened is closed by the
opener's own undo) or closes the session's controller.

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
    SessionDetails,
    SessionInfo,
    SkillInfo,
    TaskNode,
    TrustQuestion,
    ViewChange,
)

OPENING_STATUS = "Opening session..."
"""The status line until the session is open."""

SessionOpener = Callable[[], Awaitable[tuple[ScreenModel, Controller]]]
"""Opens the session and returns its model and controller (the controller owns the session)."""

HandOver = Callable[[ScreenModel, Controller], None]
"""Receives the session's own model and controller once it is open."""


class SessionNotOpened(RuntimeError):
    """The session failed to open, or the screen closed first: the action cannot run."""


class OpeningSession:
    """A ``ScreenModel`` and ``Controller`` until the session opens, then a hand-over.

    Args:
        cwd: The working directory, shown in the footer meanwhile.
        opener: Opens the session (run by ``start()``).
        on_failure: Called with the opener's error (not with a cancellation).
        waiting: The status line until ``start()`` when the session is not opened
            at once (``pidurable -r``: the user picks it first); ``Opening
            session...`` from then on.
        on_open: Receives the session's model and controller once it is open (the
            screen's ``hand_over``); this object keeps only the controller, to
            close it.
    """

    def __init__(
        self,
        cwd: str,
        opener: SessionOpener,
        on_failure: Callable[[BaseException], None],
        *,
        waiting: str | None = None,
        on_open: HandOver | None = None,
    ) -> None:
        self._status = waiting or OPENING_STATUS
        self._footer = Footer(cwd=cwd, model="…")  # not known until the session opens
        self._opener = opener
        self._on_failure = on_failure
        self._task: asyncio.Task[None] | None = None
        self._settled = asyncio.Event()
        self._on_open = on_open
        self._controller: Controller | None = None
        self._listeners: list[Callable[[ViewChange], None]] = []
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
        self._controller = controller
        self._settled.set()
        if self._on_open is not None:
            self._on_open(model, controller)

    def _forward(self, change: ViewChange) -> None:
        for listener in list(self._listeners):
            listener(change)

    async def _controlled(self) -> Controller:
        await self._settled.wait()
        if self._controller is None or self._closing is not None:
            raise SessionNotOpened("The session is not open (it failed to open, or closed).")
        return self._controller

    # -- ScreenModel: what the screen shows while the session opens ------------------

    blocks: Sequence[Block] = ()
    has_older = False
    queue: Sequence[QueueItem] = ()
    tasks: Sequence[TaskNode] = ()
    busy = False
    notices: Sequence[Notice] = ()
    trust_question: TrustQuestion | None = None
    approval: ApprovalQuestion | None = None

    @property
    def footer(self) -> Footer:
        """The working directory alone: the model is not known yet."""
        return self._footer

    @property
    def status(self) -> str:
        """``Opening session...`` (or the waiting text)."""
        return self._status

    def block(self, key: str) -> Block | None:
        """No block is loaded while the session opens."""
        return None

    def subscribe(self, listener: Callable[[ViewChange], None]) -> Callable[[], None]:
        """Call ``listener`` after each change (the status line's); returns unsubscribe."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return unsubscribe

    # -- Controller -------------------------------------------------------------------

    def refusal(self, action: HostAction) -> str | None:
        """None: while opening, the action waits and the session's controller answers then."""
        return None

    async def submit(self, text: str, *, follow_up: bool = False) -> None:
        """Submit once the session is open."""
        await (await self._controlled()).submit(text, follow_up=follow_up)

    async def run_shell(self, command: str, *, context: bool) -> None:
        """Run the user's command once the session is open."""
        await (await self._controlled()).run_shell(command, context=context)

    async def abort(self) -> list[str]:
        """Nothing runs while the session opens: nothing to abort."""
        return []

    async def withdraw(self, submission_id: int) -> str | None:
        """Nothing is queued while the session opens."""
        return None

    async def load_older(self, count: int) -> int:
        """There are no older blocks while the session opens."""
        return 0

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

    async def session_details(self) -> SessionDetails:
        """What ``/session`` lists, once the session is open."""
        return await (await self._controlled()).session_details()

    async def session_name(self) -> str:
        """The session's name, once it is open."""
        return await (await self._controlled()).session_name()

    async def name_session(self, name: str) -> str:
        """Name the session once it is open."""
        return await (await self._controlled()).name_session(name)

    def models(self) -> list[ModelChoice]:
        """The models ``/model`` offers: none until the session is open."""
        return []

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
        """The custom commands: none until the session is open."""
        return []

    async def run_custom_command(self, name: str, arguments: str) -> None:
        """Run a custom command once the session is open."""
        await (await self._controlled()).run_custom_command(name, arguments)

    def skills(self) -> list[SkillInfo]:
        """The skills: none until the session is open."""
        return []

    def complete_path(self, prefix: str) -> list[str]:
        """Completions for ``@``: none until the session is open."""
        return []

    def history(self) -> Sequence[str]:
        """Earlier prompts: none until the session is open."""
        return ()

    def refresh_settings(self) -> None:
        """Nothing to re-read before the session is open."""

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
        return 0

    def leave_jobs_running(self) -> None:
        """Nothing to leave running: only an open session has jobs."""

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
        if self._controller is not None:
            await self._controller.close()
