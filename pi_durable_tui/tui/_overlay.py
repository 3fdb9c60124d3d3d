"""``OverlayScreen``: the base of every screen the app pushes over its main screen.

The prompts (approval, trust), the help, the pickers (``/model``, ``/resume``,
forks...) and the jobs question at exit all cover the main screen, and with it
its notice bar. Before, only the prompts had a bar of their own, so a notice
raised while the help or a picker was up ("Press Ctrl+C again to exit.", a
failed command, the store's failure) was invisible until the screen closed, by
when it could have expired.

So every such screen is an ``OverlayScreen``: it owns a ``follower`` of the
main bar, docked at its bottom, which shows the app's notices timed on the main
bar's clock (a notice lives ``LIFETIME_S`` from when any bar first saw it, not
again on each screen). The app shows every change of the notices on the main
bar and on the bar of the screen on top (``PidurableApp._show_notices``); a
screen that comes back on top (the one over it closed) catches up with the
main bar, as does a screen when it first appears.

No numbered rule: the reference's screen layout (notices, the last four) holds
on every screen, not only the main one.
"""

from __future__ import annotations

from typing import TypeVar

from textual import events
from textual.screen import ModalScreen

from pi_durable_tui.tui._notices import NoticeBar

R = TypeVar("R")


class OverlayScreen(ModalScreen[R]):
    """A modal over the main screen, with the app's notices at its bottom.

    Subclasses compose their own content; the bar is mounted after it.

    Args:
        notices: The main screen's bar, which this screen's bar follows.
    """

    DEFAULT_CSS = """
    OverlayScreen > NoticeBar {
        dock: bottom;
        width: 100%;
    }
    """

    def __init__(self, notices: NoticeBar) -> None:
        super().__init__()
        self.notice_bar = notices.follower(id="overlay-notices")
        """The app's notices, at this screen's bottom: the main screen's bar is hidden."""

    def on_mount(self) -> None:
        """Put the bar at the bottom (Textual also runs a subclass's own ``on_mount``)."""
        self.mount(self.notice_bar)

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        """On top again (or for the first time): show the notices of now."""
        self.notice_bar.catch_up()
