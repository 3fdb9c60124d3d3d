"""Notices: one line each, the newest four, each gone ``LIFETIME_S`` after it appeared.

The model's notices (committed: compaction results, unanswered submissions) and
the screen's own (a malformed theme, a failed command) share the bar; a notice
is identified by its ``id`` and timed from when the bar first saw it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from textual.widgets import Static

from pi_durable_tui.app import Notice
from pi_durable_tui.tui._terminal_text import Content

SHOWN = 4
LIFETIME_S = 12.0

_LEVEL_STYLE = {"info": "$text-muted", "warning": "$warning", "error": "$error"}


class NoticeBar(Static):
    """The notices above the status line.

    Args:
        clock: Monotonic seconds (injectable so tests need not wait).
        id: The widget id.
    """

    DEFAULT_CSS = """
    NoticeBar {
        height: auto;
        max-height: 4;
        padding: 0 1;
    }
    """

    def __init__(self, clock: Callable[[], float], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._clock = clock
        self._first_seen: dict[int, float] = {}
        self._notices: list[Notice] = []

    def on_mount(self) -> None:
        """Show nothing yet; expire notices as time passes."""
        self._redraw()
        self.set_interval(1.0, self._redraw, name="notice-expiry")

    @property
    def shown_notices(self) -> list[Notice]:
        """The notices on screen now, oldest first."""
        now = self._clock()
        live = [
            notice
            for notice in self._notices
            if now - self._first_seen.get(notice.id, now) < LIFETIME_S
        ]
        live.sort(key=lambda notice: self._first_seen[notice.id])
        return live[-SHOWN:]

    def show(self, notices: Sequence[Notice]) -> None:
        """Take the current notices (model and screen ones together).

        Args:
            notices: Every notice still kept; the bar picks what to show.
        """
        now = self._clock()
        for notice in notices:
            self._first_seen.setdefault(notice.id, now)
        self._notices = list(notices)
        self._redraw()

    def _redraw(self) -> None:
        shown = self.shown_notices
        lines = [
            Content.styled((notice.text or " ").splitlines()[0], _LEVEL_STYLE[notice.level])
            for notice in shown
        ]
        self.update(Content("\n").join(lines))
        self.display = bool(shown)
