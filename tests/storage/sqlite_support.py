"""Helpers shared by the SqliteStorage test modules."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pi_durable_tui.storage.records import ConversationRecord, EntryRecord
from pi_durable_tui.storage.sqlite import SqliteStorage
from pi_durable_tui.storage.sqlite._storage import run_on_worker
from pi_durable_tui.storage.writes import PutConversation, PutEntry

ROOT = PutConversation(ConversationRecord(1))


def entry(entry_id: int, kind: str = "message", conversation_id: int = 1) -> PutEntry:
    return PutEntry(EntryRecord(entry_id, conversation_id, kind, data={"text": "hi"}))


def integrity(path: Path) -> list[Any]:
    """``integrity_check`` rows followed by ``foreign_key_check`` rows, from a new connection."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute("PRAGMA integrity_check").fetchall()
        return [*rows, *conn.execute("PRAGMA foreign_key_check").fetchall()]


@asynccontextmanager
async def checked_stores(directory: Path) -> AsyncIterator[Callable[..., Any]]:
    """Open stores in ``directory``; on exit close them and check every file's integrity."""
    opened: list[SqliteStorage] = []

    async def open_store(name: str = "session.sqlite", **options: Any) -> SqliteStorage:
        storage = await SqliteStorage.open(directory / name, **options)
        opened.append(storage)
        return storage

    yield open_store
    for storage in opened:
        await storage.close()
    for path in {storage.path for storage in opened}:
        if path.exists():
            assert integrity(path) == [("ok",)]


async def pragma(storage: SqliteStorage, name: str) -> Any:
    """Read a pragma on the store's own connection."""
    return await run_on_worker(
        storage._db, lambda conn: conn.execute(f"PRAGMA {name}").fetchone()[0]
    )


async def query(storage: SqliteStorage, sql: str, *params: Any) -> Any:
    """Run a one-value query on the store's own connection."""
    return await run_on_worker(storage._db, lambda conn: conn.execute(sql, params).fetchone()[0])
