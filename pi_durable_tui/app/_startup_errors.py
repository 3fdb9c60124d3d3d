"""One clear line for each problem that stops the app from starting.

Bad input must say what was wrong and what to do, and lose nothing: a malformed
settings file names the file and the key; a locked store names the path and the
process holding it (the PID its lock file holds); a damaged store says so, where
it is, and how to go on; a missing session says how to start one; a malformed
faux script names the file and the place; a model that cannot be used says what
exists; a bad ``--env`` URL says what is wrong with it, and an SSH host that
cannot be reached, or whose key is not trusted, says what to do. Anything else
is a bug and keeps its traceback.
"""

from __future__ import annotations

from pathlib import Path

from pi_durable_tui.ai import FauxScriptError
from pi_durable_tui.app._location import LocationError, RemoteUnavailable
from pi_durable_tui.app.agent import ModelChoiceError
from pi_durable_tui.app.files import NoSession, SessionUnavailable, SettingsError
from pi_durable_tui.storage import StorageCorrupted, StoreLocked
from pi_durable_tui.storage.lock import LOCK_SUFFIX


def lock_holder(store: Path) -> int | None:
    """The PID written in a store's lock file (by the process that took the lock), if any."""
    try:
        text = store.with_name(store.name + LOCK_SUFFIX).read_text("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def _unavailable(error: SessionUnavailable) -> str:
    store, cause, where = error.store, error.cause, error.where
    if isinstance(cause, StoreLocked) and where != str(store):
        # In a database: the refusal names the holder's host and pid itself.
        return (
            f"{cause}; close that pidurable first, or start a new session "
            "(run without -c and --session)"
        )
    if isinstance(cause, StoreLocked):
        pid = lock_holder(store)
        holder = f"process {pid}" if pid is not None else "another process"
        return (
            f"the session {store} is open in {holder}; close that pidurable first, "
            "or start a new session (run without -c and --session)"
        )
    text = str(cause)
    if isinstance(cause, StorageCorrupted):
        if str(store) not in text:
            text = f"the session store {store} is damaged: {text}"
        if "start a new session" not in text:
            text += "; move it aside and start a new session, or restore it from a backup"
        return text
    return f"cannot open the session store {where}: {text}"


def describe_startup_error(error: BaseException) -> str | None:
    """Return the line to print for a startup problem the user can fix, else ``None``."""
    if isinstance(error, SessionUnavailable):
        return _unavailable(error)
    if isinstance(error, NoSession):
        return f'{error}; start one with: pidurable -p "..."'
    if isinstance(error, (SettingsError, FauxScriptError, ModelChoiceError, LocationError)):
        return str(error)
    if isinstance(error, RemoteUnavailable):
        return str(error)
    return None
