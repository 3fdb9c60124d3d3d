"""The app's main screen: what the user types is painted at once, not at the next frame.

Textual paints a screen from a 60 Hz update timer that runs only while something
is dirty. An idle screen paints a key at once (the timer wakes up with its tick
already due), but while an answer streams the timer keeps ticking for the live
tail, and a key typed just after a tick waits for the next one; when the timer
wakes late (it was paused past a tick) Textual skips to the tick after next, so
the wait is up to two frames, 33 ms. That wait was the whole gap between idle
echo and echo while streaming in ``bench tui`` (issue 14: p99 34 ms against
2 ms idle here, 61 ms on a loaded machine; the key itself was handled within a
millisecond and the loop sat idle until the tick).

So a repaint of the focused widget (the editor, where typing goes) paints the
screen in the same idle pass, whatever the timer's phase; the transcript's dirty
regions ride along in that frame. Everything else keeps Textual's pacing: the
focused widget repaints only for the user's keys and the cursor's blink, so
the stream is not painted more often than before.
"""

from __future__ import annotations

from textual import events
from textual.messages import Update
from textual.screen import Screen


class MainScreen(Screen[None]):
    """The default screen of ``PidurableApp``: the focused widget's repaint is not deferred.

    Args:
        id: The screen id (Textual's default screen is ``_default``).
    """

    def __init__(self, *, id: str | None = "_default") -> None:
        super().__init__(id=id)
        self._echo_due = False

    def on_update(self, message: Update) -> None:
        """Note that the focused widget asked to be repainted (Textual then marks it dirty)."""
        if message.widget is self.focused:
            self._echo_due = True

    def on_idle(self, event: events.Idle) -> None:
        """Paint now (before Textual would arm its frame timer) when the focused widget waits."""
        if self._echo_due:
            self._echo_due = False
            # REMINDER: ``_on_timer_update`` is Textual's own frame (layout if needed,
            # then the dirty widgets); it checks that this screen is the current one
            # and that no batch update is open. tests/tui/test_main_screen.py fails
            # if a Textual upgrade renames it or stops calling ``on_idle`` first.
            self._on_timer_update()
