"""Reading what a crash chain left behind: the store, its SQLite health, the effect ledger.

Used by ``crash_verify`` (reliability.md 15: K1-K4). ``dump_store`` reopens the
store through the Storage protocol only (never through a Session, which could
commit while reconciling) and reads every conversation, entry, task and live
document, plus the rewindable notes document as of each note's commit (R19).
``sqlite_health`` runs ``PRAGMA integrity_check`` and ``foreign_key_check`` with
plain ``sqlite3`` (reliability.md 9.5), ``postgres_health`` the PostgreSQL store's
``check_integrity`` (its rows against each other); ``damage_sqlite`` breaks a closed store so
the checks' own tests can see them fail. ``normalize`` turns a dump into the shape
of ``crash_model.expected_state``: labels instead of IDs, no run numbers, no
random keys. ``differences`` says where two such states differ.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pi_durable_tui.storage import (
    ConversationRecord,
    ScopeRef,
    Storage,
    StoredEntry,
    TaskRecord,
)
from pi_durable_tui.storage.jsonl import JsonlStorage
from pi_durable_tui.storage.postgres import PostgresStorage
from pi_durable_tui.storage.sqlite import SqliteStorage
from tests.e2e.crash_model import DRIVER, KEY, fields
from tests.e2e.crash_runner import Setup


@dataclass(slots=True)
class StoreDump:
    """Everything the checks read from a store, through the Storage protocol."""

    last_seq: int
    conversations: list[ConversationRecord]
    entries: list[StoredEntry]
    tasks: list[TaskRecord]
    docs: dict[tuple[str, int | None], dict[str, Any]]
    notes_history: list[tuple[int, Any]]
    """``(seq, value)`` of the notes document as of each note's commit."""
    repairs: tuple[str, ...] = ()


async def all_pages(fetch: Any) -> list[Any]:
    """Call ``fetch(cursor)`` page after page; return every item."""
    items: list[Any] = []
    cursor = None
    while True:
        page = await fetch(cursor)
        items.extend(page.items)
        if page.cursor is None:
            return items
        cursor = page.cursor


async def _dump(storage: Storage) -> StoreDump:
    conversations: list[ConversationRecord] = await all_pages(
        lambda c: storage.scan_conversations(limit=500, cursor=c)
    )
    entries: list[StoredEntry] = []
    docs: dict[tuple[str, int | None], dict[str, Any]] = {}
    notes_id = None
    for scope in [ScopeRef("session"), *(ScopeRef("conversation", c.id) for c in conversations)]:
        records = await all_pages(lambda c, s=scope: storage.scan_documents(s, limit=500, cursor=c))
        for record in records:
            read = await storage.document(record.id)
            assert read is not None
            docs[(record.kind, scope.id)] = read.value
            if record.kind == "crash.notes":
                notes_id = record.id
    for conversation in conversations:
        entries += await all_pages(
            lambda c, i=conversation.id: storage.scan_entries(i, order="asc", limit=500, cursor=c)
        )
    history = []
    for stored in entries:
        if stored.entry.kind == "crash.note" and notes_id is not None:
            read = await storage.document(notes_id, stored.commit_seq)
            history.append((stored.commit_seq, None if read is None else read.value))
    tasks: list[TaskRecord] = await all_pages(lambda c: storage.scan_tasks(limit=500, cursor=c))
    return StoreDump(storage.last_seq, conversations, entries, tasks, docs, history)


async def open_store(setup: Setup) -> Storage:
    """Open a trial's store, of whichever backend."""
    if setup.backend == "sqlite":
        return await SqliteStorage.open(setup.store)
    if setup.backend == "postgres":
        assert setup.database is not None, "a postgres setup needs its database URL"
        return await PostgresStorage.open(setup.database, setup.store_name)
    return await JsonlStorage.open(setup.store)


async def _open_and_dump(setup: Setup) -> StoreDump:
    storage = await open_store(setup)
    try:
        dump = await _dump(storage)
        if isinstance(storage, JsonlStorage):
            dump.repairs = storage.repairs
        return dump
    finally:
        await storage.close()


def dump_store(setup: Setup) -> StoreDump:
    """Reopen a store (no process holds it) and read everything the checks need."""
    return asyncio.run(_open_and_dump(setup))


def sqlite_health(store: Path) -> list[str]:
    """Return the problems ``integrity_check`` and ``foreign_key_check`` report (none: [])."""
    connection = sqlite3.connect(store)
    try:
        integrity = [row[0] for row in connection.execute("PRAGMA integrity_check")]
        foreign = connection.execute("PRAGMA foreign_key_check").fetchall()
    except sqlite3.DatabaseError as error:
        return [f"integrity_check could not run: {error!r}"]
    finally:
        connection.close()
    problems = [] if integrity == ["ok"] else [f"integrity_check: {integrity}"]
    if foreign:
        problems.append(f"foreign_key_check: {foreign}")
    return problems


async def _postgres_problems(setup: Setup) -> list[str]:
    storage = await open_store(setup)
    try:
        assert isinstance(storage, PostgresStorage)
        return await storage.check_integrity()
    finally:
        await storage.close()


def postgres_health(setup: Setup) -> list[str]:
    """Return what ``PostgresStorage.check_integrity`` finds in a closed store (none: [])."""
    return asyncio.run(_postgres_problems(setup))


def damage_sqlite(store: Path, page: int = 4096) -> None:
    """Overwrite every page's b-tree header and cell tail, keeping the file header page."""
    data = bytearray(store.read_bytes())
    for offset in range(page, len(data), page):
        data[offset : offset + 8] = b"\xa5" * 8  # the b-tree page header
        data[offset + page - 64 : offset + page] = b"\xa5" * 64  # cell content
    store.write_bytes(bytes(data))


def read_ledger(setup: Setup) -> list[dict[str, Any]]:
    if not setup.ledger.exists():
        return []
    return [json.loads(line) for line in setup.ledger.read_text().splitlines()]


def label_of(task: TaskRecord) -> str:
    label: str = fields(task.input)["label"]
    return label


def _strip(data: Any) -> Any:
    if not isinstance(data, dict):
        return data
    out = {k: v for k, v in data.items() if k != "run"}
    if "key" in out:
        out["key"] = KEY
    if isinstance(out.get("result"), dict):
        out["result"] = _strip(out["result"])
    return out


def normalize(dump: StoreDump) -> dict[str, Any]:
    """Return the store's state in the shape of ``crash_model.expected_state``."""
    labels = {t.id: label_of(t) for t in dump.tasks}
    start = next(s for s in dump.entries if s.entry.kind == "crash.start")
    names = {start.entry.conversation_id: DRIVER}
    names.update({t.conversation_id: labels[t.id] for t in dump.tasks if t.owner is None})
    conversations: dict[str, dict[str, list[list[Any]]]] = {}
    for stored in dump.entries:
        entry = stored.entry
        source = DRIVER if entry.by_task_id is None else labels[entry.by_task_id]
        group = conversations.setdefault(names[entry.conversation_id], {})
        group.setdefault(source, []).append([entry.kind, _strip(entry.data)])
    tasks = {
        labels[t.id]: {"kind": t.kind, "outcome": _strip(t.state.get("outcome"))}
        for t in dump.tasks
    }
    progress: dict[str, Any] = {}
    docs: dict[str, Any] = {"crash.progress": progress}
    for (kind, scope), value in dump.docs.items():
        if kind == "crash.driver":
            docs[kind] = {"step": value["step"], "tasks": sorted(value["tasks"])}
        elif kind == "crash.progress":
            progress[names[scope or 0]] = value
        else:
            docs[kind] = value
    return {"conversations": conversations, "tasks": tasks, "docs": docs}


def differences(actual: Any, expected: Any, path: str = "", limit: int = 8) -> list[str]:
    """Return up to ``limit`` paths where two JSON values differ, with both sides."""
    found: list[str] = []
    if isinstance(actual, dict) and isinstance(expected, dict):
        for key in sorted(set(actual) | set(expected), key=str):
            if key not in actual:
                found.append(f"{path}/{key}: missing (expected {expected[key]!r})")
            elif key not in expected:
                found.append(f"{path}/{key}: unexpected {actual[key]!r}")
            else:
                found += differences(actual[key], expected[key], f"{path}/{key}", limit)
            if len(found) >= limit:
                break
    elif actual != expected:
        found.append(f"{path}: {actual!r} != expected {expected!r}")
    return found[:limit]
