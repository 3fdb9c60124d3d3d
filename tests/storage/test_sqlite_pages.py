"""The pages a SqliteStorage commit writes: a row's index is written only where its key changed.

An upsert rewrites the index of every column its SET names, even to the same value;
``Tables.write`` sets the indexed columns of tasks and submissions apart, where they
changed, and revisions live in a table without rowid whose key's B-tree holds them
(``sqlite._schema``). Each WAL frame is one page, so the WAL's growth counts them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.storage.records import SessionScope, TaskRecord
from pi_durable_tui.storage.sqlite import SqliteStorage
from pi_durable_tui.storage.writes import ChangeDocument, CreateDocument, PutTask, Write
from tests.storage.sqlite_support import ROOT, checked_stores

_FRAME = 24 + 4096


@pytest.fixture
async def storage(tmp_path: Path) -> AsyncIterator[SqliteStorage]:
    async with checked_stores(tmp_path) as open_store:
        # No checkpoint until close: the WAL only grows, by one frame per page written.
        store: SqliteStorage = await open_store(wal_autocheckpoint=0)
        await store.commit([ROOT, CreateDocument(3, "notes", SessionScope(), 1, {"text": ""})])
        yield store


def task(kind: str, status: str, step: int) -> PutTask:
    return PutTask(TaskRecord(2, 1, kind, 1, None, {"status": status, "checkpoint": step}))


async def pages(storage: SqliteStorage, writes: list[Write]) -> int:
    wal = Path(f"{storage.path}-wal")
    before = wal.stat().st_size
    await storage.commit(writes)
    return (wal.stat().st_size - before) // _FRAME


async def test_a_task_rewritten_with_its_status_and_kind_writes_only_its_row(
    storage: SqliteStorage,
) -> None:
    await storage.commit([task("job", "pending", 0)])
    # A commit without an entry also writes the metadata row's page (``sqlite._schema``).
    assert await pages(storage, [task("job", "pending", 1)]) == 2
    assert await pages(storage, [task("job", "running", 2)]) == 3  # and the status index


async def test_a_task_whose_status_or_kind_changed_is_found_by_the_new_one_only(
    storage: SqliteStorage,
) -> None:
    await storage.commit([task("job", "pending", 0)])
    await storage.commit([task("other", "running", 1)])
    scanned: Callable[..., Any] = storage.scan_tasks
    assert [t.id for t in (await scanned(kind="other", status=("running",))).items] == [2]
    assert (await scanned(kind="job")).items == []
    assert (await scanned(status=("pending",))).items == []
    await storage.commit([task("other", "running", 2)])
    stored = await storage.task(2)
    assert stored is not None
    assert stored.state == {"status": "running", "checkpoint": 2}


async def test_a_delta_writes_one_page_of_revisions(storage: SqliteStorage) -> None:
    append = [{"op": "append", "path": ["text"], "text": "more"}]
    assert await pages(storage, [ChangeDocument(3, 1, ops=append)]) == 2  # and the metadata row
    document = await storage.document(3)
    assert document is not None
    assert document.value == {"text": "more"}
