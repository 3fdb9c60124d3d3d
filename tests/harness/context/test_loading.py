"""Reading a context from storage and the range cache (R71, R127, issue 14)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.harness.context import _loading
from pi_durable_tui.harness.context._context import EntryNotVisible
from pi_durable_tui.harness.context._loading import SCAN_PAGE_SIZE, RangeCache, load_context
from pi_durable_tui.storage import (
    ConversationRecord,
    EntryRecord,
    ForkPoint,
    MemoryStorage,
    PutConversation,
    PutEntry,
    SqliteStorage,
    Storage,
)
from tests.harness.transcript import (
    assistant_entry,
    entry,
    result_entry,
    texts,
    user,
    user_entry,
)

# --- load_context on real storage ----------------------------------------------------------


class RecordingReader:
    """A real Storage whose entry reads are recorded; ``between`` runs after the first read."""

    def __init__(self, storage: Storage, between: Any = None) -> None:
        self.storage = storage
        self.scans: list[dict[str, Any]] = []
        self.marker_lookups = 0
        self.between = between

    async def find_latest_head_marker(self, conversation_id: int, at_or_before: Any = None) -> Any:
        self.marker_lookups += 1
        return await self.storage.find_latest_head_marker(conversation_id, at_or_before)

    async def scan_entries(self, conversation_id: int, **options: Any) -> Any:
        page = await self.storage.scan_entries(conversation_id, **options)
        self.scans.append({**options, "items": [s.entry.id for s in page.items]})
        if self.between is not None:
            between, self.between = self.between, None
            await between()
        return page


@pytest.fixture(params=["memory", "sqlite"])
async def storage(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Storage]:
    store: Storage = (
        MemoryStorage()
        if request.param == "memory"
        else await SqliteStorage.open(tmp_path / "session.sqlite")
    )
    yield store
    await store.close()


async def put(storage: Storage, *records: EntryRecord | ConversationRecord) -> None:
    await storage.commit(
        [PutEntry(r) if isinstance(r, EntryRecord) else PutConversation(r) for r in records]
    )


async def test_load_context_reads_only_the_active_range_from_storage(storage: Storage) -> None:
    await put(storage, ConversationRecord(1), *(user_entry(i, f"u{i}") for i in range(2, 40)))
    marker = entry(40, "pi.compaction", user("summary"), head=30)
    await put(storage, marker, user_entry(41, "after"))
    reader = RecordingReader(storage)

    view = await load_context(reader, 1)

    assert [e.id for e in view.entries] == [40, *range(30, 40), 41]
    range_scans = [scan for scan in reader.scans if scan.get("order") == "asc"]
    assert all(scan["min_entry_id"] == 30 for scan in range_scans)
    assert min(i for scan in reader.scans for i in scan["items"]) == 30


async def test_load_context_reads_one_snapshot_when_a_commit_lands_between_its_reads(
    storage: Storage,
) -> None:
    await put(storage, ConversationRecord(1), user_entry(2, "a"), assistant_entry(3, "b"))

    async def compact_meanwhile() -> None:
        await put(storage, entry(4, "pi.compaction", user("summary"), head=3), user_entry(5, "c"))

    view = await load_context(RecordingReader(storage, compact_meanwhile), 1)

    assert [e.id for e in view.entries] == [2, 3]


async def test_load_context_pages_through_a_long_range_in_order(storage: Storage) -> None:
    count = SCAN_PAGE_SIZE + 20
    await put(storage, ConversationRecord(1), *(user_entry(i, f"u{i}") for i in range(2, count)))

    view = await load_context(storage, 1)

    assert [e.id for e in view.entries] == list(range(2, count))


async def test_a_range_cache_makes_a_later_read_one_scan_of_the_newer_entries_r127(
    storage: Storage,
) -> None:
    await put(storage, ConversationRecord(1), *(user_entry(i, f"u{i}") for i in range(2, 30)))
    cache = RangeCache()
    await load_context(storage, 1, cache=cache)
    await put(storage, user_entry(30, "new"))
    reader = RecordingReader(storage)

    view = await load_context(reader, 1, cache=cache)
    again = await load_context(reader, 1, cache=cache)
    at_the_tail = await load_context(reader, 1, 30, cache=cache)

    assert [e.id for e in view.entries] == list(range(2, 31))
    # No new head marker among them: the range starts where it did, nothing to look up.
    assert [scan["items"] for scan in reader.scans] == [[30], []]
    assert reader.marker_lookups == 0
    assert again is view
    assert at_the_tail is view
    with pytest.raises(EntryNotVisible):
        await load_context(reader, 1, 31, cache=cache)
    earlier = await load_context(reader, 1, 10, cache=cache)
    assert [e.id for e in earlier.entries] == list(range(2, 11))


async def test_a_cached_read_at_a_cutoff_among_newer_entries_stops_there_r71_r127(
    storage: Storage,
) -> None:
    await put(storage, ConversationRecord(1), *(user_entry(i, f"u{i}") for i in range(2, 10)))
    cache = RangeCache()
    await load_context(storage, 1, cache=cache)
    await put(storage, *(user_entry(i, f"u{i}") for i in range(10, 15)))

    at_12 = await load_context(storage, 1, 12, cache=cache)
    newest = await load_context(storage, 1, cache=cache)

    assert [e.id for e in at_12.entries] == list(range(2, 13))
    assert [e.id for e in newest.entries] == list(range(2, 15))


async def test_a_new_head_marker_makes_the_range_cache_read_the_new_range_whole_r127(
    storage: Storage,
) -> None:
    await put(storage, ConversationRecord(1), *(user_entry(i, f"u{i}") for i in range(2, 20)))
    cache = RangeCache()
    await load_context(storage, 1, cache=cache)
    await put(storage, entry(20, "pi.compaction", user("summary"), head=15), user_entry(21, "x"))

    view = await load_context(storage, 1, cache=cache)

    assert [e.id for e in view.entries] == [20, *range(15, 20), 21]


async def observed_put(storage: Storage, cache: RangeCache, *records: EntryRecord) -> None:
    """Commit entries as the harness does: the observed cache sees each stored commit."""
    await put(storage, *records)
    cache.observe(list(records))


async def test_an_observed_cache_grows_with_committed_entries_and_reads_nothing_again(
    storage: Storage,
) -> None:
    await put(storage, ConversationRecord(1), *(user_entry(i, f"u{i}") for i in range(2, 10)))
    cache = RangeCache(observed=True)
    await load_context(storage, 1, cache=cache)
    await observed_put(storage, cache, assistant_entry(10, "a"), user_entry(11, "b"))
    reader = RecordingReader(storage)

    view = await load_context(reader, 1, cache=cache)

    assert reader.scans == []
    assert view.messages == (await load_context(storage, 1)).messages
    assert [e.id for e in view.entries] == list(range(2, 12))


async def test_a_commit_during_the_read_leaves_the_observed_range_to_be_read_again(
    storage: Storage,
) -> None:
    await put(storage, ConversationRecord(1), *(user_entry(i, f"u{i}") for i in range(2, 10)))
    cache = RangeCache(observed=True)

    async def commit_meanwhile() -> None:
        await observed_put(storage, cache, user_entry(10, "late"))

    await load_context(RecordingReader(storage, commit_meanwhile), 1, cache=cache)
    reader = RecordingReader(storage)

    view = await load_context(reader, 1, cache=cache)

    assert [scan["items"] for scan in reader.scans] == [[10]]  # grown by a read, not trusted
    assert [e.id for e in view.entries] == list(range(2, 11))


async def test_a_read_that_saw_a_commit_before_it_was_observed_holds_its_entries_once(
    storage: Storage,
) -> None:
    # On SQLite a commit is in the store a loop iteration before the session
    # publishes it, so a read can see its entries and be cached first.
    await put(storage, ConversationRecord(1), *(user_entry(i, f"u{i}") for i in range(2, 10)))
    cache = RangeCache(observed=True)
    late = user_entry(10, "stored, not yet observed")
    await put(storage, late)
    await load_context(storage, 1, cache=cache)
    cache.observe([late])  # its publication arrives after the read
    reader = RecordingReader(storage)

    view = await load_context(reader, 1, cache=cache)

    assert reader.scans == []
    assert [e.id for e in view.entries] == list(range(2, 11))
    assert view.messages == (await load_context(storage, 1)).messages


async def test_an_observed_cache_that_failed_to_take_a_commit_in_trusts_no_range_after(
    storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    await put(storage, ConversationRecord(1), *(user_entry(i, f"u{i}") for i in range(2, 10)))
    cache = RangeCache(observed=True)
    await load_context(storage, 1, cache=cache)

    def broken(*_args: Any) -> Any:
        raise RuntimeError("a bug while growing the range")

    monkeypatch.setattr(_loading, "extend_range", broken)
    with pytest.raises(RuntimeError):
        await observed_put(storage, cache, user_entry(10, "missed"))
    monkeypatch.undo()
    await put(storage, user_entry(11, "never observed: the listener is gone"))

    view = await load_context(storage, 1, cache=cache)

    assert [e.id for e in view.entries] == list(range(2, 12))
    assert cache.mark() is None


async def test_an_observed_head_marker_makes_the_next_read_read_the_new_range(
    storage: Storage,
) -> None:
    await put(storage, ConversationRecord(1), *(user_entry(i, f"u{i}") for i in range(2, 20)))
    cache = RangeCache(observed=True)
    await load_context(storage, 1, cache=cache)
    await observed_put(storage, cache, entry(20, "pi.compaction", user("summary"), head=15))

    view = await load_context(storage, 1, cache=cache)

    assert [e.id for e in view.entries] == [20, *range(15, 20)]


async def test_an_unobserved_cache_never_trusts_a_range_without_reading(storage: Storage) -> None:
    await put(storage, ConversationRecord(1), user_entry(2, "a"))
    cache = RangeCache()
    await load_context(storage, 1, cache=cache)
    await put(storage, user_entry(3, "b"))

    view = await load_context(storage, 1, cache=cache)

    assert [e.id for e in view.entries] == [2, 3]


async def test_load_context_of_an_empty_conversation_is_empty(storage: Storage) -> None:
    await put(storage, ConversationRecord(1))

    view = await load_context(storage, 1)

    assert (view.head, view.entries, view.contributions, view.messages) == (None, [], {}, [])


async def test_r71_context_at_an_entry_equals_the_context_a_fork_there_starts_with(
    storage: Storage,
) -> None:
    await put(
        storage,
        ConversationRecord(1),
        user_entry(2, "a"),
        assistant_entry(3, calls=[("c1", "read")]),
        entry(4, "pi.compaction", user("summary"), head=3),
        result_entry(5, "c1"),
        assistant_entry(6, "done"),
        user_entry(7, "more"),
    )
    await put(storage, ConversationRecord(8, parent=ForkPoint(1, 5)))

    at_five = await load_context(storage, 1, cutoff=5)
    fork = await load_context(storage, 8)

    assert fork == at_five
    assert texts(fork.messages) == ["user:summary", "assistant:c1", "result:c1"]


async def test_r71_a_fork_sees_its_own_entries_after_the_parents_up_to_the_fork_point(
    storage: Storage,
) -> None:
    await put(
        storage,
        ConversationRecord(1),
        user_entry(2, "a"),
        assistant_entry(3, "b"),
        entry(4, "pi.reset", head=4),
        user_entry(5, "c"),
        user_entry(6, "parent only"),
    )
    await put(storage, ConversationRecord(7, parent=ForkPoint(1, 5)))
    await put(storage, entry(8, "pi.user", user("fork"), conversation_id=7))

    view = await load_context(storage, 7)

    assert [e.id for e in view.entries] == [4, 5, 8]
    assert texts(view.messages) == ["user:c", "user:fork"]


async def test_r71_a_cutoff_outside_the_visible_history_is_refused(storage: Storage) -> None:
    await put(storage, ConversationRecord(1), user_entry(2, "a"), user_entry(3, "b"))
    await put(storage, ConversationRecord(4, parent=ForkPoint(1, 2)))

    with pytest.raises(EntryNotVisible, match="Entry 3 is not visible from conversation 4"):
        await load_context(storage, 4, cutoff=3)
    with pytest.raises(EntryNotVisible, match="Entry 99 is not visible"):
        await load_context(storage, 1, cutoff=99)
