"""The approval prompt: a tool call waits for the user's decision (issue 13, DESIGN.md 7).

A panel docked above the editor (not a modal: the session, the editor and
every other key stay live while a call waits) showing the tool, its full main
argument (the whole command, the path), why it needs a decision, and the keys:

- ``y`` allow once (the call runs once);
- ``a`` allow always in this session (its suggested rule, e.g. ``bash(make test)``);
- ``p`` allow always in this project (pidurable writes the rule to the project's
  ``.pidurable/settings.json``; never offered for pidurable's own files);
- ``n`` deny with a message: a line opens under the keys for what the agent
  should do instead; Enter denies and the model reads the message in the
  refusal (an empty line denies without one);
- Esc denies at once, without a message (from the message line too).

Who gets a key (typing is never lost, and never answers by accident):

- The prompt takes the focus when it appears only if the editor is empty; while
  the editor holds text (the user is mid-typing) the focus stays there and the
  prompt says ``F3 to answer``.
- ``y``/``a``/``p``/``n``/Esc decide only while the prompt has the focus; in the
  editor they are text (a steer containing ``y`` never approves).
- Any other printable key (``a`` and ``p`` too where they are not offered), or
  a paste, while the prompt has the focus moves the focus to the editor and
  lands there (``PidurableApp.on_key``); Enter there sends a steer or
  follow-up while the call still waits.
- Keys typed fast (a terminal sends ``wait, yes`` in one burst) are queued for
  the prompt before the first moves the focus: a decision key among them that
  arrives once the focus has left is text for the editor (``TypedAway``).
- ``F3`` moves the focus between the prompt and the editor (``APPROVAL_KEY``).
- When the call is decided (here, on another client, or by an abort) the panel
  hides and, if it had the focus, the editor gets it back.

The request was committed before this panel shows it, and the decision is
committed before the tool starts: after a crash ``--continue`` shows the same
question again, and a decided call is never asked again.

REMINDER: every string here comes from the model (its command, its path): the
view model made it terminal-safe, and it is shown as plain content, never
markup.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Input, Static

from pi_durable_tui.app import ApprovalQuestion
from pi_durable_tui.tui._terminal_text import Content

APPROVAL_KEY = "f3"
"""Moves the focus between the approval prompt and the editor."""


def approval_hint(question: ApprovalQuestion, *, focused: bool = True) -> str:
    """The keys line of ``question`` (``a``/``p`` only where a rule can be added).

    Args:
        question: The waiting call.
        focused: Whether the prompt has the focus; without it the keys are
            the editor's text, and the line says how to reach the prompt.
    """
    if not focused:
        return "F3 to answer (your typing stays in the editor)"
    keys = ["y allow once"]
    if question.suggestion is not None:
        keys.append(f"a allow {question.suggestion} in this session")
        if not question.protected:
            keys.append("p always in this project")
    keys.append("n deny with a message · Esc deny · F3 or typing: the editor")
    return " · ".join(keys)


REASON_HINT = "Enter denies with this message for the agent (empty: no message) · Esc denies"
"""The keys line while the message line is open."""


class ApprovalPanel(Vertical, can_focus=True):
    """Ask for a decision on the waiting call; posts ``Decided`` with the choice.

    Hidden while no call waits (``question`` is ``None``).
    """

    class Decided(Message):
        """The user decided ``call_id``: ``once``, ``session``, ``project`` or ``deny``.

        Args:
            call_id: The call decided.
            choice: What the user chose.
            message: What the user said with ``deny`` (``None`` without a message).
        """

        def __init__(self, call_id: str, choice: str, message: str | None) -> None:
            super().__init__()
            self.call_id = call_id
            self.choice = choice
            self.message = message

    class TypedAway(Message):
        """A decision key that arrived after the focus had moved to the editor.

        Keys typed fast are queued here before the first of them moves the
        focus; those behind it are text, not answers.

        Args:
            text: The key's character.
        """

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    DEFAULT_CSS = """
    ApprovalPanel {
        display: none;
        height: auto;
        max-height: 60%;
        border: round $warning 50%;
        background: $surface;
        padding: 0 1;
    }
    ApprovalPanel.-asking {
        display: block;
    }
    ApprovalPanel:focus-within {
        border: round $warning;
    }
    #approval-title {
        text-style: bold;
    }
    #approval-argument {
        height: auto;
        max-height: 12;
        background: $boost;
        padding: 0 1;
    }
    #approval-hint {
        color: $text-muted;
    }
    #approval-message {
        display: none;
    }
    #approval-message.-open {
        display: block;
    }
    """
    BINDINGS = [
        Binding("y", "choose('once')", "Allow once", show=False),
        Binding("a", "choose('session')", "Allow always in this session", show=False),
        Binding("p", "choose('project')", "Allow always in this project", show=False),
        Binding("n", "ask_message", "Deny with a message to the agent", show=False),
        Binding("escape", "choose('deny')", "Deny", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.question: ApprovalQuestion | None = None

    def compose(self) -> ComposeResult:
        """The tool and why, its argument in full, the keys, the message line."""
        yield Static(id="approval-title")
        with VerticalScroll(id="approval-argument"):
            yield Static(id="approval-argument-text")
        yield Static(id="approval-reason")
        yield Static(id="approval-hint")
        yield Input(placeholder="What should the agent do instead?", id="approval-message")

    def ask(self, question: ApprovalQuestion | None) -> None:
        """Show ``question`` (``None``: hide); the focus is the app's to give.

        Args:
            question: The oldest waiting call, or ``None`` when none waits.
        """
        self.question = question
        self.set_class(question is not None, "-asking")
        line = self.query_one("#approval-message", Input)
        line.remove_class("-open")
        line.value = ""
        if question is None:
            return
        self.query_one("#approval-title", Static).update(Content(f"Allow {question.tool}?"))
        self.query_one("#approval-argument", VerticalScroll).display = bool(question.argument)
        self.query_one("#approval-argument-text", Static).update(Content(question.argument))
        self.query_one("#approval-reason", Static).update(
            Content(f"Needs your decision: {question.reason}")
        )
        self.show_hint()

    def show_hint(self, focused: bool | None = None) -> None:
        """Say the keys, or how to reach them when the focus is elsewhere.

        Args:
            focused: Whether the prompt has the focus (``None``: ask Textual; a
                blur handler runs before ``has_focus`` says so).
        """
        question = self.question
        if question is None:
            return
        line = self.query_one("#approval-message", Input)
        if line.has_class("-open"):
            hint = REASON_HINT
        else:
            hint = approval_hint(question, focused=self.has_focus if focused is None else focused)
        self.query_one("#approval-hint", Static).update(hint)

    def on_focus(self) -> None:
        """The keys now decide: say so."""
        self.show_hint(focused=True)

    def on_blur(self) -> None:
        """The keys are text again: say how to come back."""
        self.show_hint(focused=False)

    def decides(self, key: str) -> bool:
        """Whether ``key`` means a decision here (else it is text for the editor).

        Args:
            key: A key name, as Textual spells it.
        """
        question = self.question
        if question is None or key not in ("y", "a", "p", "n"):
            return False
        if key == "a":
            return question.suggestion is not None
        if key == "p":
            return question.suggestion is not None and not question.protected
        return True

    def _focus_left(self, key: str) -> bool:
        # REMINDER: the key was queued while the prompt had the focus, but an
        # earlier key moved it to the editor: it is text there, never an answer.
        if self.has_focus or self.query_one("#approval-message", Input).has_focus:
            return False
        if key:
            self.post_message(self.TypedAway(key))
        return True

    def action_choose(self, choice: str) -> None:
        """Decide ``choice`` (``a``/``p`` mean nothing where no rule can be added)."""
        question = self.question
        key = {"once": "y", "session": "a", "project": "p"}.get(choice, "")
        if question is None or self._focus_left(key):
            return
        if choice in ("session", "project") and question.suggestion is None:
            return
        if choice == "project" and question.protected:
            return
        self.post_message(self.Decided(question.call_id, choice, None))

    def action_ask_message(self) -> None:
        """Open the message line (``n``); Enter there denies with its text."""
        if self._focus_left("n"):
            return
        line = self.query_one("#approval-message", Input)
        line.add_class("-open")
        self.show_hint()
        line.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Deny with the typed message (none when the line is empty)."""
        event.stop()
        if self.question is not None:
            message = event.value.strip()
            self.post_message(self.Decided(self.question.call_id, "deny", message or None))
