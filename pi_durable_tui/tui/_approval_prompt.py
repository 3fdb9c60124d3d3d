"""The approval prompt: a tool call waits for the user's decision (issue 13, DESIGN.md 7).

A modal over the session showing the tool, its full main argument (the whole
command, the path), why it needs a decision, and the keys:

- ``y`` allow once (the call runs once);
- ``a`` allow always in this session (its suggested rule, e.g. ``bash(make test)``);
- ``p`` allow always in this project (pidurable writes the rule to the project's
  ``.pidurable/settings.json``; never offered for pidurable's own files);
- ``n`` deny with a message: a line opens under the keys for what the agent
  should do instead; Enter denies and the model reads the message in the
  refusal (an empty line denies without one);
- Esc denies at once, without a message (from the message line too).

The request was committed before this screen shows it, and the decision is
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
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from pi_durable_tui.app import ApprovalQuestion
from pi_durable_tui.tui._terminal_text import Content


def approval_hint(question: ApprovalQuestion) -> str:
    """The keys line of ``question`` (``a``/``p`` only where a rule can be added)."""
    keys = ["y allow once"]
    if question.suggestion is not None:
        keys.append(f"a allow {question.suggestion} in this session")
        if not question.protected:
            keys.append("p always in this project")
    keys.append("n deny with a message · Esc deny")
    return " · ".join(keys)


REASON_HINT = "Enter denies with this message for the agent (empty: no message) · Esc denies"
"""The keys line while the message line is open."""


class ApprovalScreen(ModalScreen[tuple[str, str | None] | None]):
    """Ask for a decision on one waiting call; dismissed with the choice.

    The result is ``(choice, message)``: ``once``, ``session``, ``project`` or
    ``deny``, and the message the user gave with ``deny`` (``None`` without
    one); or ``None`` when the app took the screen down because the call no
    longer waits.

    Args:
        question: The waiting call.
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
    #approval-message {
        display: none;
    }
    #approval-message.-open {
        display: block;
    }
    """
    BINDINGS = [
        Binding("y", "choose('once')", "Allow once"),
        Binding("a", "choose('session')", "Allow always in this session"),
        Binding("p", "choose('project')", "Allow always in this project"),
        Binding("n", "ask_message", "Deny with a message to the agent"),
        Binding("escape", "choose('deny')", "Deny"),
    ]

    def __init__(self, question: ApprovalQuestion) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        """The tool and why, its argument in full, the keys."""
        question = self.question
        with Vertical(id="approval"):
            yield Static(Content(f"Allow {question.tool}?"), id="approval-title")
            if question.argument:
                with VerticalScroll(id="approval-argument"):
                    yield Static(Content(question.argument))
            yield Static(Content(f"Needs your decision: {question.reason}"), id="approval-reason")
            yield Static(approval_hint(question), id="approval-hint")
            yield Input(placeholder="What should the agent do instead?", id="approval-message")

    def action_choose(self, choice: str) -> None:
        """Close with ``choice`` (``a``/``p`` fall back to once where no rule exists)."""
        question = self.question
        if choice in ("session", "project") and question.suggestion is None:
            return
        if choice == "project" and question.protected:
            return
        self.dismiss((choice, None))

    def action_ask_message(self) -> None:
        """Open the message line (``n``); Enter there denies with its text."""
        line = self.query_one("#approval-message", Input)
        line.add_class("-open")
        self.query_one("#approval-hint", Static).update(REASON_HINT)
        line.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Deny with the typed message (none when the line is empty)."""
        event.stop()
        message = event.value.strip()
        self.dismiss(("deny", message or None))
