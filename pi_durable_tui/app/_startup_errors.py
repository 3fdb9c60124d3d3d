"""One clear line for each problem that stops the app: at its start, or when its store fails.

Bad input must say what was wrong and what to do, and lose nothing: a malformed
settings file names the file and the key; a locked store names the path and the
process holding it (the PID its lock file holds); a damaged store says so, where
it is, and how to go on; a missing session says how to start one; a malformed
faux script names the file and the place; a model that cannot be used says what
exists; a bad ``--env`` URL says what is wrong with it, and an SSH host that
cannot be reached, or whose key is not trusted, says what to do; a ``--session``
path that is a directory, or in a directory that does not exist, says so.

The disk under the store (issue 12): a full disk, a read-only file system or
directory, and a store that another SQLite client holds locked are told apart
(``disk_problem``: the errno of an ``OSError``, the code of a ``sqlite3`` error,
anywhere in the chain of causes) and said in words, with what to do: at start
(``describe_startup_error``, nothing created) and when a commit fails in the
middle of a run (``describe_run_failure``: SQLite's transaction left the store as
its last commit did, so the session continues once the cause is gone; on the
screen, ``describe_store_failure``, which has a line for any storage error). A store
another SQLite client holds names the processes that have the file open (read
from ``/proc``, where there is one). Anything else is a bug and keeps its
traceback.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from pi_durable_tui.ai import FauxScriptError
from pi_durable_tui.app._location import LocationError, RemoteUnavailable
from pi_durable_tui.app.agent import ModelChoiceError
from pi_durable_tui.app.files import (
    NoSession,
    SessionPathError,
    SessionUnavailable,
    SettingsError,
    home,
)
from pi_durable_tui.kernel import SessionFailed
from pi_durable_tui.storage import StorageCorrupted, StoreBusy, StoreLocked
from pi_durable_tui.storage.lock import holder_pid


def lock_holder(store: Path) -> int | None:
    """The PID written in a store's lock file (by the process that took the lock), if any."""
    return holder_pid(store)


DiskProblem = Literal["full", "read-only", "busy"]
"""What keeps a store from being written: a full disk, no write access, another client's lock."""

_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_READ_ONLY = {errno.EROFS, errno.EACCES, errno.EPERM}
_SQLITE = {
    sqlite3.SQLITE_FULL: "full",
    sqlite3.SQLITE_READONLY: "read-only",
    sqlite3.SQLITE_PERM: "read-only",
    sqlite3.SQLITE_BUSY: "busy",
    sqlite3.SQLITE_LOCKED: "busy",
}
_WORDS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EFBIG: "the file is too large for this file system",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
}


def _causes(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        cause = getattr(current, "cause", None)
        current = cause if isinstance(cause, BaseException) else current.__cause__


def disk_problem(error: BaseException) -> DiskProblem | None:
    """What in ``error``'s chain of causes keeps the store from being written, if anything."""
    for cause in _causes(error):
        if isinstance(cause, StoreBusy):
            return "busy"
        if isinstance(cause, OSError) and cause.errno in _FULL:
            return "full"
        if isinstance(cause, OSError) and cause.errno in _READ_ONLY:
            return "read-only"
        if isinstance(cause, sqlite3.Error):
            code = getattr(cause, "sqlite_errorcode", None)
            problem = _SQLITE.get(code & 0xFF) if code is not None else None
            if problem is not None:
                return problem  # type: ignore[return-value]
    return None


def _holders(store: Path) -> str:
    """`` (process 12 (sqlite3) has it open)``: the other processes with the file open."""
    names = {os.fspath(store), os.fspath(store) + "-wal"}
    found: list[str] = []
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return ""  # no /proc here: nothing to name
    for pid in pids:
        if int(pid) == os.getpid():
            continue
        try:
            links = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
            if links & names:
                command = Path(f"/proc/{pid}/comm").read_text().strip()
                found.append(f"{pid} ({command})")
        except OSError:
            continue  # gone, or not ours to read
    if not found:
        return ""
    noun = "process" if len(found) == 1 else "processes"
    verb = "has" if len(found) == 1 else "have"
    return f" ({noun} {', '.join(found[:5])} {verb} it open)"


def _disk_line(problem: DiskProblem, store: Path, where: str) -> str:
    if problem == "full":
        return f"the disk holding the session store {where} is full"
    if problem == "busy":
        return f"the session store {where} is locked by another SQLite client{_holders(store)}"
    return f"the session store {where} cannot be written (read-only file system or no permission)"


def _os_line(error: OSError) -> str:
    what = _WORDS.get(error.errno or 0, error.strerror or str(error))
    line = f"cannot write {error.filename}: {what}" if error.filename else f"cannot write: {what}"
    if error.errno in _FULL:
        return line + "; free some space and run again"
    if error.errno in _READ_ONLY:
        inside_home = os.fspath(error.filename or home()).startswith(os.fspath(home()))
        if inside_home:
            return line + "; make it writable, or set PIDURABLE_HOME to a writable directory"
        return line + "; make it writable, or name a store in a writable directory"
    return line


def describe_run_failure(error: BaseException, store: Path, where: str, hint: str) -> str | None:
    """The line for a run whose store could not be written (``None``: a bug, not the disk).

    Args:
        error: What the run raised (a ``SessionFailed`` poisoned by the commit).
        store: The session's store file.
        where: How messages name the session.
        hint: The command that continues the session.
    """
    if not any(isinstance(cause, SessionFailed) for cause in _causes(error)):
        return None
    problem = disk_problem(error)
    if problem is None:
        return None
    return _nothing_lost(_disk_line(problem, store, where), _THEN[problem], hint)


def describe_store_failure(error: BaseException, store: Path, where: str, hint: str) -> str:
    """The line a screen shows when its store failed under it (issue 12): never a traceback.

    What failed (the disk's problem in words, else the innermost error), that
    nothing committed was lost (SQLite's transaction left the store as its last
    commit did), and what to do: quit, fix the cause, continue.

    Args:
        error: What poisoned the session (a ``SessionFailed`` and its causes).
        store: The session's store file.
        where: How messages name the session.
        hint: The command that continues the session.
    """
    problem = disk_problem(error)
    if problem is not None:
        return _nothing_lost(_disk_line(problem, store, where), f"quit, {_THEN[problem]}", hint)
    innermost = list(_causes(error))[-1]
    text = " ".join(str(innermost).split())[:160] or type(innermost).__name__
    what = f"writing the session store {where} failed ({type(innermost).__name__}: {text})"
    return _nothing_lost(what, "quit", hint)


_THEN = {"full": "free some space", "busy": "close that client", "read-only": "fix that"}


def _nothing_lost(what: str, then: str, hint: str) -> str:
    return f"{what}; nothing committed was lost: {then}, then `{hint}` continues the session"


def _unavailable(error: SessionUnavailable) -> str:
    store, cause, where = error.store, error.cause, error.where
    problem = disk_problem(cause)
    if problem is not None:
        then = {
            "full": "free some space and run again",
            "busy": "end its transaction or close it, then run again",
            "read-only": "make it writable, or start a session elsewhere",
        }
        return f"{_disk_line(problem, store, where)}; {then[problem]}"
    if isinstance(cause, StoreLocked) and where != str(store):
        # In a database: the refusal names the holder's host and pid itself.
        return (
            f"{cause}; close that pidurable first, or start a new session "
            "(run without -c and --session)"
        )
    if isinstance(cause, StoreLocked):
        pid = cause.pid if cause.pid is not None else lock_holder(store)
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
    if isinstance(error, (RemoteUnavailable, SessionPathError)):
        return str(error)
    if isinstance(error, OSError) and (
        error.filename is not None or error.errno in _FULL | _READ_ONLY
    ):
        return _os_line(error)
    return None
