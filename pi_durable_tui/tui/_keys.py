"""The app's keys (durable-behavior.md 5.2, issue 8) and what they do.

- Esc aborts the shown conversation's foreground work (``Controller.abort``, R57)
  and puts the withdrawn queued texts back into the editor; background tasks
  keep running. A second Esc within a second on an empty editor, with nothing
  left to abort, offers to fork from an earlier message.
- Ctrl+C clears the line in front of the user; with nothing to clear it says
  "Press Ctrl+C again to exit.", and a second Ctrl+C within a second exits
  (``action_clear_or_exit``); any other key in between makes the next Ctrl+C a
  first press again. The line in front is the screen on top's: the
  editor on the main screen, a prompt's own message line over it
  (``PromptScreen.clear_line``), none over the help or a picker. So Ctrl+C over
  a prompt never touches the draft the prompt hides (issue 13).
- Ctrl+O expands tool output and compaction summaries; Alt+T folds thinking;
  Shift+Tab cycles the thinking level; Ctrl+T hides or shows the task tree;
  Alt+Up takes the newest queued message back; PageUp/PageDown scroll the
  transcript while the editor keeps the focus (over the help they scroll the
  help); Ctrl+Home/Ctrl+End (Home/End on an empty editor) jump to its top and
  its end (issue 12); F1 shows the help.
- Alt+Down (or F2) moves the focus into the queue, then the task tree, then back
  to the editor (issue 12): Tab never leaves the editor, so typed text cannot go
  to a widget that drops it. Esc in a panel returns to the editor, and a
  printable key or a paste in any other widget goes to the editor
  (``PidurableApp.on_key``).

``KeyActions`` is a mixin of ``PidurableApp``: the names it declares are the
app's attributes. Textual collects ``BINDINGS`` only from widget classes, so the
app sets ``BINDINGS = KEY_BINDINGS``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from textual.actions import SkipAction
from textual.binding import Binding, BindingType

from pi_durable_tui.tui._commands import refused
from pi_durable_tui.tui._prompt_keys import PromptScreen
from pi_durable_tui.tui._render_context import EXPAND_KEY, THINKING_KEY

if TYPE_CHECKING:
    from pi_durable_tui.app import Controller, NoticeLevel, ScreenModel
    from pi_durable_tui.tui._editor import PromptEditor
    from pi_durable_tui.tui._queue_panel import QueuePanel
    from pi_durable_tui.tui._render_context import RenderContext
    from pi_durable_tui.tui._task_panel import TaskPanel
    from pi_durable_tui.tui._transcript import Transcript

PANEL_KEY = "alt+down"
"""The documented way into the queue and the task tree (Tab stays in the editor)."""

KEY_BINDINGS: list[BindingType] = [
    Binding(
        "escape",
        "abort",
        "Abort the shown conversation's work (queued text returns to the editor); "
        "Esc again on an empty editor forks from an earlier message",
    ),
    Binding(
        "ctrl+c",
        "clear_or_exit",
        "Clear the line in front, never a hidden draft; twice exits",
        priority=True,
    ),
    Binding(
        EXPAND_KEY, "toggle_expanded", "Expand or collapse tool output and summaries", priority=True
    ),
    Binding(THINKING_KEY, "toggle_thinking", "Show or fold thinking", priority=True),
    Binding("shift+tab", "cycle_thinking", "Cycle the thinking level", priority=True),
    Binding(
        "f4",
        "cycle_permission_mode",
        "Cycle the permission mode: plan, auto-edit, ask, auto (also /permissions)",
        priority=True,
    ),
    Binding(
        "ctrl+b",
        "background_command",
        "Move the running command to the background (a job that survives Esc)",
        priority=True,
    ),
    Binding("ctrl+t", "toggle_tasks", "Show or hide the task tree (also /tasks)", priority=True),
    Binding("alt+up", "pull_queued", "Take the newest queued message back", priority=True),
    Binding(
        f"{PANEL_KEY},f2",
        "focus_panels",
        "Move into the queue (delete withdraws an item), then the task tree (enter opens "
        "a subagent), then back to the editor; Esc returns to the editor",
        priority=True,
    ),
    Binding("pageup", "scroll_transcript(-1)", "Scroll the transcript up", priority=True),
    Binding("pagedown", "scroll_transcript(1)", "Scroll the transcript down", priority=True),
    Binding(
        "ctrl+home",
        "jump_transcript(-1)",
        "Jump to the top of the transcript (also Home on an empty editor)",
        priority=True,
    ),
    Binding(
        "ctrl+end",
        "jump_transcript(1)",
        "Jump to the end of the transcript and follow it (also End on an empty editor)",
        priority=True,
    ),
    Binding("f1", "help", "Show the keys and commands (also /help)", priority=True),
    # Ctrl+Z suspends, as in a shell program (Pi, Claude Code, Codex): undo in the
    # editor moves to Ctrl+_ (Ctrl+- in most terminals). Work the agent had under way
    # stops with the process and goes on after ``fg``; nothing is lost either way.
    Binding(
        "ctrl+z",
        "suspend_process",
        "Suspend pidurable to the shell; fg brings it back where it was",
        priority=True,
    ),
]


class DoublePress:
    """Tells whether a key was pressed twice within ``window_s`` seconds.

    Args:
        clock: Monotonic seconds.
        window_s: The longest gap that still counts as a double press.
    """

    def __init__(self, clock: Callable[[], float], window_s: float = 1.0) -> None:
        self._clock = clock
        self._window = window_s
        self._last: float | None = None

    def reset(self) -> None:
        """Forget the last press: the next one is a first press."""
        self._last = None

    def press(self) -> bool:
        """Record a press; return whether it completes a double press (which then resets)."""
        now = self._clock()
        double = self._last is not None and now - self._last <= self._window
        self._last = None if double else now
        return double


class KeyActions:
    """The actions ``KEY_BINDINGS`` name; mixed into ``PidurableApp``."""

    if TYPE_CHECKING:
        model: ScreenModel
        controller: Controller
        editor: PromptEditor
        transcript: Transcript
        task_panel: TaskPanel
        queue_panel: QueuePanel
        ctx: RenderContext
        focused: Any
        screen_stack: list[Any]

        call: Callable[..., Any]  # PidurableApp.call(what, action, then, on_error=...)

        def notice(self, level: NoticeLevel, text: str) -> int: ...

        def open_help(self) -> None: ...

        def drop_notice(self, notice_id: int) -> None: ...

        async def fork_picker(self) -> None: ...

        def exit(self, result: Any = None, return_code: int = 0, message: Any = None) -> None: ...

        def request_exit(self) -> None: ...

    def init_keys(self, clock: Callable[[], float]) -> None:
        """Set up the double-press detectors (called by the app's constructor)."""
        self._escape = DoublePress(clock)
        self._ctrl_c = DoublePress(clock)
        self._exit_hint: int | None = None

    def action_abort(self) -> None:
        """Abort foreground work, or on a second Esc over an idle, empty editor, fork."""
        double = self._escape.press()
        if self.model.busy or self.model.queue:
            self.call("abort", self.controller.abort, self._restore_aborted)
        elif double and not self.editor.text and not refused(self, "fork"):
            self.call("fork", self.fork_picker)

    def action_background_command(self) -> None:
        """Ctrl+B: the running ``bash`` command becomes a background job (issue 13)."""
        self.call(
            "background",
            self.controller.background_command,
            lambda text: self.notice("info", text),
        )

    def _restore_aborted(self, texts: list[str]) -> None:
        if texts:
            self.editor.put_text("\n\n".join(texts))

    def action_clear_or_exit(self) -> None:
        """Clear the line in front; with none to clear, the exit hint; a second press exits."""
        if self._ctrl_c.press():
            self.request_exit()
            return
        if not self._clear_front_line():
            if self._exit_hint is not None:
                self.drop_notice(self._exit_hint)  # shown anew: its lifetime restarts
            self._exit_hint = self.notice("info", "Press Ctrl+C again to exit.")

    def _clear_front_line(self) -> bool:
        """Empty the text field the user sees; whether it held text.

        REMINDER: only the screen on top's own line. The editor behind a prompt,
        the help or a picker holds the user's draft, which they cannot see there.
        """
        screen = self.screen_stack[-1]
        if isinstance(screen, PromptScreen):
            return screen.clear_line()
        if len(self.screen_stack) > 1 or not self.editor.text:
            return False
        self.editor.clear_input()
        return True

    def drop_exit_hint(self) -> None:
        """Something else happened (another key, a submit): the next Ctrl+C is a first press.

        The "Press Ctrl+C again" notice goes (issue 12), and so does the pending
        press: a Ctrl+C exits only right after one, never across other keys
        (typed in the editor or a prompt's line) after the hint went away.
        """
        self._ctrl_c.reset()
        if self._exit_hint is not None:
            self.drop_notice(self._exit_hint)
            self._exit_hint = None

    def action_toggle_expanded(self) -> None:
        """Expand or collapse tool output and compaction summaries."""
        self.ctx = replace(self.ctx, expanded=not self.ctx.expanded)
        self.transcript.set_context(self.ctx)

    def action_toggle_thinking(self) -> None:
        """Show thinking in full or fold it to one line."""
        self.ctx = replace(self.ctx, show_thinking=not self.ctx.show_thinking)
        self.transcript.set_context(self.ctx)

    def action_cycle_thinking(self) -> None:
        """Move to the model's next thinking level (the footer shows it)."""
        self.call("thinking level", self.controller.cycle_thinking)

    def action_cycle_permission_mode(self) -> None:
        """Move to the session's next permission mode (a notice names it)."""
        if not refused(self, "permission_mode"):
            self.call("permission mode", self.controller.cycle_permission_mode)

    def action_toggle_tasks(self) -> None:
        """Hide or show the task tree."""
        self.task_panel.toggle()

    def action_pull_queued(self) -> None:
        """Withdraw the newest queued item into the editor."""
        queue = self.model.queue
        if queue:
            submission_id = queue[-1].submission_id
            self.call("withdraw", lambda: self.controller.withdraw(submission_id), self._put)

    def _put(self, text: str | None) -> None:
        if text:
            self.editor.put_text(text)

    def action_scroll_transcript(self, direction: int) -> None:
        """Scroll the transcript by a page without leaving the editor.

        Over another screen (the help, a picker) the key is that screen's: it
        scrolls what is shown, not the transcript behind it.
        """
        if len(self.screen_stack) > 1:
            raise SkipAction()
        if direction < 0:
            self.transcript.scroll_page_up()
        else:
            self.transcript.scroll_page_down()

    def action_focus_panels(self) -> None:
        """Move the focus: editor -> queue -> task tree -> editor (each only when shown)."""
        order = [self.editor, self.queue_panel, self.task_panel]
        current = order.index(self.focused) if self.focused in order else 0
        for widget in order[current + 1 :]:
            if widget.display:
                widget.focus()
                return
        self.editor.focus()

    def action_jump_transcript(self, direction: int) -> None:
        """Jump to the top of the transcript, or to its end (following it again)."""
        if len(self.screen_stack) > 1:
            raise SkipAction()
        if direction < 0:
            self.transcript.jump_to_start()
        else:
            self.transcript.follow()

    def action_help(self) -> None:
        """Show the help screen."""
        self.open_help()
