"""The trust prompt: a project's settings widen powers; does the user trust them? (issue 13).

A modal over the session: ``This project's settings (PATH) allow:``, one line
per widening key and its value, ``Trust them?``, and the keys:
``y`` trusts that exact content (remembered by its sha256), ``n`` or Esc does
not (the keys stay off; a later change of the file asks again). The agent keeps
working behind it; until the answer, the widening keys wait.

REMINDER: every string here comes from a file the model may have written: it is
shown as plain text (never markup), and its values arrive JSON-escaped
(``TrustRequest.shown_values``), so it can neither style the screen nor write a
control sequence to the terminal.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from pi_durable_tui.app import TrustQuestion
from pi_durable_tui.tui._terminal_text import Content

TRUST_HINT = "y trust them · n don't (they stay off; a change asks again)"
"""The last line of the prompt."""


class TrustScreen(ModalScreen[bool | None]):
    """Ask whether to trust a project's settings; dismissed with the answer.

    ``None`` when the screen took it down unanswered (the question was replaced).

    Args:
        question: What waits for the user.
    """

    DEFAULT_CSS = """
    TrustScreen {
        align: center middle;
        background: $background 60%;
    }
    #trust {
        width: 90%;
        max-width: 110;
        height: auto;
        border: round $warning;
        background: $surface;
        padding: 0 1;
    }
    #trust-question {
        text-style: bold;
        padding: 0 0 1 0;
    }
    #trust-ask {
        text-style: bold;
        padding: 1 0 0 0;
    }
    #trust-hint {
        color: $text-muted;
        padding: 1 0 0 0;
    }
    """
    BINDINGS = [
        Binding("y", "answer(True)", "Trust the project's settings"),
        Binding("n,escape", "answer(False)", "Do not trust them"),
    ]

    def __init__(self, question: TrustQuestion) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        """The question, the keys and values, the hint."""
        with Vertical(id="trust"):
            question = self.question
            if question.heading and question.keys:
                yield Static(Content(question.heading), id="trust-question")
                for key, value in question.keys:
                    yield Static(Content(f"  {key} = {value}"), classes="trust-key")
                yield Static("Trust them?", id="trust-ask")
            else:
                yield Static(Content(question.text), id="trust-question")
            yield Static(TRUST_HINT, id="trust-hint")

    def action_answer(self, trusted: bool) -> None:
        """Close with the answer."""
        self.dismiss(trusted)
