"""One clear line for each problem that stops the app from starting.

Bad input must say what was wrong and what to do, and lose nothing: a malformed
settings file names the file and the key; a locked store names the path (and the
process holding it, when known); a damaged store says so and where it is; a
missing session says how to start one; a malformed faux script names the file
and the place. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from pathlib import Path

from pi_durable_tui.ai import FauxScriptError
from pi_durable_tui.app._config import SettingsError
from pi_durable_tui.app._sessions import NoSession
from pi_durable_tui.storage import StorageCorrupted, StoreLocked


def _holder(message: str) -> str:
    """The PID written in the lock file of the store a ``StoreLocked`` names, if any."""
    _, _, path = message.rpartition(": ")
    try:
        pid = Path(path + ".lock").read_text().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""


def describe_startup_error(error: BaseException) -> str | None:
    """Return the line to print for a startup problem the user can fix, else ``None``."""
    if isinstance(error, StoreLocked):
        text = str(error)
        return f"{text}{_holder(text)}; close the other pidurable first"
    if isinstance(error, StorageCorrupted):
        return (
            f"the session store is damaged: {error}. Start a new session (run pidurable without -c)"
        )
    if isinstance(error, NoSession):
        return f'{error}; start one with: pidurable -p "..." (or pidurable)'
    if isinstance(error, (SettingsError, FauxScriptError)):
        return str(error)
    if isinstance(error, ValueError):
        return str(error)
    return None
