"""Conformance tests of entries, forks and head markers.

Rules covered: Entries and forks (R17, R19, R71: a conversation sees its own
entries and each ancestor's up to the fork point, inclusive, recursively; later
parent entries never leak into a fork), ``entry(id, conversation_id)``,
``scan_entries`` (inclusive bounds, descending by default, ``asc``),
``find_latest_head_marker`` with ``at_or_before`` across forks, the refusal of
all three in a conversation that does not exist (``Unknown conversation <n>``),
and the shapes of conversation and entry records.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from pi_durable_tui.storage._conformance.base import ConformanceBase, conversation, entry, task
from pi_durable_tui.storage.errors import StorageRejected
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.records import (
    ConversationOwner,
    ConversationRecord,
    EntryRecord,
    ForkPoint,
)
from pi_durable_tui.storage.writes import PutConversation, PutEntry

VISIBLE: dict[int, list[int]] = {
    1: [2, 3, 4, 10, 13],
    5: [2, 3, 6, 7, 11],
    8: [2, 3, 6, 9, 12],
    14: [2, 15],
}
"""The visible history of each conversation of ``fork_tree``, oldest first."""

HEADS = {3, 7, 9, 11, 13}
"""The head markers among ``fork_tree``'s entries."""


async def fork_tree(storage: Storage) -> None:
    """Build three levels of forks, with parent entries appended after each fork.

    Conversation 1 holds 2, 3, 4, then 10 and 13 after the forks; 5 forks 1 at 3
    and holds 6, 7, then 11; 8 forks 5 at 6 and holds 9, then 12; 14 forks 1 at
    the inherited-by-all entry 2 and holds 15. Heads: 3, 7, 9, 11, 13.
    """
    await storage.commit([conversation(1), entry(2, 1), entry(3, 1, head=2), entry(4, 1)])
    await storage.commit([conversation(5, parent=1, at=3), entry(6, 5), entry(7, 5, head=6)])
    await storage.commit([conversation(8, parent=5, at=6), entry(9, 8, head=9)])
    await storage.commit([entry(10, 1), entry(11, 5, head=6), entry(12, 8)])
    await storage.commit([entry(13, 1, head=10), conversation(14, parent=1, at=2), entry(15, 14)])


async def visible_ids(storage: Storage, conversation_id: int, **kwargs: object) -> list[int]:
    """Return the IDs of one page (limit 100) of ``scan_entries``."""
    page = await storage.scan_entries(conversation_id, limit=100, **kwargs)  # type: ignore[arg-type]
    return [stored.entry.id for stored in page.items]


class HistoryRules(ConformanceBase):
    """Fork-aware entry lookups and scans (R17, R19, R71)."""

    async def test_a_fork_sees_parent_entries_through_the_fork_entry_and_none_after(
        self, storage: Storage, phase: str
    ) -> None:
        """R17, R71: three levels of forks, parents appended to after each fork."""
        await fork_tree(storage)
        storage = await self.checkpoint(storage)
        for conversation_id, expected in VISIBLE.items():
            assert await visible_ids(storage, conversation_id, order="asc") == expected

    async def test_entry_scans_are_newest_first_unless_asked_for_asc(
        self, storage: Storage
    ) -> None:
        """Protocol, Scans: entries default to descending order."""
        await fork_tree(storage)
        for conversation_id, expected in VISIBLE.items():
            assert await visible_ids(storage, conversation_id) == expected[::-1]
            assert await visible_ids(storage, conversation_id, order="desc") == expected[::-1]

    async def test_an_entry_is_found_by_id_alone_or_only_where_it_is_visible(
        self, storage: Storage, phase: str
    ) -> None:
        """R19, R71: ``entry(id, conversation_id)`` is fork-aware; ``entry(id)`` is not."""
        await fork_tree(storage)
        storage = await self.checkpoint(storage)
        for entry_id in range(2, 16):
            if entry_id in VISIBLE:
                assert await storage.entry(entry_id) is None
                continue
            assert await storage.entry(entry_id) is not None
            for conversation_id, visible in VISIBLE.items():
                found = await storage.entry(entry_id, conversation_id)
                assert (found is not None) == (entry_id in visible), (entry_id, conversation_id)
                if found is not None:
                    assert found.entry.id == entry_id

    async def test_entries_carry_the_seq_of_the_commit_that_stored_them(
        self, storage: Storage
    ) -> None:
        """Reference 1.9: lookups return ``{entry, commit_seq}``, also through forks."""
        await fork_tree(storage)
        expected = {2: 1, 3: 1, 6: 2, 9: 3, 12: 4}
        for entry_id, seq in expected.items():
            stored = await storage.entry(entry_id)
            assert stored is not None
            assert stored.commit_seq == seq
        page = await storage.scan_entries(8, order="asc")
        assert [s.commit_seq for s in page.items] == [1, 1, 2, 3, 4]

    async def test_the_fork_entry_is_the_cap_even_if_its_commit_appended_more(
        self, storage: Storage
    ) -> None:
        """R17: the child contains parent entries through E even when E's commit added more."""
        await storage.commit([conversation(1), entry(2, 1), entry(3, 1), entry(4, 1)])
        await storage.commit([conversation(5, parent=1, at=3)])
        assert await visible_ids(storage, 5, order="asc") == [2, 3]
        assert await storage.entry(4, 5) is None

    async def test_a_fork_in_the_same_commit_as_its_fork_entry_sees_it(
        self, storage: Storage
    ) -> None:
        """R17: the fork may be created by the commit that stores E."""
        await storage.commit(
            [conversation(1), entry(2, 1), conversation(3, parent=1, at=2), entry(4, 3)]
        )
        assert await visible_ids(storage, 3, order="asc") == [2, 4]

    @pytest.mark.parametrize("order", ["asc", "desc"])
    async def test_entry_bounds_are_inclusive_across_the_fork_chain(
        self, storage: Storage, order: str
    ) -> None:
        """Protocol, ``scan_entries``: ``min_entry_id`` and ``max_entry_id`` are inclusive."""
        await fork_tree(storage)
        cases = [
            ({"min_entry_id": 3}, [3, 6, 9, 12]),
            ({"max_entry_id": 6}, [2, 3, 6]),
            ({"min_entry_id": 3, "max_entry_id": 9}, [3, 6, 9]),
            ({"min_entry_id": 6, "max_entry_id": 6}, [6]),
            ({"min_entry_id": 4, "max_entry_id": 5}, []),
            ({"min_entry_id": 9, "max_entry_id": 3}, []),
            ({"min_entry_id": 0, "max_entry_id": 1000}, [2, 3, 6, 9, 12]),
            ({"min_entry_id": 13}, []),
        ]
        for bounds, expected in cases:
            ids = await visible_ids(storage, 8, order=order, **bounds)
            assert ids == (expected if order == "asc" else expected[::-1]), bounds

    @pytest.mark.parametrize("conversation_id", [99, 2, 20, 2**70])
    async def test_entry_reads_in_an_unknown_conversation_reject(
        self, storage: Storage, phase: str, conversation_id: int
    ) -> None:
        """Protocol, Reads: ``Unknown conversation <n>``, not an empty answer.

        An ID that is free, that belongs to an entry or a task, or that no
        backend could even store: a wrong ID never passes for an empty history.
        """
        await fork_tree(storage)
        await storage.commit([task(20, 1)])
        storage = await self.checkpoint(storage)
        message = f"Unknown conversation {conversation_id}"
        reads: list[Callable[[], Awaitable[object]]] = [
            lambda: storage.entry(2, conversation_id),
            lambda: storage.entry(999, conversation_id),
            lambda: storage.scan_entries(conversation_id),
            lambda: storage.scan_entries(conversation_id, order="asc", min_entry_id=1),
            lambda: storage.find_latest_head_marker(conversation_id),
            lambda: storage.find_latest_head_marker(conversation_id, at_or_before=3),
        ]
        for read in reads:
            with pytest.raises(StorageRejected) as caught:
                await read()
            assert str(caught.value) == message
        assert await visible_ids(storage, 14, order="asc") == VISIBLE[14]

    async def test_a_conversation_without_entries_has_an_empty_history(
        self, storage: Storage
    ) -> None:
        """Protocol, Scans: nothing to scan in a known conversation is an empty last page."""
        await storage.commit([conversation(1), conversation(2), entry(3, 1, head=3)])
        page = await storage.scan_entries(2)
        assert (page.items, page.cursor) == ([], None)
        assert await storage.find_latest_head_marker(2) is None
        assert await storage.entry(3, 2) is None

    async def test_the_latest_head_marker_is_the_newest_visible_one(
        self, storage: Storage, phase: str
    ) -> None:
        """R71: the newest visible entry carrying ``head``, fork-aware."""
        await fork_tree(storage)
        storage = await self.checkpoint(storage)
        expected = {1: 13, 5: 11, 8: 9, 14: None}
        for conversation_id, head in expected.items():
            found = await storage.find_latest_head_marker(conversation_id)
            assert (None if found is None else found.entry.id) == head, conversation_id

    async def test_head_markers_at_or_before_an_entry_are_inclusive_across_forks(
        self, storage: Storage
    ) -> None:
        """R71: ``at_or_before`` cuts the visible history, inclusive, through forks."""
        await fork_tree(storage)
        cases = [
            (8, 12, 9),
            (8, 9, 9),
            (8, 8, 3),
            (8, 3, 3),
            (8, 2, None),
            (5, 10, 7),
            (5, 11, 11),
            (1, 12, 3),
            (1, 13, 13),
            (14, 100, None),
        ]
        for conversation_id, cutoff, head in cases:
            found = await storage.find_latest_head_marker(conversation_id, at_or_before=cutoff)
            got = None if found is None else found.entry.id
            assert got == head, (conversation_id, cutoff)
            if found is not None:
                assert found.entry.head is not None

    async def test_entry_records_keep_every_field(self, storage: Storage, phase: str) -> None:
        """Records' shapes: every optional field of an entry round-trips."""
        full = EntryRecord(
            3,
            1,
            "pi.assistant",
            model=[{"role": "assistant", "content": [{"type": "text", "text": "hé"}]}],
            data={"n": 1.5, "flag": True, "none": None, "list": [0, -1, "x"]},
            head=3,
            edits=[{"target": 2, "action": "omit"}],
            by_task_id=2,
        )
        bare = EntryRecord(4, 1, "pi.user")
        await storage.commit([conversation(1), PutEntry(full), PutEntry(bare)])
        storage = await self.checkpoint(storage)
        assert (await storage.entry(3)).entry == full  # type: ignore[union-attr]
        assert (await storage.entry(4)).entry == bare  # type: ignore[union-attr]

    async def test_conversation_records_keep_parent_and_owner(
        self, storage: Storage, phase: str
    ) -> None:
        """Records' shapes: a conversation's fork point and owner round-trip."""
        forked = ConversationRecord(5, ForkPoint(1, 2), ConversationOwner(1, 3))
        await storage.commit([conversation(1), entry(2, 1), task(3, 1), PutConversation(forked)])
        storage = await self.checkpoint(storage)
        assert await storage.conversation(5) == forked
        assert await storage.conversation(1) == ConversationRecord(1)
