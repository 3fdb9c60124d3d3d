"""The PostgreSQL store's cached committed view stays right past its bounds.

``storage.postgres._view.Known`` keeps what commits are checked against, bounded
by ``LIMIT``; ``storage.postgres._reads`` keeps conversations the same way. A batch
that needs more answers than the bound, and fork chains read after the bound was
passed, must still answer like the reference (a map emptied halfway through a
commit would fetch forever; one emptied halfway through a fork chain would read a
fork as a root).
"""

from __future__ import annotations

import pytest

from pi_durable_tui.storage import PostgresStorage
from pi_durable_tui.storage.postgres import _reads, _view
from pi_durable_tui.storage.records import (
    ConversationRecord,
    EntryRecord,
    ForkPoint,
    TaskRecord,
)
from pi_durable_tui.storage.writes import PutConversation, PutEntry, PutTask


def task(task_id: int, status: str = "pending") -> PutTask:
    state = {"status": status, "checkpoint": {"phase": "start"}}
    return PutTask(TaskRecord(task_id, 1, "job", 1, None, state))


async def test_a_batch_needing_more_answers_than_the_bound_commits_once(
    postgres_url: str, store_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_view, "LIMIT", 8)
    storage = await PostgresStorage.open(postgres_url, store_name)
    try:
        await storage.commit([PutConversation(ConversationRecord(1))])
        await storage.commit([task(n) for n in range(2, 40)])
        await storage.close()
        storage = await PostgresStorage.open(postgres_url, store_name)  # nothing known
        assert await storage.commit([task(n, "running") for n in range(2, 40)]) == 3
        assert await storage.commit([task(n, "terminal") for n in range(2, 40)]) == 4
        found = await storage.task(39)
        assert found is not None
        assert found.state["status"] == "terminal"
    finally:
        await storage.close()


async def test_fork_chains_read_past_the_conversation_bound_stay_whole(
    postgres_url: str, store_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_reads, "LIMIT", 3)
    storage = await PostgresStorage.open(postgres_url, store_name)
    try:
        writes: list = [PutConversation(ConversationRecord(1)), PutEntry(EntryRecord(2, 1, "n"))]
        parent, at = 1, 2
        for depth in range(6):  # conversations 10, 20, ..., each a fork of the previous
            child = 10 * (depth + 1)
            writes += [
                PutConversation(ConversationRecord(child, ForkPoint(parent, at))),
                PutEntry(EntryRecord(child + 1, child, "n")),
            ]
            parent, at = child, child + 1
        await storage.commit(writes)
        await storage.close()
        storage = await PostgresStorage.open(postgres_url, store_name)
        for conversation in (60, 10, 40, 60):
            page = await storage.scan_entries(conversation, order="asc")
            seen = [stored.entry.id for stored in page.items]
            expected = [2, *(10 * d + 1 for d in range(1, conversation // 10 + 1))]
            assert seen == expected, conversation
    finally:
        await storage.close()
