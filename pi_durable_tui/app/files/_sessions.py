"""Where sessions live, and finding them (DESIGN.md section 5).

``$PIDURABLE_HOME`` (default ``~/.pidurable``) holds
``sessions/<first 24 hex of sha256(realpath(cwd))>/<13-digit ms timestamp>-<uuid>/session.sqlite``
(for tools over SSH, of the ``ssh://`` URL instead of the real path).
"Newest" is the lexicographically last directory name of that pattern (the
timestamp leads, so it is also the most recently created). Listing a directory's
sessions reads only directory entries and file sizes, plus, for the picker, the
first user message from each session's ``title.txt`` when present.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from pi_durable_tui.app._view import SessionInfo

STORE_NAME = "session.sqlite"
TITLE_NAME = "title.txt"
FAUX_SCRIPT_NAME = "faux-script.txt"
ENV_NAME = "env.txt"
"""Beside a session's store: the ``ssh://`` URL its tools run at, when remote."""
_SESSION_DIR = re.compile(r"^\d{13}-[0-9a-f-]{36}$")


class NoSession(LookupError):
    """No stored session matches what was asked for."""


class SessionUnavailable(Exception):
    """A session's store exists but cannot be opened (locked by another process, damaged).

    Args:
        store: The store file.
        cause: The storage error.
    """

    def __init__(self, store: Path, cause: Exception) -> None:
        super().__init__(str(cause))
        self.store = store
        self.cause = cause


def home() -> Path:
    """The app's home directory (``$PIDURABLE_HOME`` or ``~/.pidurable``), not created."""
    return Path(os.environ.get("PIDURABLE_HOME") or "~/.pidurable").expanduser()


def cwd_key(cwd: str | os.PathLike[str]) -> str:
    """The first 24 hex digits of sha256 of the real path of ``cwd``.

    A remote location (``ssh://user@host:port/path``, issue 17) is its own key.
    """
    path = os.fspath(cwd)
    real = path if path.startswith("ssh://") else os.path.realpath(path)
    return hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:24]


def sessions_dir(cwd: str | os.PathLike[str]) -> Path:
    """The directory holding the sessions of a working directory."""
    return home() / "sessions" / cwd_key(cwd)


def new_session_path(cwd: str | os.PathLike[str]) -> Path:
    """Create a new session directory for ``cwd`` and return its store path."""
    name = f"{int(time.time() * 1000):013d}-{uuid.uuid4()}"
    directory = sessions_dir(cwd) / name
    directory.mkdir(parents=True, exist_ok=False)
    return directory / STORE_NAME


@dataclass(frozen=True, slots=True)
class StoredSession:
    """A session directory of this working directory."""

    path: Path
    """The store file."""
    created_ms: int
    last_activity_ms: int
    size_bytes: int
    title: str


def list_sessions(cwd: str | os.PathLike[str]) -> list[StoredSession]:
    """The sessions of ``cwd``, newest first."""
    root = sessions_dir(cwd)
    if not root.is_dir():
        return []
    found: list[StoredSession] = []
    for name in sorted(os.listdir(root), reverse=True):
        if not _SESSION_DIR.match(name):
            continue
        directory = root / name
        store = directory / STORE_NAME
        if not store.exists():
            continue
        size = 0
        last = 0.0
        for file in directory.iterdir():
            try:
                stat = file.stat()
            except OSError:
                continue
            size += stat.st_size
            last = max(last, stat.st_mtime)
        title_file = directory / TITLE_NAME
        title = title_file.read_text("utf-8", "replace").strip() if title_file.exists() else ""
        found.append(StoredSession(store, int(name[:13]), int(last * 1000), size, title))
    return found


def session_infos(cwd: str | os.PathLike[str]) -> list[SessionInfo]:
    """The sessions of ``cwd`` as the ``--resume`` picker shows them, newest first."""
    return [
        SessionInfo(str(s.path), s.title, s.last_activity_ms, s.size_bytes)
        for s in list_sessions(cwd)
    ]


def newest_session(cwd: str | os.PathLike[str]) -> Path:
    """The store of the newest session of ``cwd``.

    Raises:
        NoSession: ``No session exists for <cwd>``.
    """
    sessions = list_sessions(cwd)
    if not sessions:
        raise NoSession(f"No session exists for {os.path.realpath(os.fspath(cwd))}")
    return sessions[0].path


def write_title(store: Path, text: str) -> None:
    """Remember a session's first user message for the ``--resume`` picker."""
    title_file = store.parent / TITLE_NAME
    if not title_file.exists():
        line = " ".join(text.split())[:200]
        title_file.write_text(line + "\n", "utf-8")


def remember_faux_script(store: Path, script: str) -> None:
    """Remember the faux script a session runs, so ``--continue`` finds it again."""
    path = store.parent / FAUX_SCRIPT_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(os.path.abspath(script) + "\n", "utf-8")


def remember_env(store: Path, url: str) -> None:
    """Remember the ``ssh://`` URL a session's tools run at, for ``--session`` (issue 17)."""
    (store.parent / ENV_NAME).write_text(url + "\n", "utf-8")


def remembered_env(store: Path) -> str | None:
    """The ``ssh://`` URL a session was started with, if any."""
    try:
        url = (store.parent / ENV_NAME).read_text("utf-8").strip()
    except OSError:
        return None
    return url or None


def remembered_faux_script(store: Path) -> str | None:
    """The faux script a session was started with, if it still exists."""
    try:
        script = (store.parent / FAUX_SCRIPT_NAME).read_text("utf-8").strip()
    except OSError:
        return None
    return script if script and os.path.exists(script) else None
