"""SqliteStorage reclamation of document revisions (R129, R16).

A base or a retirement of a current-only document (session, task, or ``latest``
conversation scope) deletes its older revisions in the same transaction; a
rewindable document keeps every revision, so old points reconstruct after a
reopen; and the pages freed are reused without VACUUM.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.storage.records import ConversationScope, SessionScope
from pi_durable_tui.storage.sqlite import SqliteStorage
from pi_durable_tui.storage.writes import ChangeDocument, CreateDocument, RetireDocument
from tests.storage.sqlite_support import ROOT, checked_stores, pragma, query


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    async with checked_stores(tmp_path) as open_store:
        yield open_store


async def revision_count(storage: SqliteStorage, document_id: int) -> int:
    sql = "SELECT count(*) FROM document_revisions WHERE document_id = ?"
    count: int = await query(storage, sql, document_id)
    return count


def append(text: str) -> list[dict[str, Any]]:
    return [{"op": "append", "path": ["text"], "text": text}]


async def test_a_newer_base_reclaims_older_revisions_of_a_current_only_document(
    stores: Callable[..., Any],
) -> None:
    storage = await stores()
    await storage.commit([ROOT, CreateDocument(2, "notes", SessionScope(), 1, {"text": ""})])
    for word in ("a", "b", "c"):
        await storage.commit([ChangeDocument(2, 1, ops=append(word))])
    assert await revision_count(storage, 2) == 4
    root_delta = [{"op": "set", "path": [], "value": {"text": "root"}}]
    await storage.commit([ChangeDocument(2, 1, ops=root_delta)])
    assert await revision_count(storage, 2) == 5  # a root replacement is still a delta
    await storage.commit([ChangeDocument(2, 2, base={"text": "fresh"})])
    assert await revision_count(storage, 2) == 1
    read = await storage.document(2)
    assert read is not None
    assert (read.version, read.value, read.deltas_since_base) == (2, {"text": "fresh"}, 0)
    await storage.commit([RetireDocument(2)])
    assert await revision_count(storage, 2) == 0


async def test_rewindable_documents_keep_every_revision_across_reopen(
    stores: Callable[..., Any],
) -> None:
    storage = await stores()
    scope = ConversationScope(1, "rewindable")
    await storage.commit([ROOT, CreateDocument(2, "plan", scope, 1, {"text": ""})])
    for word in ("a", "b"):
        await storage.commit([ChangeDocument(2, 1, ops=append(word))])
    await storage.commit([ChangeDocument(2, 1, base={"text": "B"})])
    await storage.commit([ChangeDocument(2, 1, ops=append("c"))])
    await storage.close()
    reopened = await stores()
    assert await revision_count(reopened, 2) == 5
    values = [await reopened.document(2, at) for at in range(1, 6)]
    assert [read.value["text"] for read in values if read] == ["", "a", "ab", "B", "Bc"]
    assert [read.deltas_since_base for read in values if read] == [0, 1, 2, 0, 1]


async def test_pages_released_by_reclamation_are_reused_without_vacuum(
    stores: Callable[..., Any],
) -> None:
    storage = await stores(wal_autocheckpoint=16)
    big = "x" * 200_000
    await storage.commit([ROOT, CreateDocument(2, "notes", SessionScope(), 1, {"text": big})])
    sizes = []
    for round_ in range(12):
        await storage.commit([ChangeDocument(2, 1, base={"text": big + str(round_)})])
        sizes.append(await pragma(storage, "page_count"))
    assert max(sizes[4:]) <= sizes[3]
    assert await pragma(storage, "freelist_count") > 0
