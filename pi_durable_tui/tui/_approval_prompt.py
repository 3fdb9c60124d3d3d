"""The approval prompt: a tool call waits for the user's decision (issue 13, DESIGN.md 7).

A modal over the session showing the tool, its full main argument (the whole
command, the path), why it needs a decision, and the keys:

- ``y`` allow once (the call runs once);
- ``a`` allow always in this session (its suggested rule, e.g. ``bash(make test)``);
- ``p`` allow always in this project (pidurable writes the rule to the project's
  ``.pidurable/settings.json``; never offered for pidurable's own files);
- ``n`` deny with a message: a line opens for what the agent should do instead;
  Enter denies and the model reads the message in the refusal (an empty line
  denies without one);
- ``m`` or Tab opens the message line: while the decision waits the user can
  still talk to the agent. Enter sends the line as a steer, Alt+Enter or
  Ctrl+F queues it as a follow-up (the editor's keys), and the prompt stays:
  the decision still waits. Typing any other letter opens the line with it.
  Tab goes back to the choices;
- Esc aborts the turn, which ends the wait (nothing of the call runs), from
  the choices or the line, as Esc does in the editor.
- Ctrl+C empties the message line when it holds text; otherwise it is the
  app's first press towards exiting (``_keys``). It never clears the editor's
  draft behind the prompt.

Why a modal with its own line, not a panel beside the editor: the choice keys
must reach the prompt whatever had the focus, and a user's words must never
become a choice (``_prompt_keys``: keys are taken at arrival, choices only once
the prompt has settled; before that, typing goes into the line). Text already
in the editor when the prompt opens stays there untouched; text left unsent in
the line when the prompt closes goes to the end of the editor, so nothing typed
is lost.

The request was committed before this screen shows it, and the decision is
committed before the tool starts: after a crash ``--continue`` shows the same
question again, and a decided call is never asked again.

REMINDER: every string here comes from the model (its command, its path): the
view model made it terminal-safe, and it is shown as plain content, never
markup.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Input, Static

from pi_durable_tui.app import ApprovalQuestion
from pi_durable_tui.tui._editor import FOLLOW_UP_FALLBACK, FOLLOW_UP_KEY
from pi_durable_tui.tui._notices import NoticeBar
from pi_durable_tui.tui._prompt_keys import LineKeys, PromptScreen
from pi_durable_tui.tui._terminal_text import Content

AnswerChoice = Literal["once", "session", "project", "deny", "abort"]
"""A decision, or ``abort`` (Esc: the turn is aborted, which ends the wait)."""


@dataclass(frozen=True)
class ApprovalAnswer:
    """How the prompt closed.

    Attributes:
        choice: The decision, or ``abort``.
        message: The message that goes with ``deny`` (``None``: none).
        unsent: Text left in the message line, for the editor.
    """

    choice: AnswerChoice
    message: str | None = None
    unsent: str = ""


SendLine = Callable[[str, bool], None]
"""Sends the message line's text: ``(text, follow_up)``."""


def approval_hint(question: ApprovalQuestion) -> str:
    """The keys line of ``question`` (``a``/``p`` only where a rule can be added)."""
    keys = ["y allow once"]
    if question.suggestion is not None:
        keys.append(f"a allow {question.suggestion} in this session")
        if not question.protected:
            keys.append("p always in this project")
    keys.append("n deny with a message · m message the agent · Esc abort the turn")
    return " · ".join(keys)


SETTLING_HINT = "Read it first: the keys answer in a moment (what you type now goes to the line)"
"""The keys line until the prompt takes choices (``_prompt_keys``)."""
MESSAGE_HINT = (
    f"Enter steers the agent · {FOLLOW_UP_KEY} or {FOLLOW_UP_FALLBACK} queues a follow-up · "
    "the decision still waits · Tab back to the choices · Esc abort the turn"
)
"""The keys line while the message line is open."""
REASON_HINT = (
    "Enter denies with this message for the agent (empty: no message) · "
    "Tab back to the choices · Esc abort the turn"
)
"""The keys line while the line holds the message of a denial."""
_FOLLOW_UP_KEYS = (FOLLOW_UP_KEY, FOLLOW_UP_FALLBACK)
_SCROLL_KEYS = {"up": -1, "down": 1, "pageup": -10, "pagedown": 10}

LineMode = Literal["message", "deny"]


class ApprovalScreen(PromptScreen[ApprovalAnswer | None]):
    """Ask for a decision on one waiting call; dismissed with an ``ApprovalAnswer``.

    ``None`` when the app took the screen down because the call no longer waits.

    Args:
        question: The waiting call.
        send: Sends a steer or a follow-up typed in the message line.
        notices: The main screen's notice bar (``OverlayScreen``).
        clock: The app's monotonic clock.
        last_key: When the app saw its last key.
    """

    DEFAULT_CSS = """
    ApprovalScreen {
        align: center middle;
        background: $background 60%;
    }
    #approval {
        width: 90%;
        max-width: 120;
        height: auto;
        max-height: 90%;
        border: round $warning;
        background: $surface;
        padding: 0 1;
    }
    #approval-title {
        text-style: bold;
    }
    #approval-argument {
        height: auto;
        max-height: 16;
        background: $boost;
        padding: 0 1;
        margin: 1 0;
    }
    #approval-hint {
        color: $text-muted;
        padding: 1 0 0 0;
    }
    #approval-sent {
        color: $success;
        display: none;
    }
    #approval-sent.-shown {
        display: block;
    }
    #approval-message {
        display: none;
    }
    #approval-message.-open {
        display: block;
    }
    """

    def __init__(
        self,
        question: ApprovalQuestion,
        send: SendLine,
        notices: NoticeBar,
        clock: Callable[[], float],
        last_key: float | None,
    ) -> None:
        super().__init__(notices, clock, last_key)
        self.question = question
        self._send = send
        self._mode: LineMode | None = None
        self._answered = False

    def compose(self) -> ComposeResult:
        """The tool and why, its argument in full, the keys, the message line."""
        question = self.question
        with Vertical(id="approval"):
            yield Static(Content(f"Allow {question.tool}?"), id="approval-title")
            if question.argument:
                with VerticalScroll(id="approval-argument"):
                    yield Static(Content(question.argument))
            yield Static(Content(f"Needs your decision: {question.reason}"), id="approval-reason")
            yield Static(SETTLING_HINT, id="approval-hint")
            yield Static("", id="approval-sent")
            yield Input(id="approval-message")

    @property
    def line(self) -> Input:
        """The message line."""
        return self.query_one("#approval-message", Input)

    @property
    def line_mode(self) -> LineMode | None:
        """What the open line is for (``None``: closed, the choice keys answer)."""
        return self._mode

    # -- keys, at arrival (``_prompt_keys``) --------------------------------------------

    def take_key(self, event: events.Key, armed: bool) -> bool:
        """A choice, the line's key, Esc; ``False`` for the app's own keys."""
        if self._answered:
            return False
        key = event.key
        if key == "escape":
            self._close(ApprovalAnswer("abort"))
            return True
        if self._mode is not None:
            return self._line_key(event)
        if key == "tab":
            self._open("message")
            return True
        if key in _SCROLL_KEYS:
            self._scroll(_SCROLL_KEYS[key])
            return True
        if key == "enter":
            return True  # not a choice: the prompt has none selected
        if not (event.is_printable and event.character):
            return False
        if armed and self._choose(event.character):
            return True
        self._open("message")
        LineKeys(self.line).edit(event)
        return True

    def take_paste(self, text: str) -> bool:
        """A paste is text, never a choice: it goes into the (opened) line."""
        if self._answered:
            return False
        if self._mode is None:
            self._open("message")
        LineKeys(self.line).paste(text)
        return True

    def _choose(self, character: str) -> bool:
        question = self.question
        if character == "y":
            self._close(ApprovalAnswer("once"))
        elif character in ("a", "p"):
            offered = question.suggestion is not None
            if character == "p":
                offered = offered and not question.protected
            if offered:
                self._close(ApprovalAnswer("session" if character == "a" else "project"))
            # A key that is not offered means nothing (it is not text either).
        elif character == "n":
            self._open("deny")
        elif character == "m":
            self._open("message")
        else:
            return False
        return True

    def _line_key(self, event: events.Key) -> bool:
        key, mode, keys = event.key, self._mode, LineKeys(self.line)
        if key == "tab":
            self._shut_line()
            return True
        if key == "enter" or key in _FOLLOW_UP_KEYS:
            text = keys.take_text()
            if mode == "deny":
                self._close(ApprovalAnswer("deny", text.strip() or None))
            else:
                self._shut_line()
                if text.strip():
                    follow_up = key in _FOLLOW_UP_KEYS
                    self._send(text.strip(), follow_up)
                    self._say_sent(follow_up)
            return True
        return keys.edit(event)  # Ctrl+C is the app's: it calls ``clear_line``

    # -- what the keys do --------------------------------------------------------------

    def _open(self, mode: LineMode) -> None:
        self._mode = mode
        line = self.line
        line.add_class("-open")
        line.placeholder = (
            "What should the agent do instead?"
            if mode == "deny"
            else "A message for the agent while this waits"
        )
        self.set_focus(line)  # for the cursor only: keys reach the line through take_key
        self._show_hint()

    def _shut_line(self) -> None:
        self._mode = None
        line = self.line
        if not line.value:
            line.remove_class("-open")
        self.set_focus(None)
        self._show_hint()

    def _say_sent(self, follow_up: bool) -> None:
        sent = self.query_one("#approval-sent", Static)
        sent.update(
            "Queued as a follow-up (after the turn)."
            if follow_up
            else "Sent as a steer: the agent reads it after this call."
        )
        sent.add_class("-shown")

    def clear_line(self) -> bool:
        """Ctrl+C: empty the message line (open or shut with text); whether it held any."""
        line = self.line
        if self._answered or not line.value:
            return False
        LineKeys(line).take_text()
        if self._mode is None:
            line.remove_class("-open")  # shut and now empty: nothing left to show
        return True

    def _scroll(self, rows: int) -> None:
        for box in self.query("#approval-argument").results(VerticalScroll):
            box.scroll_relative(y=rows, animate=False)

    def _close(self, answer: ApprovalAnswer) -> None:
        self._answered = True
        unsent = "" if answer.choice == "deny" else self.line.value.strip()
        self.dismiss(ApprovalAnswer(answer.choice, answer.message, unsent))

    def show_armed(self, armed: bool) -> None:
        """Show the choice keys once they count."""
        self._show_hint()

    def _show_hint(self) -> None:
        if self._mode == "deny":
            hint = REASON_HINT
        elif self._mode == "message":
            hint = MESSAGE_HINT
        elif self.armed():
            hint = approval_hint(self.question)
        else:
            hint = SETTLING_HINT
        self.query_one("#approval-hint", Static).update(Content(hint))
