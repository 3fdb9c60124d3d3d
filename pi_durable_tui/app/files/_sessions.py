"""Where sessions live, and finding them (DESIGN.md sections 5 and 8).

``$PIDURABLE_HOME`` (default ``~/.pidurable``) holds
``sessions/<first 24 hex of sha256(realpath(cwd))>/<13-digit ms timestamp>-<uuid>/session.sqlite``
(for tools over SSH, of the ``ssh://`` URL instead of the real path).
"Newest" is the lexicographically last directory name of that pattern (the
timestamp leads, so it is also the most recently created). Listing a directory's
sessions reads only directory entries and file sizes, plus, for the picker, the
first user message from each session's ``title.txt`` and the name ``/name`` gave
it from ``name.txt``, when present. The name itself is committed in the store
(``app.screen``'s ``pi.session`` document); ``name.txt`` is its mirror for the
listing, which opens no store (another process may hold one), rewritten from the
store whenever it is opened, so a crash between the two heals at the next open.

With a database (``PIDURABLE_DATABASE_URL``, or ``"database"`` in the user's
settings: ``database_url``), sessions live in PostgreSQL instead, keyed the same
way: the store of a session is named ``<cwd key>/<timestamp>-<uuid>``
(``store_name``), so every machine with the same URL and the same working
directory path finds the same sessions. Listing reads the database's store rows
(their label is the title); the session directory in the home stays, for what
is this machine's own (the log, a remembered faux script, a demo's marker, the
name's mirror: another machine's picker shows the name once it opened the session), and
its ``session.sqlite`` path stands for the session in the code (``open_store``
knows which it is). A session file made before the URL was set still opens from
its file when named; ``-c`` and ``-r`` list the database's.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import os
import re
import shutil
import time
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pi_durable_tui.app._view import SessionInfo
from pi_durable_tui.app.files._home import home
from pi_durable_tui.app.files._settings_files import user_database_url

if TYPE_CHECKING:
    from pi_durable_tui.storage import Storage

T = TypeVar("T")

STORE_NAME = "session.sqlite"
TITLE_NAME = "title.txt"
NAME_NAME = "name.txt"
"""Beside a session's store: the mirror of the name ``/name`` committed in it."""
FAUX_SCRIPT_NAME = "faux-script.txt"
ENV_NAME = "env.txt"
"""Beside a session's store: the ``ssh://`` URL its tools run at, when remote."""
_SESSION_DIR = re.compile(r"^\d{13}-[0-9a-f-]{36}$")
_CWD_KEY = re.compile(r"^[0-9a-f]{24}$")
DATABASE_ENV = "PIDURABLE_DATABASE_URL"
"""The PostgreSQL URL sessions live in; wins over ``"database"`` in the user's settings."""


class NoSession(LookupError):
    """No stored session matches what was asked for."""


class SessionPathError(ValueError):
    """``--session PATH`` names no place for a store: a directory, or a missing directory's file.

    A store is made at a given path only in a directory that exists: a typo never
    creates directories (``/nonexistent/`` included).
    """


class SessionUnavailable(Exception):
    """A session's store exists but cannot be opened (locked by another process, damaged).

    Args:
        store: The store file.
        cause: The storage error.
    """

    def __init__(self, store: Path, cause: Exception, where: str | None = None) -> None:
        super().__init__(str(cause))
        self.store = store
        self.cause = cause
        self.where = str(store) if where is None else where
        """How messages name the session: its file, or its name in the database."""


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


def discard_new_session(store: Path) -> None:
    """Remove a session that never started: its directory, and the empty ones above it.

    A start refused at opening (a full disk, a damaged script) leaves nothing in
    the home it did not find there; directories holding anything else stay.
    """
    shutil.rmtree(store.parent, ignore_errors=True)
    top = home()
    for directory in store.parent.parents:
        if directory == top.parent or not directory.is_relative_to(top):
            return
        try:
            directory.rmdir()  # only when empty
        except OSError:
            return


@dataclass(frozen=True, slots=True)
class StoredSession:
    """A session directory of this working directory."""

    path: Path
    """The store file."""
    created_ms: int
    last_activity_ms: int
    size_bytes: int
    title: str
    name: str = ""
    """The name ``/name`` gave it (its mirror, ``name.txt``), or empty."""


def database_url() -> str | None:
    """The database sessions live in (``None``: SQLite files in the home).

    Raises:
        SettingsError: The user's settings file is malformed.
    """
    return os.environ.get(DATABASE_ENV) or user_database_url()


def _in_database(store: Path) -> str | None:
    """The URL of the database holding the session ``store`` stands for, if it is there."""
    url = database_url()
    if url is None or store.exists() or store.name != STORE_NAME:
        return None
    directory, key = store.parent, store.parent.parent
    if _SESSION_DIR.match(directory.name) and _CWD_KEY.match(key.name):
        return url
    return None


def store_name(store: Path) -> str:
    """The name in the database of the session ``store`` stands for: ``<cwd key>/<dir>``."""
    return f"{store.parent.parent.name}/{store.parent.name}"


def describe_store(store: Path) -> str:
    """How messages name a session: its name when it lives in the database, else its file."""
    return store_name(store) if _in_database(store) else str(store)


def resolve_session(text: str, cwd: str | os.PathLike[str], *, existing: bool = False) -> Path:
    """The store ``--session`` names.

    With a database, a session ID (``<cwd key>/<timestamp>-<uuid>``, or
    ``<timestamp>-<uuid>`` of this directory) names a session in it; anything
    else, and everything without one, is a SQLite file.

    Args:
        text: What ``--session`` was given.
        cwd: The working directory (the key of its sessions in a database).
        existing: The session must exist already (``export``): a missing file is
            ``NoSession``, never a new store.

    Raises:
        SessionPathError: The file path is a directory, or its directory does not exist.
        NoSession: ``existing`` and there is no store at that path.
    """
    if database_url() is not None:
        if _SESSION_DIR.match(text):
            return sessions_dir(cwd) / text / STORE_NAME
        key, _, name = text.partition("/")
        if _CWD_KEY.match(key) and _SESSION_DIR.match(name):
            return home() / "sessions" / key / name / STORE_NAME
    path = Path(text).expanduser().resolve()
    if path.is_dir():
        raise SessionPathError(
            f"--session {text} is a directory, not a session store; name the store file "
            f"(such as {os.path.join(text, STORE_NAME)})"
        )
    if existing and not path.exists():
        raise NoSession(f"No session store at {path}; `pidurable -r` lists this directory's")
    if not path.parent.is_dir():
        raise SessionPathError(
            f"--session {text}: the directory {path.parent} does not exist; create it "
            "first, or name a store in an existing directory"
        )
    return path


async def open_store(store: Path) -> Storage:
    """Open the store of a session: its SQLite file, or its store in the database.

    Raises:
        StorageError: It is locked, damaged, or its server cannot be reached.
    """
    # REMINDER: the storage layer is imported here, not at the top: ``pidurable -c``
    # finds its session before the first paint, and must not load storage for it.
    from pi_durable_tui.storage import SqliteStorage

    url = _in_database(store)
    if url is None:
        return await SqliteStorage.open(store)
    from pi_durable_tui.storage.postgres import PostgresStorage

    store.parent.mkdir(parents=True, exist_ok=True)  # this machine's files of the session
    return await PostgresStorage.open(url, store_name(store))


def _blocking(work: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to its end from synchronous code, inside a running loop or not."""
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="pidurable-list") as pool:
        return pool.submit(asyncio.run, work).result()


def _database_sessions(url: str, cwd: str | os.PathLike[str], limit: int) -> list[StoredSession]:
    from pi_durable_tui.storage import StorageError
    from pi_durable_tui.storage.postgres import PostgresStorage, redact

    key = cwd_key(cwd)
    try:
        summaries = _blocking(
            PostgresStorage.list_stores(url, f"{key}/", limit=limit, sizes=limit > 1)
        )
    except StorageError as error:
        raise SessionUnavailable(sessions_dir(cwd), error, redact(url)) from error
    found = []
    for summary in summaries:
        name = summary.name.partition("/")[2]
        if _SESSION_DIR.match(name):
            store = home() / "sessions" / key / name / STORE_NAME
            created = int(name[:13])
            last = max(created, summary.opened_ms)
            title = summary.label or ""
            found.append(
                StoredSession(store, created, last, summary.size_bytes, title, read_name(store))
            )
    return found


def list_sessions(cwd: str | os.PathLike[str], *, limit: int = 1000) -> list[StoredSession]:
    """The sessions of ``cwd``, newest first (in the database, when there is one).

    Raises:
        SessionUnavailable: The database cannot be reached.
    """
    url = database_url()
    if url is not None:
        return _database_sessions(url, cwd, limit)
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
        found.append(
            StoredSession(store, int(name[:13]), int(last * 1000), size, title, read_name(store))
        )
    return found


def session_infos(cwd: str | os.PathLike[str]) -> list[SessionInfo]:
    """The sessions of ``cwd`` as the ``--resume`` picker shows them, newest first."""
    return [
        SessionInfo(str(s.path), s.title, s.last_activity_ms, s.size_bytes, s.name)
        for s in list_sessions(cwd)
    ]


def newest_session(cwd: str | os.PathLike[str]) -> Path:
    """The store of the newest session of ``cwd``.

    Raises:
        NoSession: ``No session exists for <cwd>``.
        SessionUnavailable: Its store is a directory (SQLite would only say "unable
            to open database file", and ``--session``'s advice does not fit a store
            pidurable chose).
    """
    sessions = list_sessions(cwd, limit=1)
    if not sessions:
        raise NoSession(f"No session exists for {os.path.realpath(os.fspath(cwd))}")
    store = sessions[0].path
    if store.is_dir():
        from pi_durable_tui.storage import StorageCorrupted  # loaded only on this rare path

        cause = StorageCorrupted(
            f"the session store {store} is a directory, not a SQLite file; move it aside "
            "and start a new session (run without -c), or restore the file from a backup"
        )
        raise SessionUnavailable(store, cause)
    return store


async def remember_title(store: Path, storage: Storage, text: str) -> None:
    """Remember a session's first user message for the ``--resume`` picker.

    In the database it is the store's label; beside a file, ``title.txt``.
    """
    # A PostgreSQL store has ``set_label``; importing its class here would load asyncpg
    # for every SQLite session.
    set_label = getattr(storage, "set_label", None)
    if set_label is not None:
        await set_label(text)
    else:
        write_title(store, text)


def write_title(store: Path, text: str) -> None:
    """Remember a session's first user message beside its file, for the ``--resume`` picker."""
    title_file = store.parent / TITLE_NAME
    if not title_file.exists():
        line = " ".join(text.split())[:200]
        title_file.write_text(line + "\n", "utf-8")


def read_name(store: Path) -> str:
    """The mirror of a session's name beside its store (empty when it has none)."""
    try:
        return (store.parent / NAME_NAME).read_text("utf-8", "replace").strip()
    except OSError:
        return ""


def write_name(store: Path, name: str) -> None:
    """Mirror a session's committed name beside its store, for the ``--resume`` picker.

    Written whole to a temporary file, then renamed over the old one: a crash
    leaves the old name or the new one, never a torn line.
    """
    target = store.parent / NAME_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{NAME_NAME}.{os.getpid()}")
    partial.write_text(name + "\n", "utf-8")
    os.replace(partial, target)


def session_dir_id(store: Path) -> str:
    """A session's ID (``<13-digit ms>-<uuid>``, its directory); empty for a store named by path."""
    name = store.parent.name
    return name if store.name == STORE_NAME and _SESSION_DIR.match(name) else ""


def session_created_ms(store: Path) -> int | None:
    """When a session was created (its ID's timestamp); ``None`` for a store named by path."""
    session_id = session_dir_id(store)
    return int(session_id[:13]) if session_id else None


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
