"""The trust prompt: a project's settings widen powers; does the user trust them? (issue 13).

A modal over the session: ``This project's settings (PATH) allow:``, one line
per widening key and its value, ``Trust them?``, and the keys:
``y`` trusts that exact content (remembered by its sha256), ``n`` or Esc does
not (the keys stay off; a later change of the file asks again). The agent keeps
working behind it; until the answer, the widening keys wait.

Its keys are taken at arrival and ``y``/``n`` count only once the prompt has
settled (``_prompt_keys``): a ``y`` typed as part of a word when the prompt
appeared never trusts a file the model may have written. Keys typed before that
are ignored (the keys line says so); Esc (not trusting) always counts.

REMINDER: every string here comes from a file the model may have written: it is
shown as plain text (never markup), and its values arrive JSON-escaped
(``TrustRequest.shown_values``), so it can neither style the screen nor write a
control sequence to the terminal.
"""

from __future__ import annotations

from collections.abc import Callable

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from pi_durable_tui.app import TrustQuestion
from pi_durable_tui.tui._notices import NoticeBar
from pi_durable_tui.tui._prompt_keys import PromptScreen
from pi_durable_tui.tui._terminal_text import Content

TRUST_HINT = "y trust them · n don't (they stay off; a change asks again)"
"""The last line of the prompt, once its keys count."""
SETTLING_HINT = "Read it first: the keys answer in a moment · Esc don't trust"
"""The last line until the prompt takes ``y`` and ``n``."""


class TrustScreen(PromptScreen[bool | None]):
    """Ask whether to trust a project's settings; dismissed with the answer.

    ``None`` when the screen took it down unanswered (the question was replaced).

    Args:
        question: What waits for the user.
        notices: The main screen's notice bar (``OverlayScreen``).
        clock: The app's monotonic clock.
        last_key: When the app saw its last key.
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

    def __init__(
        self,
        question: TrustQuestion,
        notices: NoticeBar,
        clock: Callable[[], float],
        last_key: float | None,
    ) -> None:
        super().__init__(notices, clock, last_key)
        self.question = question
        self._answered = False

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
            yield Static(SETTLING_HINT, id="trust-hint")

    def take_key(self, event: events.Key, armed: bool) -> bool:
        """``y``/``n`` once settled, Esc always; other typing is the prompt's (ignored)."""
        if self._answered:
            return False
        if event.key == "escape":
            self._answer(False)
        elif armed and event.character in ("y", "n"):
            self._answer(event.character == "y")
        elif not (event.is_printable or event.key in ("enter", "tab")):
            return False  # the app's own keys (F1, Ctrl+C...) go on
        return True

    def _answer(self, trusted: bool) -> None:
        self._answered = True
        self.dismiss(trusted)

    def show_armed(self, armed: bool) -> None:
        """Show ``y``/``n`` once they count."""
        self.query_one("#trust-hint", Static).update(TRUST_HINT if armed else SETTLING_HINT)
