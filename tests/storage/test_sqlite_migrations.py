"""SqliteStorage schema versions: a store written by schema version 1 opens, and the metadata
row is written only by commits whose seq no newest entry row records (sqlite._schema).

Version 1 kept a ``record_ids`` table and rewrote the metadata row at every commit;
version 2 finds an ID's kind by the record tables' keys and lets the newest entry
row carry the seq, so a one-entry commit writes two pages instead of four.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.storage.errors import StorageRejected
from pi_durable_tui.storage.json_ops import dumps
from pi_durable_tui.storage.records import (
    ConversationRecord,
    DocumentRecord,
    EntryRecord,
    SessionScope,
    TaskRecord,
)
from pi_durable_tui.storage.sqlite._schema import MIGRATIONS, schema_version
from pi_durable_tui.storage.writes import ChangeDocument, CreateDocument, PutTask
from tests.storage.sqlite_support import ROOT, checked_stores, entry, query

PENDING = {"status": "pending", "checkpoint": {"phase": "start"}}


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    async with checked_stores(tmp_path) as open_store:
        yield open_store


def write_version_1_store(path: Path) -> None:
    """Write, with raw SQL, what schema version 1 stored for a small session.

    Seq 1: conversation 1, entries 2 and 3 (3 a head marker). Seq 2: task 4 and
    session document 5. The mint floor was 10 (IDs 6 to 9 minted, never used).
    """
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN")
    for statement in MIGRATIONS[0].statements:
        conn.execute(statement)
    entries = [EntryRecord(2, 1, "note"), EntryRecord(3, 1, "note", head=3)]
    job = TaskRecord(4, 1, "job", 1, {"n": 1}, PENDING)
    document = DocumentRecord(5, "notes", SessionScope(), 2)
    kinds = [(1, "conversation"), (2, "entry"), (3, "entry"), (4, "task"), (5, "document")]
    conn.executemany("INSERT INTO record_ids VALUES (?, ?)", kinds)
    conn.execute(
        "INSERT INTO conversations VALUES (1, NULL, NULL, NULL, NULL, ?)",
        (dumps(ConversationRecord(1).to_json()),),
    )
    for record in entries:
        head = None if record.head is None else 1
        conn.execute(
            "INSERT INTO entries VALUES (?, 1, 1, ?, ?)", (record.id, head, dumps(record.to_json()))
        )
    conn.execute(
        "INSERT INTO tasks VALUES (4, 1, 'job', 'pending', 0, 0, ?)", (dumps(job.to_json()),)
    )
    conn.execute(
        "INSERT INTO documents VALUES (5, 'notes', 'session', NULL, NULL, 2, NULL, ?)",
        (dumps(document.to_json()),),
    )
    conn.execute("INSERT INTO document_revisions VALUES (5, 2, 'base', 1, ?)", ('{"n":1}',))
    conn.execute("UPDATE durable_metadata SET schema_version = 1, next_seq = 3, next_id = 10")
    conn.execute("COMMIT")
    conn.close()


async def test_a_version_1_store_opens_migrated_with_its_records_seqs_and_id_kinds(
    stores: Callable[..., Any], tmp_path: Path
) -> None:
    write_version_1_store(tmp_path / "session.sqlite")
    storage = await stores()
    assert await query(storage, "SELECT schema_version FROM durable_metadata") == schema_version()
    tables = "SELECT count(*) FROM sqlite_master WHERE name = 'record_ids'"
    assert await query(storage, tables) == 0
    assert storage.last_seq == 2
    assert storage.mint_id() == 10
    assert [s.entry.id for s in (await storage.scan_entries(1)).items] == [3, 2]
    head = await storage.find_latest_head_marker(1)
    assert head is not None
    assert head.entry.id == 3
    job = await storage.task(4)
    assert job is not None
    assert job.input == {"n": 1}
    read = await storage.document(5)
    assert read is not None
    assert read.value == {"n": 1}
    for writes, message in [
        ([PutTask(TaskRecord(2, 1, "job", 1, None, PENDING))], "ID 2 already belongs to entry"),
        ([entry(4)], "ID 4 already belongs to task"),
        ([entry(3)], "Entry 3 already exists"),
        ([CreateDocument(5, "other", SessionScope(), 1, {})], "Document 5 already exists"),
    ]:
        with pytest.raises(StorageRejected, match=message):
            await storage.commit(writes)
    assert await storage.commit([entry(11)]) == 3
    await storage.close()
    reopened = await stores()
    assert reopened.last_seq == 3
    assert reopened.mint_id() == 12


async def test_a_commit_storing_a_newest_entry_leaves_the_metadata_row_and_reopen_continues(
    stores: Callable[..., Any],
) -> None:
    storage = await stores()
    metadata = "SELECT next_seq || '/' || next_id FROM durable_metadata"
    await storage.commit([ROOT])  # no entry: the row says seq 1 was used
    assert await query(storage, metadata) == "2/2"
    await storage.commit([entry(100)])  # the newest entry row carries seq 2
    await storage.commit([entry(101), entry(102)])
    assert await query(storage, metadata) == "2/2"
    await storage.close()
    storage = await stores()
    assert storage.last_seq == 3
    assert storage.mint_id() == 103
    await storage.commit([entry(50)])  # below the newest entry: the row is written
    assert await query(storage, metadata) == "5/104"
    await storage.commit([])
    await storage.commit([CreateDocument(500, "notes", SessionScope(), 1, {})])
    assert await query(storage, metadata) == "7/501"
    await storage.close()
    storage = await stores()
    assert storage.last_seq == 6
    assert storage.mint_id() == 501
    assert await storage.commit([entry(600)]) == 7
    await storage.close()
    storage = await stores()
    assert storage.last_seq == 7
    assert storage.mint_id() == 601


def write_version_2_store(path: Path) -> None:
    """Write, with raw SQL, what schema version 2 stored: document 5 as a base and two deltas."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN")
    for migration in MIGRATIONS[:2]:
        for statement in migration.statements:
            conn.execute(statement)
    document = DocumentRecord(5, "notes", SessionScope(), 2)
    conn.execute(
        "INSERT INTO conversations VALUES (1, NULL, NULL, NULL, NULL, ?)",
        (dumps(ConversationRecord(1).to_json()),),
    )
    conn.execute(
        "INSERT INTO documents VALUES (5, 'notes', 'session', NULL, NULL, 2, NULL, ?)",
        (dumps(document.to_json()),),
    )
    revisions = [
        (2, "base", '{"text":"a"}'),
        (3, "delta", '[{"op":"append","path":["text"],"text":"b"}]'),
        (4, "delta", '[{"op":"append","path":["text"],"text":"c"}]'),
    ]
    for seq, kind, content in revisions:
        conn.execute("INSERT INTO document_revisions VALUES (5, ?, ?, 1, ?)", (seq, kind, content))
    conn.execute("UPDATE durable_metadata SET schema_version = 2, next_seq = 5, next_id = 10")
    conn.execute("COMMIT")
    conn.close()


async def test_a_version_2_store_keeps_its_revisions_in_a_table_without_rowid(
    stores: Callable[..., Any], tmp_path: Path
) -> None:
    write_version_2_store(tmp_path / "session.sqlite")
    storage = await stores()
    assert await query(storage, "SELECT schema_version FROM durable_metadata") == schema_version()
    table = "SELECT sql FROM sqlite_master WHERE name = 'document_revisions'"
    assert "WITHOUT ROWID" in await query(storage, table)
    assert await query(storage, "SELECT count(*) FROM document_revisions") == 3
    read = await storage.document(5)
    assert read is not None
    assert read.value == {"text": "abc"}
    assert storage.last_seq == 4
    await storage.commit([ChangeDocument(5, 1, ops=[{"op": "set", "path": ["n"], "value": 1}])])
    await storage.close()
    reopened = await stores()
    read = await reopened.document(5)
    assert read is not None
    assert read.value == {"text": "abc", "n": 1}
