"""``PidurableApp``: the main screen over a ``ScreenModel`` and a ``Controller``.

The app renders committed state only: it subscribes to the model and patches
exactly what each ``ViewChange`` names (one block, the queue, the footer...),
and every action goes to the controller, whose effect comes back as a change
(no optimistic echo, DESIGN.md section 5). Controller calls run as workers in
the order they were made; a failing call becomes an error notice (its traceback
goes to the log file), never a crash. Keys live in ``_keys``, commands in
``_commands``.

The approval and trust prompts (issue 13) open one at a time (``_modal_prompts``);
the screen asks the controller to re-read the settings files every second, so
an edit made while the agent is idle is asked about too. Every key and paste
goes to the prompt on top the moment it arrives (``_prompt_keys`` says why).
Every screen pushed over the main one is an ``OverlayScreen`` and shows the
notices too (``_overlay``): the app shows them on the main bar and on the bar of
the screen on top.

Exit (``GuardedApp``): every path (Ctrl+C twice, Ctrl+D, ``/quit``, an
exception) closes the controller exactly once; an exception's traceback goes to
the log file the app was given, and the terminal says where after the screen is
restored.
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from textual import events, on
from textual.app import ComposeResult
from textual.message import Message
from textual.screen import Screen
from textual.worker import Worker, WorkerCancelled

from pi_durable_tui.app import (
    ActionRefused,
    Controller,
    Notice,
    NoticeLevel,
    ScreenModel,
    SessionInfo,
    ViewChange,
)
from pi_durable_tui.tui._block_views import OpenConversation
from pi_durable_tui.tui._commands import (
    SESSIONS_TITLE,
    CommandError,
    all_commands,
    as_message,
    fork_from_picker,
    parse_command,
    refused,
    session_items,
)
from pi_durable_tui.tui._completion import CompletionMenu
from pi_durable_tui.tui._editor import FOLLOW_UP_FALLBACK, PromptEditor
from pi_durable_tui.tui._exit import GuardedApp
from pi_durable_tui.tui._external_editor import edit_draft
from pi_durable_tui.tui._footer import FooterBar, StatusLine
from pi_durable_tui.tui._help import HelpScreen, key_rows
from pi_durable_tui.tui._jobs_prompt import JobsChoice, JobsExitScreen
from pi_durable_tui.tui._keys import KEY_BINDINGS, KeyActions
from pi_durable_tui.tui._main_screen import MainScreen
from pi_durable_tui.tui._modal_prompts import ModalPrompts
from pi_durable_tui.tui._notices import NoticeBar
from pi_durable_tui.tui._overlay import OverlayScreen
from pi_durable_tui.tui._picker import PickerItem, PickerScreen
from pi_durable_tui.tui._prompt_keys import PromptScreen
from pi_durable_tui.tui._queue_panel import QueuePanel, Withdraw
from pi_durable_tui.tui._render_context import RenderContext
from pi_durable_tui.tui._shell_mode import start_shell_line
from pi_durable_tui.tui._task_panel import TaskPanel
from pi_durable_tui.tui._themes import DEFAULT_THEME, load_themes
from pi_durable_tui.tui._transcript import NeedOlder, Transcript

T = TypeVar("T")


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
"""What the screen redraws when the session's own model takes over (``hand_over``)."""


class ModelChanged(Message):
    """A ``ViewChange`` of the model, carried into the app's message loop."""

    def __init__(self, change: ViewChange) -> None:
        super().__init__()
        self.change = change


_KEPT_NOTICES = 20
SETTINGS_POLL = 1.0
"""Seconds between two checks of the settings files while the screen runs."""
"""Seconds between two tries to open a prompt held back while the user types."""
HINTS = f"F1 help · {FOLLOW_UP_FALLBACK} follow-up · /model /agents /compact /tasks"
"""Key hints of the footer, the most needed first: a narrow footer cuts the end."""


class PidurableApp(KeyActions, ModalPrompts, GuardedApp):
    """The pidurable screen.

    Args:
        model: The view model of the shown conversation and the session.
        controller: Where every action goes.
        theme: The theme name (``dark``, ``light``, ``high-contrast``, ``ansi`` or a
            user theme); ``NO_COLOR`` in the environment forces ``ansi`` without colour.
        themes_dir: User themes (``$PIDURABLE_HOME/themes`` when omitted).
        log_path: Where tracebacks go; ``None`` leaves Textual's own crash output.
        verbose: Show system-prompt changes in the transcript.
        clock: Monotonic seconds, for the task clocks, notices and double presses.
        on_painted: Called once the first frame is painted (``pidurable`` paints
            before it opens the session, and opens it then).

    Example:
        ``PidurableApp(model, controller, theme="light", log_path=session / "pidurable.log").run()``
    """

    CSS_PATH = Path(__file__).with_name("pidurable.tcss")
    TITLE = "pidurable"
    BINDINGS = KEY_BINDINGS

    def __init__(
        self,
        model: ScreenModel,
        controller: Controller,
        *,
        theme: str = DEFAULT_THEME,
        themes_dir: Path | None = None,
        log_path: Path | None = None,
        verbose: bool = False,
        clock: Callable[[], float] = time.monotonic,
        on_painted: Callable[[], None] | None = None,
    ) -> None:
        no_color = "NO_COLOR" in os.environ
        # REMINDER: Textual picks its NO_COLOR filter in App.__init__ from ansi_color:
        # True strips every colour (NoColor), anything else only greys them.
        super().__init__(controller.close, log_path, ansi_color=True if no_color else None)
        self.model = model
        self.controller = controller
        self.clock = clock
        self._on_painted = on_painted
        self._catalog = load_themes(themes_dir)
        for spec in self._catalog.themes.values():
            self.register_theme(spec.to_textual())
        wanted = "ansi" if no_color else theme
        spec, problem = self._catalog.resolve(wanted)
        self.theme = spec.name
        self._startup_problems = [*self._catalog.problems(wanted), *([problem] if problem else [])]
        self.ctx = RenderContext(spec.palette(), spec.syntax_theme, verbose=verbose)
        self._local_notices: list[Notice] = []
        self._sending: list[Worker[None]] = []
        """The workers of messages sent and maybe not stored yet (``request_exit``)."""
        self.init_prompts()
        self._unsubscribe: Callable[[], None] | None = None
        self.transcript = Transcript(model, self.ctx, id="transcript")
        self.task_panel = TaskPanel(clock, id="tasks")
        self.queue_panel = QueuePanel(id="queue")
        self.notice_bar = NoticeBar(clock, id="notices")
        self.status_line = StatusLine(id="status")
        self.completion_menu = CompletionMenu(id="completion")
        # The controller may change (``hand_over``): the editor asks the current one.
        self.editor = PromptEditor(
            self.completion_menu,
            lambda prefix: self.controller.complete_path(prefix),
            lambda: self.controller.history(),
            custom_commands=lambda: self.controller.custom_commands(),
            id="editor",
        )
        self.footer_bar = FooterBar(id="footer")
        self.init_keys(clock)

    def get_default_screen(self) -> Screen:
        """The main screen, which paints typed text at once (``_main_screen``)."""
        return MainScreen()

    def compose(self) -> ComposeResult:
        """Transcript, task tree, queue, notices, status, completion, editor, footer."""
        yield self.transcript
        yield self.task_panel
        yield self.queue_panel
        yield self.notice_bar
        yield self.status_line
        yield self.completion_menu
        yield self.editor
        yield self.footer_bar

    def on_mount(self) -> None:
        """Show the model's current state, subscribe to its changes, focus the editor."""
        self.apply_change(
            ViewChange(queue=True, tasks=True, footer=True, status=True, trust=True, approval=True)
        )
        for problem in self._startup_problems:
            self.notice("warning", problem)
        # REMINDER: subscribe first, then build the first window: a live model keeps
        # moving, and a change between a build and a later subscription would be lost
        # (a card left showing `running`). A change queued before the build is applied
        # after it again, which the transcript takes as a no-op.
        self._unsubscribe = self.model.subscribe(self._changed)
        self.transcript.rebuild()
        # A settings edit made while the agent is idle (by the user, or a command the
        # model started) is noticed within a second, and a trust question shown.
        self.set_interval(SETTINGS_POLL, lambda: self.controller.refresh_settings())
        self.editor.focus()
        # Startup objects are long-lived: freezing them keeps the collector's full passes
        # (measured at 60-100 ms, the worst stalls while streaming) short. Undone at
        # unmount; frozen again after each new transcript (a session opened meanwhile).
        self.call_after_refresh(gc.freeze)
        if self._on_painted is not None:
            self.call_after_refresh(self._on_painted)

    def on_resize(self, event: events.Resize) -> None:
        """Keep the editor's quarter of the screen at least one line tall (``fit_screen``)."""
        self.editor.fit_screen(event.size.height)

    async def on_unmount(self) -> None:
        """Stop listening, then close the controller (``GuardedApp``)."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        gc.unfreeze()
        await super().on_unmount()

    def hand_over(self, model: ScreenModel, controller: Controller) -> None:
        """Show ``model`` and call ``controller`` from now on (the session opened).

        The screen starts on an ``OpeningSession``, which calls this once the
        session's own pair exists (issue 14: no forwarding for the session's life).

        Args:
            model: The session's model.
            controller: The session's controller.
        """
        listening = self._unsubscribe is not None
        if self._unsubscribe is not None:
            self._unsubscribe()
        self.model, self.controller = model, controller
        self.transcript.model = model
        if listening:  # else on_mount subscribes to it
            self._unsubscribe = model.subscribe(self._changed)
        self._changed(EVERYTHING)

    def _changed(self, change: ViewChange) -> None:
        # REMINDER: the model calls this from the harness's tasks, outside Textual's
        # context (timers and mounts made there break later); the message queue
        # brings the change into the app's own loop, in order.
        self.post_message(ModelChanged(change))

    @on(ModelChanged)
    def _model_changed(self, event: ModelChanged) -> None:
        self.apply_change(event.change)

    def apply_change(self, change: ViewChange) -> None:
        """Patch what one change names, and nothing else.

        Args:
            change: What moved in the model.
        """
        model, transcript = self.model, self.transcript
        if change.transcript_reset:
            transcript.rebuild()
            self.call_after_refresh(gc.freeze)
        else:
            if change.blocks_removed:
                transcript.blocks_removed(change.blocks_removed)
            if change.older_loaded:
                transcript.older_loaded(change.older_loaded)
            if change.blocks_added:
                transcript.blocks_added(change.blocks_added)
            if change.blocks_changed:
                transcript.blocks_changed(change.blocks_changed)
        if change.queue:
            self.queue_panel.show_queue(model.queue)
        if change.tasks:
            self.task_panel.show_tasks(model.tasks)
        if change.footer:
            self.footer_bar.show(model.footer, HINTS)
        if change.status:
            self.status_line.show(model.status)
            self.editor.set_busy(model.busy)
        if change.notices:
            self._show_notices()
        if change.trust:
            self._ask_trust()
        if change.approval:
            self._ask_approval()

    # -- notices and controller calls ---------------------------------------------------

    def notice(self, level: NoticeLevel, text: str) -> int:
        """Show a screen notice (one line, transient) next to the model's.

        Args:
            level: ``info``, ``warning`` or ``error``.
            text: The sentence.

        Returns:
            The notice's id (for ``drop_notice``).
        """
        ids = [notice.id for notice in self._local_notices]
        notice_id = min([0, *ids]) - 1
        self._local_notices.append(Notice(level, text, id=notice_id))
        del self._local_notices[:-_KEPT_NOTICES]
        self._show_notices()
        return notice_id

    def drop_notice(self, notice_id: int) -> None:
        """Take one of the screen's own notices away before it expires."""
        self._local_notices = [n for n in self._local_notices if n.id != notice_id]
        self._show_notices()

    def _show_notices(self) -> None:
        self.notice_bar.show([*self.model.notices, *self._local_notices])
        # The screen on top only: one under it catches up when it is on top again.
        top = self.screen_stack[-1] if self.screen_stack else None
        if isinstance(top, OverlayScreen):  # the main bar is hidden behind it
            top.notice_bar.catch_up()

    def call(
        self,
        what: str,
        action: Callable[[], Awaitable[T]],
        then: Callable[[T], None] | None = None,
        *,
        on_error: Callable[[], None] | None = None,
    ) -> Worker[None]:
        """Run a controller action in a worker; a failure becomes an error notice.

        Args:
            what: What the action is, for the notice (``submit``, ``/model``...).
            action: Makes the awaitable (called inside the worker).
            then: Called with the result on success.
            on_error: Called after a failure was reported (to restore the editor).

        Returns:
            The worker (``request_exit`` waits for the ones that send a message).
        """

        async def run() -> None:
            try:
                result = await action()
            except Exception as error:
                self.report_failure(what, error)
                if on_error is not None:
                    on_error()
                return
            if then is not None:
                then(result)

        return self.run_worker(run(), group="controller", exit_on_error=False)

    def report_failure(self, what: str, error: Exception) -> None:
        """Say that an action failed, and log its traceback unless the user can fix it.

        A command line that cannot run (``CommandError``) or an action the app
        refused (``ActionRefused``: an unknown model, a missing key) is its message
        alone: nothing crashed, so no traceback and no log to look in.
        """
        message = self.redacted(str(error) or type(error).__name__)
        if isinstance(error, (CommandError, ActionRefused)):
            self.notice("error", message)
            return
        where = ""
        if self.log_traceback(error, what):
            where = f" (details in {self.log_path})"
        self.notice("error", f"{what} failed: {message}{where}")

    async def pick(self, title: str, items: Sequence[PickerItem[T]]) -> T | None:
        """Show a picker and wait for the choice (inside a worker).

        Args:
            title: The heading.
            items: The choices.

        Returns:
            The chosen value, or ``None`` when the picker was closed.
        """
        if not items:
            self.notice("info", f"{title}: nothing to choose from.")
            return None
        return await self.push_screen_wait(PickerScreen(title, items, self.notice_bar))

    async def pick_session(self, sessions: Sequence[SessionInfo]) -> str | None:
        """Show the session picker (first message, last activity, size); the chosen path.

        Args:
            sessions: The sessions to offer, newest first.

        Returns:
            The chosen session's path, or ``None`` when the picker was closed.
        """
        return await self.pick(SESSIONS_TITLE, session_items(sessions))

    # -- typed text always reaches the editor (issue 12) ---------------------------------

    async def on_event(self, event: events.Event) -> None:
        """See every key first: a prompt on top takes it now; a key drops the exit hint."""
        if isinstance(event, (events.Key, events.Paste)) and not event.is_forwarded:
            now = self.clock()
            screen = self.screen
            # REMINDER: at arrival, before any queue (``_prompt_keys``): a prompt's key
            # handled later could meet a focus that moved in between.
            taken = isinstance(screen, PromptScreen) and screen.arrived(event, now)
            self._last_key = now
            if taken:
                self.drop_exit_hint()  # a key of the prompt's: something else happened
                return
        if isinstance(event, events.Key) and event.key != "ctrl+c":
            self.drop_exit_hint()
        elif isinstance(event, events.Paste) and self._typing_goes_astray():
            # A paste into a panel would be dropped: the editor takes it.
            self.editor.focus()
            self.editor.paste_text(event.text)
            return
        await super().on_event(event)

    def on_key(self, event: events.Key) -> None:
        """A printable key no widget took (a panel had the focus) goes into the editor."""
        if event.is_printable and event.character and self._typing_goes_astray():
            event.stop()
            self.editor.focus()
            self.editor.insert(event.character)

    def _typing_goes_astray(self) -> bool:
        # Only on the main screen: a picker's filter or the help take their own keys.
        return len(self.screen_stack) == 1 and self.focused is not self.editor

    def action_focus_editor(self) -> None:
        """Give the focus back to the editor (Esc in a panel)."""
        self.editor.focus()

    # -- what widgets ask for -----------------------------------------------------------

    @on(PromptEditor.Submitted)
    def _submitted(self, event: PromptEditor.Submitted) -> None:
        text, follow_up = event.text, event.follow_up
        try:
            parsed = parse_command(text, self.controller.custom_commands())
        except CommandError as error:
            self.editor.keep_sent()
            self.notice("error", str(error))
            return
        self.editor.consume(event.raw)
        self.drop_exit_hint()
        if parsed is not None:
            command, arg = parsed
            if refused(self, command.acts_on):
                return
            self.call(f"/{command.name}", lambda: command.run(self, arg))
            return
        self.transcript.follow()
        if start_shell_line(self, text):  # ``!cmd``, ``!!cmd``
            return
        sending = self.call(
            "follow-up" if follow_up else "submit",
            lambda: self.controller.submit(as_message(text), follow_up=follow_up),
            on_error=lambda: self.editor.put_text(text),
        )
        self._sending = [*(worker for worker in self._sending if not worker.is_finished), sending]

    @on(PromptEditor.ExitRequested)
    def _exit_requested(self) -> None:
        self.request_exit()

    def request_exit(self) -> None:
        """Leave the app once every message sent is stored; with jobs running, ask first.

        A message whose Enter came just before the exit key (or while the session
        was still opening) is committed first: the editor showed it as sent.
        """

        async def running_jobs_once_sent() -> int:
            # REMINDER: leaving closes the session, which cancels a send still waiting
            # for it; the text had already left the editor, so it would be lost.
            for worker in self._sending:
                with contextlib.suppress(WorkerCancelled):
                    await worker.wait()
            return await self.controller.running_jobs()

        self.call("exit", running_jobs_once_sent, self._exit_with_jobs, on_error=self.exit)

    def _exit_with_jobs(self, count: int) -> None:
        if count == 0:
            self.exit()
            return

        def chosen(choice: JobsChoice | None) -> None:
            if choice == "keep":
                self.controller.leave_jobs_running()
            if choice is not None:
                self.exit()

        self.push_screen(JobsExitScreen(count, self.notice_bar), chosen)

    @on(PromptEditor.ExternalEditRequested)
    def _external_edit_requested(self) -> None:
        self.call("external editor", lambda: edit_draft(self))

    @on(PromptEditor.JumpRequested)
    def _jump_requested(self, event: PromptEditor.JumpRequested) -> None:
        self.action_jump_transcript(event.direction)

    @on(Withdraw)
    def _withdraw(self, event: Withdraw) -> None:
        self.call("withdraw", lambda: self.controller.withdraw(event.submission_id), self._put)

    @on(OpenConversation)
    def _open_conversation(self, event: OpenConversation) -> None:
        self.call("switch", lambda: self.controller.switch_conversation(event.conversation_id))

    @on(NeedOlder)
    def _need_older(self, event: NeedOlder) -> None:
        self.call("load older", lambda: self.controller.load_older(event.count), self._older_done)

    def _older_done(self, count: int) -> None:
        if count == 0:
            self.transcript.older_loaded(0)

    # -- the CommandHost face -----------------------------------------------------------

    def set_editor_text(self, text: str) -> None:
        """Put text into the editor."""
        self.editor.put_text(text)

    def toggle_tasks(self) -> None:
        """Hide or show the task tree."""
        self.task_panel.toggle()

    def theme_names(self) -> list[str]:
        """The loaded theme names."""
        return self._catalog.names()

    def switch_theme(self, name: str) -> None:
        """Use another theme; a notice names the problem when it cannot be used."""
        problem = self._catalog.problem_with(name)
        if problem is not None:
            self.notice("warning", f"{problem}; keeping {self.theme!r}.")
            return
        spec, _ = self._catalog.resolve(name)
        if "NO_COLOR" in os.environ:
            self.notice("info", "NO_COLOR is set: the screen stays without colour.")
            return
        self.theme = spec.name
        self.ctx = replace(self.ctx, palette=spec.palette(), syntax_theme=spec.syntax_theme)
        self.transcript.set_context(self.ctx)

    async def fork_picker(self) -> None:
        """Offer the user messages to fork from (``/fork``, Esc Esc)."""
        await fork_from_picker(self)

    def open_help(self) -> None:
        """Show the help screen (generated from the bindings and the command table)."""
        bindings = (type(self).BINDINGS, PromptEditor.BINDINGS, QueuePanel.BINDINGS)
        commands = all_commands(self.controller.custom_commands())
        self.push_screen(HelpScreen(key_rows(bindings), commands, self.notice_bar))

    def exit_app(self) -> None:
        """Leave the app (asking first when background jobs run, issue 13)."""
        self.request_exit()
