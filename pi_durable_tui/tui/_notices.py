"""Notices: one line each, the newest four, each gone ``LIFETIME_S`` after it appeared.

A ``lasting`` notice (the store failed) never expires: newer notices take the
room first while they live, and it is whole again once they are gone.

The model's notices (committed: compaction results, unanswered submissions) and
the screen's own (a malformed theme, a failed command) share the bar; a notice
is identified by its ``id`` and timed from when the bar first saw it.

A screen over the main one (``_overlay.OverlayScreen``: the prompts, the
help, the pickers, the jobs question) hides this bar behind it, so it has a
bar of its own at its bottom, a ``follower`` of this one: the same notices,
timed as here, so a notice lives ``LIFETIME_S`` from when any bar first saw
it. "Press Ctrl+C again to exit.", a failed command and the store's failure
are seen whatever screen is up.

The bar is at most ``SHOWN`` rows, and a long line (a store's path) wraps over
several: the bar shows the last ``SHOWN`` rows of the wrapped notices, so the
newest ones are whole and the oldest shown may lose its first rows (a line's
end says what to do). Before, the bar's height cut its last rows, which are
the newest notices, so the answer to a prompt sent after the store failed
stayed hidden under that failure's four-row line until the line expired 12 s
later (issue 12).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from textual.widget import Widget
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
        self._leader: NoticeBar | None = None

    def follower(self, *, id: str | None = None) -> NoticeBar:
        """A bar for a screen over this one's: this bar's notices, timed as here.

        A notice then lives ``LIFETIME_S`` from when any of the bars first saw
        it, not that long again on each; ``catch_up`` shows what this bar was
        last given.

        Args:
            id: The new bar's widget id.
        """
        bar = NoticeBar(self._clock, id=id)
        # REMINDER: the same dict, not a copy: one clock for every bar of the app.
        bar._first_seen = self._first_seen
        bar._leader = self
        bar._notices = list(self._notices)
        return bar

    def catch_up(self) -> None:
        """Show the notices the bar this one follows was last given (nothing to do if none)."""
        if self._leader is not None:
            self.show(self._leader._notices)

    def on_mount(self) -> None:
        """Show nothing yet; expire notices as time passes."""
        self._redraw()
        self.set_interval(1.0, self._redraw, name="notice-expiry")

    def on_resize(self) -> None:
        """Wrap the notices again at the new width."""
        self._redraw()

    @property
    def shown_notices(self) -> list[Notice]:
        """The notices on screen now (whole or their last rows), oldest first."""
        return [notice for notice, _ in self._shown_rows()]

    def _shown_rows(self) -> list[tuple[Notice, list[Any]]]:
        now = self._clock()
        live = [
            notice
            for notice in self._notices
            if notice.lasting or now - self._first_seen.get(notice.id, now) < LIFETIME_S
        ]
        live.sort(key=lambda notice: self._first_seen[notice.id])
        width = self._width()
        # Any: ``wrap`` gives Textual's own Content, built from this module's safe text.
        shown: list[tuple[Notice, list[Any]]] = []
        room = SHOWN
        for notice in reversed(live[-SHOWN:]):
            if room <= 0:
                break
            rows = _line(notice).wrap(width) or [Content(" ")]
            shown.insert(0, (notice, rows[-room:]))
            room -= len(rows)
        return shown

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

    def _width(self) -> int:
        """The width the notices wrap at: the bar's own, or its parent's while it is hidden."""
        if self.content_region.width:
            return self.content_region.width
        parent = self.parent
        outer = parent.size.width if isinstance(parent, Widget) else 0
        return max(1, outer - 2 if outer else 80)  # 2: the bar's padding

    def _redraw(self) -> None:
        shown = self._shown_rows()
        self.update(Content("\n").join(row for _, rows in shown for row in rows))
        self.display = bool(shown)


def _line(notice: Notice) -> Content:
    return Content.styled((notice.text or " ").splitlines()[0], _LEVEL_STYLE[notice.level])
