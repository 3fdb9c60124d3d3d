"""The SQLite store's configuration, schema, migrations, and the checks made at open (R129).

Everything here is synchronous and runs on aiosqlite's worker thread, inside the
single hop that ``SqliteStorage.open`` makes (``configure``): apply the pragmas
(busy timeout, WAL, ``synchronous``, foreign keys, ``wal_autocheckpoint``: 0
unless asked, since ``_checkpoints`` runs them off the commit path), read
each one back and refuse to open if SQLite did not take it (reliability.md 9.1:
the durability promise depends on them), then create or upgrade the schema.

Tables (records are JSON text, parsed on every read; the other columns exist
only to be indexed):

- ``durable_metadata``: one row (``id = 1``) with ``schema_version``,
  ``next_seq`` and ``next_id``: lower bounds of the seq the next commit gets
  and of the mint floor (see "The metadata row" below);
- ``conversations``, ``entries``, ``tasks``, ``submissions``, ``documents``
  (incarnations) and ``document_revisions`` (bases and deltas keyed by document
  and seq). Each keys its records by ID, so the kind that owns an ID (one global
  ID space, R-1.2) is found by looking the ID up in each (``Tables.id_kind``).

Every page a commit touches is a frame in the WAL, so a commit writes only what
the scans need: a one-entry commit writes the entries leaf and the
``entries_by_conversation`` leaf, about 2.2 frames (4.2 with schema version 1,
which also wrote a ``record_ids`` row and the metadata row every time; raw
sqlite3's one-row floor writes 1.1). ``python -m pi_durable_tui.bench storage``
measures it (``sqlite.sustained_commit_1_entry``). Since version 3 revisions are
a ``WITHOUT ROWID`` table (their key's B-tree holds them: one page less per
revision) with an index of bases only (a delta writes one page); and a task or
submission write sets an indexed column only where it changed (``Tables.write``):
an upsert rewrites the index of every column it sets, even to the same value.

The metadata row. A commit must leave its seq on disk, and the mint floor must
end up above every committed ID (R-1.2, R129). A commit that stores an entry
with an ID above every stored entry's leaves both in that entry's row: the entry
with the highest ID carries the newest seq, and every table's highest ID bounds
the IDs. Only other commits write the metadata row. At open, ``read_metadata``
takes the larger of the row's values and of those the newest rows say: one
lookup at the right edge of each table's key, never a scan of history. IDs
minted but never committed may be minted again after a reopen; nothing stored
names them. REMINDER: ``Tables.write`` skips the row exactly when the newest
entry row will carry the seq; change both together.

Indexes follow the scans: entries and head markers by ``(conversation_id, id)``
(fork-aware scans read one index range per fork-chain member), tasks by status,
kind and conversation, submissions by conversation, by status and by
``(conversation_id, request_id)``, documents by
address and by scope, revisions by ``(document_id, seq)`` and their bases by
``(document_id, seq)`` (a partial index) so the newest base before a point is one
lookup.

Foreign keys are declared (deferred to COMMIT, since a batch may write a child
before its parent) and enforced as a second line of defence behind
``prepare_batch``; crash tests can then run ``foreign_key_check``.

Versions: ``MIGRATIONS[i]`` takes a store from version ``i`` to ``i + 1``; a new
file gets all of them, an older store the missing ones, in one transaction
together with the new ``schema_version``. A store newer than ``SCHEMA_VERSION``
is refused (``UnsupportedSchema``) rather than misread.

Checks at open are kept proportional to nothing: reading the schema, the
metadata row, ``PRAGMA quick_check(durable_metadata)``, and the newest row of
each record table (``NEWEST_ROWS``). A full
``quick_check`` is linear in the file (66 ms for 100,000 entries here) and would
make reopen proportional to history, which DESIGN.md section 4 forbids; run
``SqliteStorage.check_integrity`` for that.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pi_durable_tui.storage.errors import StorageCorrupted, StorageError, StoreBusy
from pi_durable_tui.storage.records import FIRST_MINTED_ID

Synchronous = Literal["NORMAL", "FULL"]
_SYNCHRONOUS_LEVELS = {"NORMAL": 1, "FULL": 2}


class UnsupportedSchema(StorageError):
    """The store was written by a newer pidurable, with a schema this one does not know."""


@dataclass(frozen=True, slots=True)
class Migration:
    """One step of the schema: its purpose and the statements that make it."""

    description: str
    statements: tuple[str, ...]


_DEFERRED = "DEFERRABLE INITIALLY DEFERRED"

MIGRATIONS: list[Migration] = [
    Migration(
        "initial schema",
        (
            """CREATE TABLE durable_metadata (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                schema_version INTEGER NOT NULL,
                next_seq INTEGER NOT NULL,
                next_id INTEGER NOT NULL
            )""",
            f"INSERT INTO durable_metadata VALUES (1, 0, 1, {FIRST_MINTED_ID})",
            """CREATE TABLE record_ids (
                id INTEGER PRIMARY KEY,
                kind TEXT NOT NULL
            )""",
            f"""CREATE TABLE conversations (
                id INTEGER PRIMARY KEY,
                parent_id INTEGER REFERENCES conversations (id) {_DEFERRED},
                parent_at INTEGER,
                owner_conversation_id INTEGER,
                owner_task_id INTEGER,
                record TEXT NOT NULL
            )""",
            "CREATE INDEX conversations_by_owner_conversation"
            " ON conversations (owner_conversation_id, id)"
            " WHERE owner_conversation_id IS NOT NULL",
            "CREATE INDEX conversations_by_owner_task ON conversations (owner_task_id, id)"
            " WHERE owner_task_id IS NOT NULL",
            f"""CREATE TABLE entries (
                id INTEGER PRIMARY KEY,
                conversation_id INTEGER NOT NULL REFERENCES conversations (id) {_DEFERRED},
                seq INTEGER NOT NULL,
                head INTEGER,
                record TEXT NOT NULL
            )""",
            "CREATE INDEX entries_by_conversation ON entries (conversation_id, id)",
            "CREATE INDEX entry_heads_by_conversation ON entries (conversation_id, id)"
            " WHERE head IS NOT NULL",
            f"""CREATE TABLE tasks (
                id INTEGER PRIMARY KEY,
                conversation_id INTEGER NOT NULL REFERENCES conversations (id) {_DEFERRED},
                kind TEXT NOT NULL,
                status TEXT NOT NULL,
                abort_requested INTEGER NOT NULL,
                background INTEGER NOT NULL,
                record TEXT NOT NULL
            )""",
            "CREATE INDEX tasks_by_status ON tasks (status, id)",
            "CREATE INDEX tasks_by_kind ON tasks (kind, id)",
            "CREATE INDEX tasks_by_conversation ON tasks (conversation_id, id)",
            f"""CREATE TABLE submissions (
                id INTEGER PRIMARY KEY,
                conversation_id INTEGER NOT NULL REFERENCES conversations (id) {_DEFERRED},
                type TEXT NOT NULL,
                status TEXT NOT NULL,
                request_id TEXT,
                record TEXT NOT NULL
            )""",
            "CREATE INDEX submissions_by_conversation ON submissions (conversation_id, id)",
            "CREATE INDEX submissions_by_status ON submissions (status, conversation_id, id)",
            # Not UNIQUE: within one batch a submission may take a request ID that
            # another one releases later in write order; prepare_batch guarantees that
            # at most one committed record holds each (conversation, request ID).
            "CREATE INDEX submissions_by_request ON submissions (conversation_id, request_id)"
            " WHERE request_id IS NOT NULL",
            """CREATE TABLE documents (
                id INTEGER PRIMARY KEY,
                kind TEXT NOT NULL,
                scope_kind TEXT NOT NULL,
                scope_id INTEGER,
                key TEXT,
                created_at INTEGER NOT NULL,
                retired_at INTEGER,
                record TEXT NOT NULL
            )""",
            "CREATE INDEX documents_by_address"
            " ON documents (kind, scope_kind, scope_id, key, created_at)",
            "CREATE INDEX documents_by_scope_kind ON documents (scope_kind, scope_id, id)",
            f"""CREATE TABLE document_revisions (
                document_id INTEGER NOT NULL REFERENCES documents (id) {_DEFERRED},
                seq INTEGER NOT NULL,
                kind TEXT NOT NULL CHECK (kind IN ('base', 'delta')),
                version INTEGER NOT NULL,
                content TEXT NOT NULL,
                PRIMARY KEY (document_id, seq)
            )""",
            "CREATE INDEX document_revisions_by_kind"
            " ON document_revisions (document_id, kind, seq)",
        ),
    ),
    Migration(
        # Every record table is keyed by ID, so the registry duplicated what they hold
        # and cost every commit one more page (a WAL frame) per new ID.
        "drop record_ids: the record tables' keys say which kind owns an ID",
        ("DROP TABLE record_ids",),
    ),
    Migration(
        # A rowid table keyed by (document_id, seq) is two B-trees, the rows and the
        # key's index, so every revision written cost one more page (a WAL frame) than
        # the row itself; without a rowid the key's B-tree holds the row. The newest
        # base before a point is all the kind index answers, so it holds bases only,
        # and a delta (most revisions: streamed text, tool output) writes one page.
        "document_revisions without rowid, and an index of bases only",
        (
            f"""CREATE TABLE document_revisions_keyed (
                document_id INTEGER NOT NULL REFERENCES documents (id) {_DEFERRED},
                seq INTEGER NOT NULL,
                kind TEXT NOT NULL CHECK (kind IN ('base', 'delta')),
                version INTEGER NOT NULL,
                content TEXT NOT NULL,
                PRIMARY KEY (document_id, seq)
            ) WITHOUT ROWID""",
            "INSERT INTO document_revisions_keyed (document_id, seq, kind, version, content)"
            " SELECT document_id, seq, kind, version, content FROM document_revisions",
            "DROP TABLE document_revisions",
            "ALTER TABLE document_revisions_keyed RENAME TO document_revisions",
            "CREATE INDEX document_revision_bases"
            " ON document_revisions (document_id, seq) WHERE kind = 'base'",
        ),
    ),
]
"""``MIGRATIONS[i]`` upgrades a store from schema version ``i`` to ``i + 1``.

REMINDER: append only. Never edit a released migration: stores in the field were
made by it. Statements run one by one inside a transaction (``executescript``
would commit first), so a failing migration leaves the store at its old version.
"""


def schema_version() -> int:
    """Return the schema version this code writes: the number of migrations."""
    return len(MIGRATIONS)


@dataclass(frozen=True, slots=True)
class Metadata:
    """What a store's next commit starts from: schema version, next seq, mint floor."""

    schema_version: int
    next_seq: int
    next_id: int
    newest_entry: int = 0
    """The highest stored entry ID (0: none)."""


def damaged(path: Path, error: sqlite3.Error) -> StorageCorrupted:
    """Return the error that says a store file is damaged, and what to do about it."""
    return StorageCorrupted(
        f"SQLite store {path} is damaged or not a SQLite database ({error}); "
        "move it aside (with its -wal and -shm files) and start a new session, "
        "or restore it from a backup"
    )


def is_damage(error: sqlite3.Error) -> bool:
    """Whether an sqlite3 error reports a damaged file rather than a passing condition."""
    return _code(error) in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def _metadata_row(conn: sqlite3.Connection) -> tuple[int, int, int]:
    row = conn.execute(
        "SELECT schema_version, next_seq, next_id FROM durable_metadata WHERE id = 1"
    ).fetchone()
    if row is None:
        raise StorageCorrupted("Durable SQLite metadata is missing")
    return row


NEWEST_ROWS = (
    "SELECT (SELECT id FROM entries ORDER BY id DESC LIMIT 1),"
    " (SELECT seq FROM entries ORDER BY id DESC LIMIT 1),"
    # REMINDER: max() of several values is NULL if any is; an empty table gives NULL.
    " max(coalesce((SELECT max(id) FROM conversations), 0),"
    " coalesce((SELECT max(id) FROM tasks), 0),"
    " coalesce((SELECT max(id) FROM submissions), 0),"
    " coalesce((SELECT max(id) FROM documents), 0))"
)
"""The newest entry (ID and seq) and the highest ID of every other record table: each
a lookup at the right edge of a key, whatever the store's size."""


def read_metadata(conn: sqlite3.Connection) -> Metadata:
    """Read the metadata row, raised to what the newest rows say (module docstring).

    Raises:
        StorageCorrupted: ``Durable SQLite metadata is missing`` when the row is gone.
    """
    version, next_seq, next_id = _metadata_row(conn)
    entry, entry_seq, other = conn.execute(NEWEST_ROWS).fetchone()
    newest = max(entry or 0, other or 0)
    return Metadata(
        version,
        max(next_seq, (entry_seq or 0) + 1),
        max(next_id, newest + 1),
        entry or 0,
    )


def _tables(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ).fetchall()
    return {name for (name,) in rows}


def prepare_schema(conn: sqlite3.Connection, path: Path) -> Metadata:
    """Create or upgrade the schema as needed and return the metadata row.

    Runs with the connection in autocommit mode; any migration happens in one
    ``BEGIN IMMEDIATE`` transaction.

    Args:
        conn: The store's connection, on its own thread.
        path: The store's path, for error messages.

    Returns:
        The metadata after any migration.

    Raises:
        StorageCorrupted: The metadata is missing or damaged, or the file holds
            tables that are not a pidurable store.
        UnsupportedSchema: The store's schema is newer than this code's.
        StorageError: A migration failed; the store was left as it was.
    """
    tables = _tables(conn)
    if not tables:
        version = 0
    elif "durable_metadata" not in tables:
        raise StorageCorrupted(
            f"Durable SQLite metadata is missing: {path} holds tables that are not a "
            "pidurable store; open another path"
        )
    else:
        check = conn.execute("PRAGMA quick_check(durable_metadata)").fetchall()
        if check != [("ok",)]:
            problems = "; ".join(str(row[0]) for row in check[:5])
            raise StorageCorrupted(
                f"SQLite store {path} is damaged ({problems}); move it aside and start a "
                "new session, or restore it from a backup"
            )
        version = _metadata_row(conn)[0]
    target = schema_version()
    if version > target:
        raise UnsupportedSchema(
            f"SQLite store {path} has schema version {version}, newer than version "
            f"{target} that this pidurable understands; upgrade pidurable to open it"
        )
    if version < target:
        _migrate(conn, path, version, target)
    return read_metadata(conn)


def _migrate(conn: sqlite3.Connection, path: Path, version: int, target: int) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        for step in range(version, target):
            migration = MIGRATIONS[step]
            try:
                for statement in migration.statements:
                    conn.execute(statement)
            except sqlite3.Error as error:
                raise StorageError(
                    f"Migrating SQLite store {path} from schema version {step} to "
                    f"{step + 1} ({migration.description}) failed: {error}; "
                    "the store was left unchanged"
                ) from error
        conn.execute("UPDATE durable_metadata SET schema_version = ? WHERE id = 1", (target,))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


CREATING_SUFFIX = ".creating"
"""Beside a store being created: the file it is built in, renamed over the store when whole."""


def create(path: Path) -> None:
    """Create the store file at ``path`` atomically: its path holds a whole store, or nothing.

    The schema is built in ``<path>.creating`` (left over by a creation that was
    killed: built again), flushed to disk and renamed to ``path``. So an empty
    or half-made file at a store's path was never made by an open that stopped
    midway: it is reported (``StorageCorrupted``), never made into a store. The
    caller holds the store's lock.
    """
    building = path.with_name(path.name + CREATING_SUFFIX)
    building.unlink(missing_ok=True)
    try:
        conn = sqlite3.connect(building, isolation_level=None)
        try:
            conn.execute("PRAGMA synchronous = OFF")  # one fsync below covers the file
            _migrate(conn, path, 0, schema_version())
        finally:
            conn.close()
        descriptor = os.open(building, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.replace(building, path)
    except BaseException:
        building.unlink(missing_ok=True)  # a full disk, a signal: nothing is left behind
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # the rename itself survives a crash
    finally:
        os.close(directory)


def configure(
    conn: sqlite3.Connection,
    path: Path,
    synchronous: Synchronous,
    wal_autocheckpoint: int | None,
    busy_timeout_ms: int,
    open_timeout_ms: int | None = None,
) -> Metadata:
    """Apply and assert the connection's configuration, then prepare the schema.

    Until the schema is ready and the write lock was claimed once, another
    client's lock is waited for ``open_timeout_ms`` (default: ``busy_timeout_ms``);
    from then on, ``busy_timeout_ms``.

    Raises:
        StoreBusy: Another SQLite client held the write lock all that time.
        StorageCorrupted: The file is damaged or not a pidurable store.
    """
    opening_ms = busy_timeout_ms if open_timeout_ms is None else open_timeout_ms
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(opening_ms)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {synchronous}")
        conn.execute("PRAGMA foreign_keys = ON")
        # None: checkpoints are ``_checkpoints``'s, off the commit path; SQLite's own is off.
        pages = 0 if wal_autocheckpoint is None else int(wal_autocheckpoint)
        conn.execute(f"PRAGMA wal_autocheckpoint = {pages}")
        expected: dict[str, object] = {
            "journal_mode": "wal",
            "synchronous": _SYNCHRONOUS_LEVELS[synchronous],
            "foreign_keys": 1,
            "busy_timeout": int(opening_ms),
            "wal_autocheckpoint": pages,
        }
        for pragma, want in expected.items():
            got = conn.execute(f"PRAGMA {pragma}").fetchone()[0]
            if got != want:
                hint = "; keep the store on a local filesystem" if pragma == "journal_mode" else ""
                raise StorageError(
                    f"SQLite store {path}: PRAGMA {pragma} is {got!r}, not {want!r}{hint}"
                )
        metadata = prepare_schema(conn, path)
        # REMINDER: the single-writer lock keeps other pidurables out, not other
        # SQLite clients: claim the write lock once, within the open's timeout, so
        # one that holds it is found here rather than by the first commit.
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        return metadata
    except sqlite3.DatabaseError as error:
        if is_damage(error):
            raise damaged(path, error) from error
        if _code(error) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            raise StoreBusy(
                f"SQLite store {path} is locked by another SQLite client "
                f"(still after {opening_ms / 1000:g} s)"
            ) from error
        raise


def _code(error: sqlite3.Error) -> int | None:
    code = getattr(error, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


def checkpoint(conn: sqlite3.Connection) -> None:
    """Checkpoint the whole WAL into the database and truncate it (done at close)."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()


def integrity_problems(conn: sqlite3.Connection) -> list[str]:
    """Run the full ``integrity_check`` and ``foreign_key_check``; return the problems."""
    problems = [row[0] for row in conn.execute("PRAGMA integrity_check").fetchall()]
    if problems == ["ok"]:
        problems = []
    for table, rowid, parent, _ in conn.execute("PRAGMA foreign_key_check").fetchall():
        problems.append(f"foreign key: {table} row {rowid} names a missing {parent}")
    return problems
