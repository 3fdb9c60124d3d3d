"""The floors the storage benchmark divides by, measured in the same run.

Both write the same rows into a table of their own, in a WAL database on the
ordinary disk, one transaction per commit:

- ``RawFloor``: Python's ``sqlite3`` on the calling thread, ``BEGIN IMMEDIATE``;
  the inserts; ``COMMIT``. The physical floor of a SQLite commit.
- ``AioFloor``: the same transaction through aiosqlite, three awaited statements
  on one connection (``executemany`` for several rows). The floor for any design
  that keeps SQLite off the event loop: every await is a hop to aiosqlite's
  worker thread and back (DESIGN.md section 2).

Each row is an entry's JSON text, about 200 bytes, serialized once before
timing starts: the floors measure the database, not JSON encoding.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Literal

import aiosqlite

from pi_durable_tui.bench.storage._seed import ROOT, note
from pi_durable_tui.storage.json_ops import dumps

Synchronous = Literal["NORMAL", "FULL"]
_SCHEMA = "CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)"
_INSERT = "INSERT INTO rows (id, body) VALUES (?, ?)"


BODY = dumps(note(2, ROOT, 0).to_json())
"""The text of every row: an entry as the backends store it, serialized once up front."""


class RawFloor:
    """One-transaction-per-commit inserts with ``sqlite3`` on the calling thread."""

    def __init__(
        self, path: Path, synchronous: Synchronous, *, wal_autocheckpoint: int | None = None
    ) -> None:
        self._conn = sqlite3.connect(path, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute(f"PRAGMA synchronous = {synchronous}")
        if wal_autocheckpoint is not None:  # None: SQLite's default, every 1,000 pages
            self._conn.execute(f"PRAGMA wal_autocheckpoint = {int(wal_autocheckpoint)}")
        self._conn.execute(_SCHEMA)
        self._next = 1

    def commit(self, rows: int) -> None:
        """Insert ``rows`` rows in one transaction."""
        first = self._next
        self._next += rows
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        if rows == 1:
            conn.execute(_INSERT, (first, BODY))
        else:
            conn.executemany(_INSERT, [(first + k, BODY) for k in range(rows)])
        conn.execute("COMMIT")

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()


class AioFloor:
    """The same transactions through aiosqlite: three awaited statements each."""

    def __init__(self, db: aiosqlite.Connection) -> None:
        self._db = db
        self._next = 1

    @classmethod
    async def open(cls, path: Path, synchronous: Synchronous) -> AioFloor:
        """Open the database in WAL mode with the given ``synchronous`` level."""
        db = await aiosqlite.connect(path, isolation_level=None)
        await db.execute("PRAGMA journal_mode = WAL")
        await db.execute(f"PRAGMA synchronous = {synchronous}")
        await db.execute(_SCHEMA)
        return cls(db)

    async def commit(self, rows: int) -> None:
        """Insert ``rows`` rows in one transaction (three awaits)."""
        first = self._next
        self._next += rows
        db = self._db
        await db.execute("BEGIN IMMEDIATE")
        if rows == 1:
            await db.execute(_INSERT, (first, BODY))
        else:
            await db.executemany(_INSERT, [(first + k, BODY) for k in range(rows)])
        await db.execute("COMMIT")

    async def close(self) -> None:
        """Close the connection (its worker thread would keep the process alive)."""
        await self._db.close()
