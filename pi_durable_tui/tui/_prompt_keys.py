"""Keys of a prompt that interrupts the session, taken when they arrive (issue 13).

Owns ``PromptScreen`` (the base of the approval and trust prompts: its keys,
its settle time ``SETTLE``, its line for Ctrl+C; its bar of the app's notices
is ``OverlayScreen``'s) and ``LineKeys`` (editing a message line in place).

Why at arrival. Textual hands a key to the widget focused when the key reaches
the app by posting it to that widget's queue, and resolves bindings when the
key comes back up to the app. A focus change made in between (by an earlier
key's handler, by a prompt that appeared) falls between a key's arrival and
its handling, so a key typed right after the change reaches the old target or
the new one by chance: in the non-modal approval panel tried twice, a fast
``y`` typed as the panel appeared landed in the editor and the panel never took
the focus back, and under load an ``n`` meant for the trust question opened the
approval's message line. So a prompt here has no key bindings and needs no
focus: the app gives every key and paste, the moment it arrives and in the
order it arrived (``PidurableApp.on_event``, before any queue), to the prompt on
top, and the prompt decides then, synchronously, what it is: a choice, a
character of its message line (edited in place through the ``Input``'s own
actions, so no key waits in a widget's queue), or a key that is not the
prompt's (the app's own keys, F1, F4, Ctrl+O, Ctrl+C, go on as usual; Ctrl+C
asks the prompt to clear its line, ``clear_line``). A decision
dismisses the prompt at once, so the next key already finds the editor.

Why a settle time. A choice is one letter, and a user typing a word in the
editor just as a prompt appears would answer it (the ``y`` of ``yes``, the ``a``
of ``and``). So a prompt takes a choice only once it was painted and no key
arrived for ``SETTLE`` seconds (0.5 s: longer than a typist's pauses inside a
word, 0.1-0.3 s, and than a reaction to something new on the screen, about
0.25 s; browsers hold the buttons of install and permission dialogs the same
way). Every key restarts the wait, so a word typed on never decides. Until then
the keys line says so, and what is typed is not a choice: the approval prompt
puts it in its message line (nothing is lost, Enter sends it as a steer), the
trust prompt ignores it. And the app opens a prompt only once no key arrived
for ``SETTLE``: a prompt never cuts into a word being typed, and the editor's
keys still in its queue are handled before the prompt takes the screen.

REMINDER: the clock is the app's (injectable), read by the app when a key
arrives; a time read when a key is handled would count a queue's delay as the
user's pause, and under load would arm a prompt the user has not seen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from textual import events
from textual.actions import parse
from textual.binding import BindingsMap
from textual.widgets import Input

from pi_durable_tui.tui._notices import NoticeBar
from pi_durable_tui.tui._overlay import OverlayScreen

SETTLE = 0.5
"""Seconds without a key before a shown prompt takes a choice (module docstring)."""
_TICK = 0.1
"""Seconds between two looks at the clock while a prompt is not yet armed."""

R = TypeVar("R")

_EDITING = frozenset(
    {
        "cursor_left",
        "cursor_right",
        "cursor_left_word",
        "cursor_right_word",
        "home",
        "end",
        "delete_left",
        "delete_right",
        "delete_left_word",
        "delete_right_word",
        "delete_left_all",
        "delete_right_all",
    }
)
"""The ``Input`` actions a message line runs for its keys (no submit, no clipboard)."""
_LINE_KEYS = BindingsMap(Input.BINDINGS)


class PromptScreen(OverlayScreen[R]):
    """A modal that takes its keys at arrival and its choices only once settled.

    Subclasses implement ``take_key`` (and ``take_paste``) and ``show_armed``.

    Args:
        notices: The main screen's notice bar (``OverlayScreen``).
        clock: The app's monotonic clock.
        last_key: When the app saw its last key (``None``: none yet).
    """

    AUTO_FOCUS = None  # nothing needs the focus: keys come through ``arrived``

    def __init__(
        self, notices: NoticeBar, clock: Callable[[], float], last_key: float | None
    ) -> None:
        super().__init__(notices)
        self._clock = clock
        self._last_key = last_key
        self._painted: float | None = None
        self._was_armed = False

    def on_mount(self) -> None:
        """Count the settle time from the first paint, not from the push."""
        self.call_after_refresh(self._first_paint)
        self.set_interval(_TICK, self._tick)

    def _first_paint(self) -> None:
        self._painted = self._clock()
        self._tick()

    def _tick(self) -> None:
        armed = self.armed()
        if armed != self._was_armed:
            self._was_armed = armed
            self.show_armed(armed)

    def armed(self, now: float | None = None) -> bool:
        """Whether a choice key arriving at ``now`` (the clock's now) would count."""
        if self._painted is None:
            return False
        now = self._clock() if now is None else now
        quiet_since = max(self._painted, self._last_key or self._painted)
        return now - quiet_since >= SETTLE

    def arrived(self, event: events.Key | events.Paste, now: float) -> bool:
        """Take a key or paste the moment it reaches the app; whether it was the prompt's.

        Args:
            event: The key or paste, not yet forwarded anywhere.
            now: The app's clock at its arrival.
        """
        armed = self.armed(now)
        self._last_key = now
        self._tick()  # a key restarts the settle time
        if isinstance(event, events.Paste):
            return self.take_paste(event.text)
        return self.take_key(event, armed)

    def take_key(self, event: events.Key, armed: bool) -> bool:
        """Act on a key; ``armed`` says whether a choice counts. Whether it was taken."""
        raise NotImplementedError

    def take_paste(self, text: str) -> bool:
        """Act on a paste (never a choice); whether it was taken."""
        return True  # dropped: a paste must not reach the screen behind

    def show_armed(self, armed: bool) -> None:
        """Say on the prompt whether its choice keys count now."""

    def clear_line(self) -> bool:
        """Ctrl+C over the prompt: empty its own line; whether it held text.

        ``False`` (no line, or an empty one) lets the app show its exit hint
        (``_keys``); the editor behind the prompt is never cleared.
        """
        return False


class LineKeys:
    """Edits an ``Input`` in place with its own editing keys (not through its queue).

    Args:
        line: The message line.
    """

    def __init__(self, line: Input) -> None:
        self.line = line

    def edit(self, event: events.Key) -> bool:
        """Type a printable key or run the line's editing binding; whether it did."""
        if event.is_printable and event.character:
            self.line.insert_text_at_cursor(event.character)
            return True
        for binding in _LINE_KEYS.key_to_bindings.get(event.key, ()):
            name, arguments = parse(binding.action)[1:]
            if name in _EDITING:
                getattr(self.line, f"action_{name}")(*arguments)
                return True
        return False

    def paste(self, text: str) -> None:
        """Insert pasted text (its line breaks as spaces: the line holds one line)."""
        self.line.insert_text_at_cursor(" ".join(text.splitlines()))

    def take_text(self) -> str:
        """Empty the line; what it held."""
        text = self.line.value
        self.line.value = ""
        return text
