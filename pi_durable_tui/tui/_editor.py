"""The prompt editor: a multi-line ``TextArea`` with submit keys, history and completion.

- Enter sends (the controller makes it a steer while the agent works);
  Shift+Enter or Ctrl+J insert a newline (Shift+Enter arrives only with the
  kitty keyboard protocol; Ctrl+J, a line feed, works in every terminal).
- Alt+Enter queues a follow-up. ``FOLLOW_UP_FALLBACK`` (Ctrl+F) does the same:
  tmux and terminals without the kitty protocol send Alt+Enter as ESC CR, which
  Textual reads as a plain Enter, and Alt+F arrives as word-right; Ctrl+F is a
  single control byte every terminal passes through unchanged.
- Up on the first line and Down on the last walk the prompt history
  (``Controller.history``), keeping the draft to come back to.
- While the completion menu is open, Up/Down move in it, Tab (or Enter, when it
  changes the text) accepts, Esc closes it. Each of these keys first brings the
  menu up to the text as it is now (``_sync_completion``): the keys of a burst run
  before the ``Changed`` messages they post, so the menu may still show what an
  earlier prefix offered (``/ex`` -> ``/export``), and Enter after
  ``/export markdown out.md`` typed in one read replaced ``/ex`` with ``/export ``
  instead of sending the line. Without a completion Tab does nothing:
  it never moves the focus out of the editor (issue 12: text typed after a Tab
  went to a panel that dropped it; Alt+Down is the way into the panels).
- Ctrl+G asks the app to edit the draft in the user's own editor
  (``_external_editor``); what comes back replaces the draft (``replace_draft``).
- Ctrl+D on an empty editor asks to exit; otherwise it deletes forward. Home
  and End on an empty editor ask to jump the transcript; otherwise they move
  the cursor as usual.

A long paste (``_paste.is_long_paste``) shows as one placeholder,
``[Pasted text #1 +42 lines]``, deleted as a unit by one Backspace, stepped over
by the cursor, expanded in place by ``EXPAND_PASTE_KEY`` (Ctrl+R), copied or cut
as its text, and sent whole: ``Submitted`` carries the pasted text, never the
placeholder (issue 12). The rules are ``_paste.PastedTexts``; this widget binds
them to its edits (``edit``) and its cursor (``_validate_selection``).

Everything that enters the document (typing, a paste, a completion, the
history, a prompt put back) passes ``terminal_safe``: a pasted file or a
completed path with an escape sequence in it paints none (issue 13).

The editor never calls the controller: it posts ``Submitted`` / ``ExitRequested``.

Its keys run in the editor's own queue, in the order they were typed, not as
priority bindings: a priority binding runs in the App's queue as soon as the key
arrives, ahead of the characters typed before it that still wait in the editor's
queue, so Enter right after a burst of typing (a fast typist, a terminal that
delivers several keys in one read, tmux ``send-keys``) sent an empty or partial
text, and Ctrl+D after typing exited instead of deleting.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from textual import events
from textual.actions import SkipAction
from textual.binding import Binding, BindingsMap
from textual.message import Message
from textual.widgets import TextArea
from textual.widgets.text_area import Edit, EditResult, Selection

from pi_durable_tui.app import CommandInfo, terminal_safe
from pi_durable_tui.tui._completion import CompletionMenu, completion_at
from pi_durable_tui.tui._paste import PastedTexts, Span, is_long_paste

FOLLOW_UP_KEY = "alt+enter"
FOLLOW_UP_FALLBACK = "ctrl+f"
EXPAND_PASTE_KEY = "ctrl+r"
EXTERNAL_EDITOR_KEY = "ctrl+g"

_IDLE_PLACEHOLDER = "Ask anything. / for commands, @ for files, F1 for help."
_BUSY_PLACEHOLDER = (
    f"Enter steers the agent now; {FOLLOW_UP_KEY} or {FOLLOW_UP_FALLBACK} queues a follow-up."
)


_MIN_ROWS = 3
"""The editor's smallest height: one line of text between its borders."""


class PromptEditor(TextArea):
    """The editor under the transcript.

    Args:
        menu: The completion list shown above the editor.
        complete_path: Paths for ``@`` completion.
        history: Earlier prompts, oldest first.
        custom_commands: The custom slash commands, for ``/`` completion.
        id: The widget id.
    """

    BINDINGS = [
        Binding("enter", "submit", "Send; while the agent works, steer it"),
        Binding(
            f"{FOLLOW_UP_KEY},{FOLLOW_UP_FALLBACK}",
            "submit(True)",
            "Queue a follow-up (ctrl+f where alt+enter does not arrive: tmux, older terminals)",
        ),
        Binding("shift+enter,ctrl+j", "newline", "Insert a newline"),
        Binding("up", "history(-1)", "Previous prompt (on the first line)"),
        Binding("down", "history(1)", "Next prompt (on the last line)"),
        Binding(
            "tab", "accept_completion", "Accept the / or @ completion (Tab stays in the editor)"
        ),
        Binding(
            EXPAND_PASTE_KEY,
            "expand_paste",
            "Expand the pasted-text placeholder at the cursor (or the last one) into its text",
        ),
        Binding(
            EXTERNAL_EDITOR_KEY,
            "external_editor",
            "Edit the draft in $VISUAL or $EDITOR (vi when neither is set); saved text comes back",
        ),
        Binding("escape", "close_completion", "", show=False),
        Binding("ctrl+underscore", "undo", "Undo (Ctrl+- in most terminals; Ctrl+Z suspends)"),
        Binding("ctrl+d", "exit_if_empty", "Exit (on an empty editor)"),
        Binding("home", "jump_if_empty(-1)", "", show=False),
        Binding("end", "jump_if_empty(1)", "", show=False),
    ]

    DEFAULT_CSS = """
    PromptEditor {
        height: auto;
        min-height: 3;
        max-height: 25%;
        border: round $border;
        padding: 0 1;
        background: $background;
    }
    PromptEditor:focus {
        border: round $accent;
    }
    """

    class Submitted(Message):
        """The user sent the editor's text.

        ``raw`` is the document as it was sent (placeholders unexpanded): what
        ``consume`` takes out once the app has handled the message.
        """

        def __init__(self, text: str, follow_up: bool, raw: str = "") -> None:
            super().__init__()
            self.text = text
            self.follow_up = follow_up
            self.raw = raw

    class ExitRequested(Message):
        """Ctrl+D on an empty editor."""

    class ExternalEditRequested(Message):
        """Ctrl+G: edit the draft in the user's editor (``_external_editor``)."""

    class JumpRequested(Message):
        """Home (-1) or End (1) on an empty editor: jump the transcript."""

        def __init__(self, direction: int) -> None:
            super().__init__()
            self.direction = direction

    def __init__(
        self,
        menu: CompletionMenu,
        complete_path: Callable[[str], list[str]],
        history: Callable[[], Sequence[str]],
        *,
        custom_commands: Callable[[], Sequence[CommandInfo]] = tuple,
        id: str | None = None,
    ) -> None:
        # Before TextArea's own setup: it places the cursor, which _validate_selection checks.
        self._pastes = PastedTexts()
        super().__init__(
            id=id,
            soft_wrap=True,
            tab_behavior="focus",
            show_line_numbers=False,
            highlight_cursor_line=False,
            placeholder=_IDLE_PLACEHOLDER,
        )
        self._menu = menu
        self._complete_path = complete_path
        self._custom_commands = custom_commands
        self._history = history
        self._history_items: list[str] = []
        self._history_index: int | None = None
        self._recalled = ""
        self._draft = ""
        self._completed_for: tuple[int, int, str] | None = None
        self._sent: str | None = None
        """The document as sent, until the app takes it out (``consume``) or keeps it."""
        """The cursor and its line the menu was computed for (``_sync_completion``)."""
        self.out_for_edit = False
        """Whether the draft is in the external editor (Ctrl+G) now."""

    async def _on_key(self, event: events.Key) -> None:
        """Run the editor's own binding of a key here, in typing order (module docstring).

        A binding whose action skips (Esc with no completion open, Tab with nothing
        to complete) lets the key go on to ``TextArea`` and then to the app.
        """
        for binding in _EDITOR_KEYS.key_to_bindings.get(event.key, ()):
            if await self.app.run_action(binding.action, self):
                event.stop()
                event.prevent_default()
                return

    def fit_screen(self, rows: int) -> None:
        """Cap the editor at a quarter of a screen of ``rows`` rows, never below one line.

        The stylesheet's ``max-height: 25%`` wins over ``min-height: 3`` in Textual,
        so on a screen under 12 rows the editor shrank to its two borders and what
        was typed could not be seen.
        """
        self.styles.max_height = max(_MIN_ROWS, rows // 4)

    def set_busy(self, busy: bool) -> None:
        """Say in the placeholder what Enter does now."""
        self.placeholder = _BUSY_PLACEHOLDER if busy else _IDLE_PLACEHOLDER

    def put_text(self, text: str) -> None:
        """Put text (withdrawn or forked) before what is typed, and focus the editor.

        A long text goes in as a placeholder, as if pasted (Ctrl+R expands it).
        """
        current = self.text
        text = self._pastes.fold(terminal_safe(text))
        self.text = text + ("\n" + current if current.strip() else "")
        self.move_cursor(self.document.end)
        self.focus()

    def replace_draft(self, text: str) -> None:
        """Make ``text`` the whole draft (back from the external editor), cursor at its end.

        The text is safe (``load_text``) and shown as it is, never folded into a
        placeholder: the user just read all of it. The earlier pastes are
        forgotten, since their text is in it now, and so is the undo history
        (loading a document clears it).
        """
        self.clear_input()
        self.load_text(text)
        self.move_cursor(self.document.end)
        self.focus()

    def paste_text(self, text: str) -> None:
        """Insert pasted text at the cursor (a paste that reached another widget, too).

        A long paste goes in as its placeholder; ``Submitted`` carries its text.
        """
        if self.read_only:
            return
        # A terminal sends a pasted line break as CR (xterm, tmux paste-buffer).
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        if is_long_paste(text):
            text = self._pastes.add(terminal_safe(text))
        if result := self._replace_via_keyboard(text, *self.selection):
            self.move_cursor(result.end_location)

    async def _on_paste(self, event: events.Paste) -> None:
        """A bracketed paste from the terminal (``TextArea`` would insert it as it is)."""
        event.stop()
        event.prevent_default()
        self.paste_text(event.text)
        self.focus()

    def action_paste(self) -> None:
        """Paste from the app's clipboard (Ctrl+V), long text as a placeholder too."""
        self.paste_text(self.app.clipboard)

    def action_copy(self) -> None:
        """Copy the selection with its pastes in full: a placeholder means nothing elsewhere."""
        selected = self.selected_text
        if not selected:
            raise SkipAction()  # Ctrl+C goes on to the app (exit)
        self.app.copy_to_clipboard(self._pastes.expand(selected))

    def action_cut(self) -> None:
        """Cut the selection (else the line) to the clipboard, its pastes in full."""
        if self.read_only:
            return
        start, end = self.selection
        if start == end:
            result = self._delete_cursor_line()
        else:
            result = self._delete_via_keyboard(start, end)
        if result is not None:
            # Ctrl+V of it makes a new placeholder: the text survives the message.
            self.app.copy_to_clipboard(self._pastes.expand(result.replaced_text))

    @property
    def message_text(self) -> str:
        """What Enter would send: the document with every paste placeholder expanded."""
        return self._pastes.expand(self.text)

    def clear_input(self) -> None:
        """Empty the editor and leave history browsing."""
        self.text = ""
        self._pastes.clear()
        self._history_index = None

    def consume(self, raw: str) -> None:
        """Take out what was sent (``Submitted.raw``), keeping what was typed since.

        The app handles ``Submitted`` after the editor may have taken more keys (a
        fast typist, or a terminal burst of Enter and the next words): those stay,
        with the cursor after them. Text changed otherwise is cleared as before.
        """
        self._sent = None
        current = self.text
        if not raw or current == raw or not current.startswith(raw):
            self.clear_input()
            return
        rest = current[len(raw) :].lstrip("\n")
        self.text = rest
        self._pastes.keep_only_in(rest)
        self._history_index = None
        self.move_cursor(self.document.end)

    def action_submit(self, follow_up: bool = False) -> None:
        """Send the text, or accept a completion that changes it."""
        self._sync_completion()
        chosen = self._menu.chosen
        completion = self._menu.completion
        changes = (
            chosen is not None
            and completion is not None
            and chosen.replacement.strip() != completion.token.strip()
        )
        if changes and not follow_up:
            self.action_accept_completion()
            return
        text = self.message_text
        if not text.strip():
            return
        self._history_index = None
        self._menu.show_completion(None)
        self._sent = self.text
        self.post_message(self.Submitted(text, follow_up, self.text))

    def keep_sent(self) -> None:
        """The app refused what was sent (a command line with an error): it stays as typed."""
        self._sent = None

    def action_newline(self) -> None:
        """Insert a newline at the cursor."""
        self.insert("\n")

    def action_history(self, step: int) -> None:
        """Move in the completion menu or the prompt history; else move the cursor."""
        self._sync_completion()
        if self._menu.chosen is not None:
            if step > 0:
                self._menu.action_cursor_down()
            else:
                self._menu.action_cursor_up()
            return
        row = self.cursor_location[0]
        on_edge = row == 0 if step < 0 else row == self.document.line_count - 1
        if self._history_index is None and on_edge and step < 0:
            self._history_items = list(self._history())
            on_edge = bool(self._history_items)
        if not on_edge or (self._history_index is None and step > 0):
            # REMINDER: these bindings replace TextArea's own up/down (Textual merges
            # bindings per key), so moving the cursor is this action's job too.
            if step > 0:
                self.action_cursor_down()
            else:
                self.action_cursor_up()
            return
        if self._history_index is None:
            self._draft = self.text
            self._history_index = len(self._history_items)
        index = self._history_index + step
        if index < 0:
            return
        if index >= len(self._history_items):
            self._history_index = None
            self._load(self._draft)
            return
        self._history_index = index
        # A long prompt comes back folded, as it was written (``PastedTexts.fold``).
        self._recalled = self._pastes.fold(terminal_safe(self._history_items[index]))
        self._load(self._recalled)

    def action_accept_completion(self) -> None:
        """Replace the token under the cursor with the highlighted candidate."""
        self._sync_completion()
        chosen, completion = self._menu.chosen, self._menu.completion
        if chosen is None or completion is None:
            return  # REMINDER: not SkipAction: Tab going on would move the focus away.
        self.replace(
            chosen.replacement, (completion.row, completion.start), (completion.row, completion.end)
        )

    def action_expand_paste(self) -> None:
        """Replace the placeholder at the cursor (else the document's last) with its text."""
        spans = self._all_spans()
        if not spans:
            return
        cursor = self.cursor_location
        span = next((s for s in spans if s.touches(cursor)), spans[-1])
        # The text stays kept: undo puts the placeholder back, and it must expand.
        text = self._pastes.text_of(span.placeholder)
        result = self.replace(text, (span.row, span.start), (span.row, span.end))
        self.move_cursor(result.end_location)

    def action_close_completion(self) -> None:
        """Close the completion menu; without one, Esc goes on to the app (abort)."""
        self._sync_completion()
        if self._menu.chosen is None:
            raise SkipAction()
        self._menu.show_completion(None)

    def action_jump_if_empty(self, direction: int) -> None:
        """Home/End on an empty editor jump the transcript; otherwise they move the cursor."""
        if not self.text:
            self.post_message(self.JumpRequested(direction))
        # REMINDER: this binding replaces TextArea's own Home/End (Textual merges
        # bindings per key), so moving the cursor is this action's job too.
        elif direction < 0:
            self.action_cursor_line_start()
        else:
            self.action_cursor_line_end()

    def action_external_editor(self) -> None:
        """Ask the app to open the external editor on the draft."""
        self.post_message(self.ExternalEditRequested())

    def action_exit_if_empty(self) -> None:
        """Exit on an empty editor; otherwise delete forward as usual.

        Text sent a moment ago that the app has not taken out yet counts as gone:
        Enter then Ctrl+D in one burst exits (after the message is stored).
        """
        if self.text and self.text != self._sent:
            self.action_delete_right()
            return
        # REMINDER: posted after ``Submitted``, so the app handles the send first.
        self.post_message(self.ExitRequested())

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        """Offer completions for the token under the cursor (not for a recalled prompt)."""
        if self._history_index is not None and self.text != self._recalled:
            self._history_index = None
        # REMINDER: no paste is forgotten here, when its placeholder leaves the
        # document: undo brings it back (``_paste`` module docstring).
        self._refresh_completion()

    def on_text_area_selection_changed(self, event: TextArea.SelectionChanged) -> None:
        """Follow the cursor with the completion menu."""
        self._refresh_completion()

    def _sync_completion(self) -> None:
        """Recompute the menu when the text or cursor moved since it was computed."""
        row, column = self.cursor_location
        if self._completed_for != (row, column, self.document.get_line(row)):
            self._refresh_completion()

    def _refresh_completion(self) -> None:
        row, column = self.cursor_location
        line = self.document.get_line(row)
        # REMINDER: a refresh resets the highlighted candidate; _sync_completion
        # refreshes only a menu that is stale, so Up/Down in the menu are kept.
        self._completed_for = (row, column, line)
        if self._history_index is not None:
            self._menu.show_completion(None)
            return
        completion = completion_at(line, row, column, self._complete_path, self._custom_commands)
        self._menu.show_completion(completion)

    def _load(self, text: str) -> None:
        self.text = text
        self.move_cursor(self.document.end)

    def edit(self, edit: Edit) -> EditResult:
        """Apply an edit (every keystroke, paste and insert) of safe text."""
        edit.text = terminal_safe(edit.text)
        if self._pastes:
            # REMINDER: every change to the document passes here (undo and redo
            # replay these edits exactly), so this is the one place a placeholder
            # stays a unit.
            top, bottom = self._pastes.whole_edit(edit.top, edit.bottom, self.document.get_line)
            edit.from_location, edit.to_location = top, bottom
        return super().edit(edit)

    def _validate_selection(self, selection: Selection) -> Selection:
        """Keep the cursor (and a selection's ends) off the inside of a placeholder."""
        selection = super()._validate_selection(selection)
        if not self._pastes:
            return selection
        line_at, previous = self.document.get_line, self.selection
        return Selection(
            self._pastes.snap(previous.start, selection.start, line_at),
            self._pastes.snap(previous.end, selection.end, line_at),
        )

    def _all_spans(self) -> list[Span]:
        line_at = self.document.get_line
        rows = range(self.document.line_count)
        return [span for row in rows for span in self._pastes.spans(row, line_at(row))]

    def load_text(self, text: str) -> None:
        """Replace the document with safe text (the history, a prompt put back)."""
        super().load_text(terminal_safe(text))


_EDITOR_KEYS = BindingsMap(PromptEditor.BINDINGS)
"""The editor's own keys (``BINDINGS`` without ``TextArea``'s), run by ``_on_key``."""
