"""The PostgreSQL store's schema, its migrations, the store row and the checks made at open.

Many stores share one database. A store is a name (the product's session ID,
for example), and every table lives in the PostgreSQL schema ``pidurable``
(``SCHEMA``), so the store shares a database with other applications without
touching their tables:

- ``schema_version``: one row, the version the tables are at (``MIGRATIONS``);
- ``stores``: one row per store: ``id`` (a small serial: every other table's
  first key column, and the key of the store's advisory lock), ``name``,
  ``next_seq`` and ``next_id`` (the metadata row of the SQLite store: lower
  bounds of the next seq and of the mint floor), ``holder`` (who took the
  single-writer lock last, for the refusal message: ``_lock``) and ``created``;
- ``conversations``, ``entries``, ``tasks``, ``submissions``, ``documents`` and
  ``document_revisions``: the SQLite store's tables with the same columns and
  indexes, each keyed by ``(store, id)`` (revisions by ``(store, document_id,
  seq)``); records are JSON text.

Why a store column rather than a schema per store: a session is created at
every ``pidurable`` start, and a team's database holds thousands. A schema per
store would make each of them about twenty relations (files, catalog rows, DDL
at creation: tens of milliseconds, and locks on the catalog that every other
creator waits for), where a store column makes a new store one row; listing the
sessions of a directory is one indexed query on ``stores.name``; every lookup
and scan is the same index range with one more leading column. What a schema
per store would give, dropping a store at once, is not something the product does.

The metadata row, as in SQLite (``sqlite._schema``): a commit that stores an
entry above every stored entry leaves its seq in that entry's row, and every
table's highest ID bounds the IDs, so such a commit does not update ``stores``.
At open, ``read_metadata`` takes the larger of the row's values and of what the
newest rows say: one lookup at the right edge of each table's key for this
store, never a scan of its history (DESIGN.md section 4).

Foreign keys are declared, deferred to the end of the transaction (a commit
writes children and parents in one statement), behind ``prepare_batch``.

Migrations run in one transaction under a transaction-level advisory lock, so
two processes creating the schema at once do not collide; a database whose
schema is newer than this code is refused (``UnsupportedSchema``).
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from pi_durable_tui.storage.errors import StorageCorrupted, StorageError
from pi_durable_tui.storage.records import FIRST_MINTED_ID
from pi_durable_tui.storage.sqlite import UnsupportedSchema

SCHEMA = "pidurable"
LOCK_CLASS = 0x70644C6B
"""The first key of every advisory lock this backend takes (``pdLk``); the second is a
store's ID, or 0 for the schema migration."""

_DEFERRED = "DEFERRABLE INITIALLY DEFERRED"
_C = 'COLLATE "C"'

MIGRATIONS: list[tuple[str, tuple[str, ...]]] = [
    (
        "initial schema",
        (
            f"""CREATE TABLE {SCHEMA}.stores (
                id serial PRIMARY KEY,
                name text {_C} NOT NULL UNIQUE,
                next_seq bigint NOT NULL,
                next_id bigint NOT NULL,
                holder text,
                created timestamptz NOT NULL DEFAULT now(),
                opened timestamptz,
                label text
            )""",
            f"""CREATE TABLE {SCHEMA}.conversations (
                store integer NOT NULL REFERENCES {SCHEMA}.stores (id),
                id bigint NOT NULL,
                parent_id bigint,
                parent_at bigint,
                owner_conversation_id bigint,
                owner_task_id bigint,
                record text NOT NULL,
                PRIMARY KEY (store, id),
                FOREIGN KEY (store, parent_id) REFERENCES {SCHEMA}.conversations {_DEFERRED}
            )""",
            f"CREATE INDEX conversations_by_owner_conversation ON {SCHEMA}.conversations"
            " (store, owner_conversation_id, id) WHERE owner_conversation_id IS NOT NULL",
            f"CREATE INDEX conversations_by_owner_task ON {SCHEMA}.conversations"
            " (store, owner_task_id, id) WHERE owner_task_id IS NOT NULL",
            f"""CREATE TABLE {SCHEMA}.entries (
                store integer NOT NULL,
                id bigint NOT NULL,
                conversation_id bigint NOT NULL,
                seq bigint NOT NULL,
                head boolean NOT NULL,
                record text NOT NULL,
                PRIMARY KEY (store, id),
                FOREIGN KEY (store, conversation_id) REFERENCES {SCHEMA}.conversations {_DEFERRED}
            )""",
            f"CREATE INDEX entries_by_conversation ON {SCHEMA}.entries"
            " (store, conversation_id, id)",
            f"CREATE INDEX entry_heads_by_conversation ON {SCHEMA}.entries"
            " (store, conversation_id, id) WHERE head",
            f"""CREATE TABLE {SCHEMA}.tasks (
                store integer NOT NULL,
                id bigint NOT NULL,
                conversation_id bigint NOT NULL,
                kind text {_C} NOT NULL,
                status text {_C} NOT NULL,
                abort_requested boolean NOT NULL,
                background boolean NOT NULL,
                record text NOT NULL,
                PRIMARY KEY (store, id),
                FOREIGN KEY (store, conversation_id) REFERENCES {SCHEMA}.conversations {_DEFERRED}
            )""",
            f"CREATE INDEX tasks_by_status ON {SCHEMA}.tasks (store, status, id)",
            f"CREATE INDEX tasks_by_kind ON {SCHEMA}.tasks (store, kind, id)",
            f"CREATE INDEX tasks_by_conversation ON {SCHEMA}.tasks (store, conversation_id, id)",
            f"""CREATE TABLE {SCHEMA}.submissions (
                store integer NOT NULL,
                id bigint NOT NULL,
                conversation_id bigint NOT NULL,
                type text {_C} NOT NULL,
                status text {_C} NOT NULL,
                request_id text {_C},
                record text NOT NULL,
                PRIMARY KEY (store, id),
                FOREIGN KEY (store, conversation_id) REFERENCES {SCHEMA}.conversations {_DEFERRED}
            )""",
            f"CREATE INDEX submissions_by_conversation ON {SCHEMA}.submissions"
            " (store, conversation_id, id)",
            f"CREATE INDEX submissions_by_status ON {SCHEMA}.submissions"
            " (store, status, conversation_id, id)",
            # Not UNIQUE, as in SQLite: within one batch a submission may take a request ID
            # that another one releases later in write order.
            f"CREATE INDEX submissions_by_request ON {SCHEMA}.submissions"
            " (store, conversation_id, request_id) WHERE request_id IS NOT NULL",
            f"""CREATE TABLE {SCHEMA}.documents (
                store integer NOT NULL,
                id bigint NOT NULL,
                kind text {_C} NOT NULL,
                scope_kind text {_C} NOT NULL,
                scope_id bigint,
                key text {_C},
                created_at bigint NOT NULL,
                retired_at bigint,
                record text NOT NULL,
                PRIMARY KEY (store, id)
            )""",
            f"CREATE INDEX documents_by_address ON {SCHEMA}.documents"
            " (store, kind, scope_kind, scope_id, key, created_at)",
            f"CREATE INDEX documents_by_scope_kind ON {SCHEMA}.documents"
            " (store, scope_kind, scope_id, id)",
            f"""CREATE TABLE {SCHEMA}.document_revisions (
                store integer NOT NULL,
                document_id bigint NOT NULL,
                seq bigint NOT NULL,
                kind text {_C} NOT NULL CHECK (kind IN ('base', 'delta')),
                version bigint NOT NULL,
                content text NOT NULL,
                PRIMARY KEY (store, document_id, seq),
                FOREIGN KEY (store, document_id) REFERENCES {SCHEMA}.documents {_DEFERRED}
            )""",
            f"CREATE INDEX document_revisions_by_kind ON {SCHEMA}.document_revisions"
            " (store, document_id, kind, seq)",
        ),
    ),
]
"""``MIGRATIONS[i]`` (a description and its statements) takes the tables from version
``i`` to ``i + 1``. REMINDER: append only; databases in the field were made by them."""


def schema_version() -> int:
    """Return the schema version this code writes: the number of migrations."""
    return len(MIGRATIONS)


@dataclass(frozen=True, slots=True)
class Metadata:
    """What a store's next commit starts from (as ``sqlite._schema.Metadata``)."""

    next_seq: int
    next_id: int
    newest_entry: int
    """The highest stored entry ID (0: none)."""


async def prepare_schema(conn: asyncpg.Connection, where: str) -> None:
    """Create or upgrade the tables as needed.

    Args:
        conn: A connection outside any transaction.
        where: The database as messages name it (its URL without the password).

    Raises:
        UnsupportedSchema: The tables are newer than this code.
        StorageError: A migration failed; the database was left as it was.
    """
    version = await _version(conn)
    if version == schema_version():
        return
    _refuse_newer(version, where)
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1, 0)", LOCK_CLASS)
        await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
        await conn.execute(
            f"CREATE TABLE IF NOT EXISTS {SCHEMA}.schema_version"
            " (id integer PRIMARY KEY CHECK (id = 1), version integer NOT NULL)"
        )
        version = await _version(conn)  # another process may have migrated meanwhile
        _refuse_newer(version, where)
        for step in range(version, schema_version()):
            description, statements = MIGRATIONS[step]
            try:
                for statement in statements:
                    await conn.execute(statement)
            except asyncpg.PostgresError as error:
                raise StorageError(
                    f"Migrating the pidurable tables in {where} from schema version {step} to "
                    f"{step + 1} ({description}) failed: {error}; the database was left unchanged"
                ) from error
        await conn.execute(
            f"INSERT INTO {SCHEMA}.schema_version VALUES (1, $1)"
            " ON CONFLICT (id) DO UPDATE SET version = excluded.version",
            schema_version(),
        )


async def _version(conn: asyncpg.Connection) -> int:
    try:
        version = await conn.fetchval(f"SELECT version FROM {SCHEMA}.schema_version WHERE id = 1")
    except (asyncpg.UndefinedTableError, asyncpg.InvalidSchemaNameError):
        return 0  # a database pidurable has not used yet
    return 0 if version is None else int(version)


def _refuse_newer(version: int, where: str) -> None:
    if version > schema_version():
        raise UnsupportedSchema(
            f"The pidurable tables in {where} have schema version {version}, newer than "
            f"version {schema_version()} that this pidurable understands; upgrade pidurable"
        )


async def store_id(conn: asyncpg.Connection, name: str) -> int:
    """Return the ID of the store called ``name``, creating its row if needed."""
    for _ in range(3):
        found = await conn.fetchval(
            f"WITH made AS (INSERT INTO {SCHEMA}.stores (name, next_seq, next_id)"
            " VALUES ($1, 1, $2) ON CONFLICT (name) DO NOTHING RETURNING id)"
            f" SELECT id FROM made UNION ALL SELECT id FROM {SCHEMA}.stores WHERE name = $1",
            name,
            FIRST_MINTED_ID,
        )
        if found is not None:
            return int(found)
        # Another process created it after this statement's snapshot was taken.
    raise StorageError(f"The store row of {name!r} could not be created or found")


_NEWEST_ROWS = (
    "SELECT s.next_seq, s.next_id,"
    f" (SELECT id FROM {SCHEMA}.entries WHERE store = $1 ORDER BY id DESC LIMIT 1),"
    f" (SELECT seq FROM {SCHEMA}.entries WHERE store = $1 ORDER BY id DESC LIMIT 1),"
    # greatest() ignores NULLs: an empty table says nothing.
    f" greatest((SELECT max(id) FROM {SCHEMA}.conversations WHERE store = $1),"
    f" (SELECT max(id) FROM {SCHEMA}.tasks WHERE store = $1),"
    f" (SELECT max(id) FROM {SCHEMA}.submissions WHERE store = $1),"
    f" (SELECT max(id) FROM {SCHEMA}.documents WHERE store = $1))"
    f" FROM {SCHEMA}.stores s WHERE s.id = $1"
)


async def read_metadata(conn: asyncpg.Connection, store: int, name: str) -> Metadata:
    """Read the store row, raised to what the newest rows say (module docstring).

    Raises:
        StorageCorrupted: The store row is gone.
    """
    row = await conn.fetchrow(_NEWEST_ROWS, store)
    if row is None:
        raise StorageCorrupted(f"The store row of {name!r} is missing")
    next_seq, next_id, entry, entry_seq, other = row
    newest = max(entry or 0, other or 0)
    return Metadata(max(next_seq, (entry_seq or 0) + 1), max(next_id, newest + 1), entry or 0)


@dataclass(frozen=True, slots=True)
class StoreSummary:
    """One store of a database as ``list_stores`` finds it."""

    name: str
    created_ms: int
    """When its row was made (milliseconds since the epoch)."""
    opened_ms: int
    """When a writer last opened it (its creation, if never)."""
    label: str | None
    size_bytes: int
    """The JSON text of its entries (0 unless sizes were asked for)."""


def _upper_bound(prefix: str) -> str:
    """The least string above every string that starts with ``prefix`` (in code point order)."""
    for cut in range(len(prefix), 0, -1):
        last = ord(prefix[cut - 1])
        if last < 0x10FFFF and not 0xD7FF <= last < 0xE000:
            return prefix[: cut - 1] + chr(last + 1)
    return "\U0010ffff" * (len(prefix) + 1)


async def list_stores(
    conn: asyncpg.Connection, prefix: str, *, limit: int, sizes: bool
) -> list[StoreSummary]:
    """Return the stores whose names start with ``prefix``, by name, last first.

    A database no pidurable has used holds none.
    """
    size = (
        f"coalesce((SELECT sum(octet_length(e.record)) FROM {SCHEMA}.entries e"
        " WHERE e.store = s.id), 0)"
        if sizes
        else "0"
    )
    try:
        rows = await conn.fetch(
            "SELECT name, (extract(epoch FROM created) * 1000)::bigint,"
            " (extract(epoch FROM coalesce(opened, created)) * 1000)::bigint, label,"
            f" {size} FROM {SCHEMA}.stores s WHERE name >= $1 AND name < $2"
            " ORDER BY name DESC LIMIT $3",
            prefix,
            _upper_bound(prefix),
            limit,
        )
    except (asyncpg.UndefinedTableError, asyncpg.InvalidSchemaNameError):
        return []
    return [StoreSummary(r[0], int(r[1]), int(r[2]), r[3], int(r[4])) for r in rows]
