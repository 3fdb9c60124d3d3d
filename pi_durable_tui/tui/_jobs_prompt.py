"""The quit prompt when background jobs run: end them, or leave them running? (issue 13).

A modal over the session: ``N background jobs are running.``, then the keys:
``y`` ends them (the default of every other exit: print mode, a closed
terminal), ``l`` leaves them running past pidurable (the run guard spares them;
the next opening of the session shows them again), Esc stays in the app.
"""

from __future__ import annotations

from typing import Literal

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static

from pi_durable_tui.tui._notices import NoticeBar
from pi_durable_tui.tui._overlay import OverlayScreen

JobsChoice = Literal["end", "keep"]
"""What to do with the running jobs at exit."""

JOBS_HINT = "y end them and exit · l leave them running and exit · esc stay"
"""The last line of the prompt."""


def jobs_question(count: int) -> str:
    """The question: how many background jobs run, in words."""
    return (
        f"{count} background job is running."
        if count == 1
        else (f"{count} background jobs are running.")
    )


class JobsExitScreen(OverlayScreen[JobsChoice | None]):
    """Ask what becomes of the running jobs; dismissed with the choice (None: stay).

    Args:
        count: How many jobs run.
        notices: The main screen's notice bar (``OverlayScreen``).
    """

    DEFAULT_CSS = """
    JobsExitScreen {
        align: center middle;
        background: $background 60%;
    }
    #jobs-exit {
        width: 70;
        height: auto;
        border: round $warning;
        background: $surface;
        padding: 0 1;
    }
    #jobs-exit-hint {
        color: $text-muted;
        padding: 1 0 0 0;
    }
    """
    BINDINGS = [
        Binding("y", "choose('end')", "End the background jobs and exit"),
        Binding("l", "choose('keep')", "Leave the background jobs running and exit"),
        Binding("escape", "choose('')", "Stay in pidurable"),
    ]

    def __init__(self, count: int, notices: NoticeBar) -> None:
        super().__init__(notices)
        self.count = count

    def compose(self) -> ComposeResult:
        """The question and the keys."""
        with Vertical(id="jobs-exit"):
            yield Static(jobs_question(self.count), id="jobs-exit-question")
            yield Static(JOBS_HINT, id="jobs-exit-hint")

    def action_choose(self, choice: str) -> None:
        """Dismiss with ``end``, ``keep`` or None (stay)."""
        self.dismiss("end" if choice == "end" else "keep" if choice == "keep" else None)
