"""The log file the app writes tracebacks to, and a double-press detector for keys.

A crash must not cost the user the explanation: the traceback goes to the log
file the app was given (the session directory's, chosen by the CLI) and the
terminal says where, after the screen is gone (issue 8, Exit).
"""

from __future__ import annotations

import datetime
import traceback
from collections.abc import Callable
from pathlib import Path


def append_traceback(path: Path, error: BaseException, what: str) -> bool:
    """Append a timestamped traceback to ``path``.

    Args:
        path: The log file (created with its directory if missing).
        error: The exception.
        what: What was running (``crash``, ``submit``, ...).

    Returns:
        Whether the traceback was written (a log that cannot be written is no
        reason to fail twice).
    """
    stamp = datetime.datetime.now().isoformat(timespec="seconds")
    text = "".join(traceback.format_exception(error))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as log:
            log.write(f"--- {stamp} {what}\n{text}\n")
    except OSError:
        return False
    return True


class DoublePress:
    """Tells whether a key was pressed twice within ``window_s`` seconds.

    Args:
        clock: Monotonic seconds.
        window_s: The longest gap that still counts as a double press.
    """

    def __init__(self, clock: Callable[[], float], window_s: float = 1.0) -> None:
        self._clock = clock
        self._window = window_s
        self._last: float | None = None

    def press(self) -> bool:
        """Record a press; return whether it completes a double press (which then resets)."""
        now = self._clock()
        double = self._last is not None and now - self._last <= self._window
        self._last = None if double else now
        return double
