"""Model context derivation (R71-R76): pure derivation, then loading from real storage."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.harness.context._context import (
    MISSING_RESULT_TEXT,
    SCAN_PAGE_SIZE,
    EntryNotVisible,
    RangeCache,
    active_range,
    derive_range,
    is_stale_head,
    load_context,
)
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
    system_entry,
    texts,
    user,
    user_entry,
    view_of,
)

# --- R71: the active range -------------------------------------------------------------


def test_r71_without_a_head_marker_the_whole_visible_history_is_active() -> None:
    visible = [user_entry(2, "a"), assistant_entry(3, "b"), user_entry(4, "c")]
    assert active_range(visible) == visible


def test_r71_the_newest_head_marker_comes_first_then_non_marker_entries_from_its_head() -> None:
    old_marker = entry(6, "pi.compaction", user("old summary"), head=4)
    marker = entry(9, "pi.compaction", user("summary"), head=5)
    visible = [user_entry(2, "a"), assistant_entry(3, "b"), user_entry(4, "c")]
    visible += [assistant_entry(5, "d"), old_marker, user_entry(7, "e"), assistant_entry(8, "f")]
    visible += [marker, user_entry(10, "g")]

    assert [e.id for e in active_range(visible)] == [9, 5, 7, 8, 10]


def test_r71_a_reset_marker_heading_itself_starts_a_fresh_range() -> None:
    reset = entry(4, "pi.reset", user("handoff"), head=4)
    visible = [user_entry(2, "a"), assistant_entry(3, "b"), reset, user_entry(5, "c")]

    view = view_of(*visible)

    assert view.head == reset
    assert [e.id for e in view.entries] == [4, 5]
    assert texts(view.messages) == ["user:handoff", "user:c"]


def test_r71_entries_out_of_order_are_refused_with_the_offending_ids() -> None:
    with pytest.raises(ValueError, match="entry 2 follows entry 3"):
        active_range([user_entry(3, "a"), user_entry(2, "b")])


# --- R72: context edits ------------------------------------------------------------------


def test_r72_omit_removes_and_replace_substitutes_an_entrys_messages() -> None:
    view = view_of(
        user_entry(2, "a"),
        assistant_entry(3, "b"),
        user_entry(4, "c"),
        system_entry(
            5,
            {"s": "x"},
            edits=[
                {"target": 2, "action": "omit"},
                {"target": 4, "action": "replace", "messages": [user("c, rewritten")]},
            ],
        ),
    )

    assert view.contributions[2] == []
    assert texts(view.contributions[4]) == ["user:c, rewritten"]
    assert texts(view.messages) == ["assistant:b", "user:c, rewritten", "system:s"]
    assert view.entries[0].model == [user("a")]  # raw entries are untouched


def test_r72_the_newest_edit_of_a_target_wins_even_when_the_marker_carries_it() -> None:
    # The marker (id 9) is newer than the system entry (id 7) that also edits entry 5,
    # although it comes first in the range.
    marker = entry(
        9, "pi.compaction", user("summary"), head=5, edits=[{"target": 5, "action": "omit"}]
    )
    replace = {"target": 5, "action": "replace", "messages": [user("replaced")]}
    view = view_of(user_entry(5, "a"), system_entry(7, edits=[replace]), marker)

    assert view.contributions[5] == []


def test_r72_edits_located_before_the_range_no_longer_apply() -> None:
    omit = {"target": 6, "action": "omit"}
    marker = entry(7, "pi.compaction", user("summary"), head=6)
    view = view_of(system_entry(5, edits=[omit]), user_entry(6, "kept"), marker)

    assert texts(view.messages) == ["user:summary", "user:kept"]


def test_r72_a_malformed_edit_is_refused_naming_the_entry() -> None:
    with pytest.raises(ValueError, match="Entry 3 has a malformed context edit"):
        view_of(user_entry(2, "a"), system_entry(3, edits=[{"target": 2, "action": "hide"}]))


# --- R73: what contributes -----------------------------------------------------------------


@pytest.mark.parametrize("stop_reason", ["aborted", "error", "deferred"])
def test_r73_aborted_failed_and_deferred_answers_leave_the_context_but_stay_entries(
    stop_reason: str,
) -> None:
    view = view_of(
        user_entry(2, "a"),
        assistant_entry(3, "partial", stop_reason=stop_reason),
        user_entry(4, "b"),
    )

    assert view.contributions[3] == []
    assert texts(view.messages) == ["user:a", "user:b"]
    assert [e.id for e in view.entries] == [2, 3, 4]


def test_r73_entries_without_model_messages_contribute_nothing() -> None:
    view = view_of(user_entry(2, "a"), entry(3, "app.note"))

    assert view.contributions == {2: [user("a")], 3: []}


# --- R74: tool results follow their calls ------------------------------------------------


def test_r74_results_move_right_after_their_assistant_in_call_order() -> None:
    view = view_of(
        user_entry(2, "go"),
        assistant_entry(3, calls=[("c1", "read"), ("c2", "bash")]),
        user_entry(4, "steer"),
        system_entry(5, {"s": "x"}),
        result_entry(6, "c2", "bash"),
        result_entry(7, "c1"),
    )

    assert texts(view.messages) == [
        "user:go",
        "assistant:c1+c2",
        "result:c1",
        "result:c2",
        "user:steer",
        "system:s",
    ]
    # contributions keep committed order
    assert texts(view.contributions[6]) == ["result:c2"]


def test_r74_a_call_without_a_result_gets_a_synthesized_error_result() -> None:
    view = view_of(user_entry(2, "go"), assistant_entry(3, calls=[("c1", "bash")], timestamp=42))

    missing = view.messages[-1]
    assert missing == {
        "role": "toolResult",
        "tool_call_id": "c1",
        "tool_name": "bash",
        "content": [{"type": "text", "text": MISSING_RESULT_TEXT}],
        "is_error": True,
        "details": {"reason": "missing_result"},
        "timestamp": 42,
    }


def test_r74_results_after_the_next_assistant_or_without_a_call_are_dropped() -> None:
    view = view_of(
        user_entry(2, "go"),
        result_entry(3, "orphan"),
        assistant_entry(4, calls=[("c1", "read")]),
        assistant_entry(5, "next"),
        result_entry(6, "c1"),
    )

    assert texts(view.messages) == ["user:go", "assistant:c1", "result:c1", "assistant:next"]
    assert view.messages[2]["details"] == {"reason": "missing_result"}


# --- R75: a leading system message -------------------------------------------------------


def test_r75_a_system_message_preceded_only_by_user_messages_moves_to_the_front() -> None:
    view = view_of(user_entry(2, "a"), user_entry(3, "b"), system_entry(4, {"s": "x"}))

    assert texts(view.messages) == ["system:s", "user:a", "user:b"]
    assert [e.id for e in view.entries] == [2, 3, 4]


def test_r75_a_system_message_after_an_answer_stays_in_place() -> None:
    view = view_of(
        user_entry(2, "a"),
        system_entry(3, {"s": "x"}),
        assistant_entry(4, "b"),
        system_entry(5, {"t": "y"}),
        user_entry(6, "c"),
    )

    assert texts(view.messages) == ["system:s", "user:a", "assistant:b", "system:t", "user:c"]


# --- R76: the view ---------------------------------------------------------------------


def test_r76_the_view_holds_raw_entries_marker_first_and_contributions_per_entry() -> None:
    marker = entry(6, "pi.compaction", user("summary"), head=4)
    view = view_of(user_entry(2, "a"), assistant_entry(3, "b"), user_entry(4, "c"), marker)

    assert view.head == marker
    assert [e.id for e in view.entries] == [6, 4]
    assert set(view.contributions) == {6, 4}
    assert texts(view.messages) == ["user:summary", "user:c"]


def test_r76_only_the_first_entry_of_a_range_may_be_a_marker() -> None:
    marker = entry(3, "pi.reset", head=3)
    with pytest.raises(ValueError, match="pass the output of active_range"):
        derive_range([user_entry(2, "a"), marker])


# --- R63 / R113: competing compactions ---------------------------------------------------


def test_r113_a_summary_cut_older_than_the_range_start_is_stale() -> None:
    # Background B chose its cut at 70; blocking A cut at 150 and appended first.
    history = [user_entry(i, f"u{i}") for i in range(60, 200, 10)]
    before = view_of(*history)
    after_a = view_of(*history, entry(200, "pi.compaction", user("A"), head=150))

    assert not is_stale_head(before, 70)
    assert is_stale_head(after_a, 70)
    assert not is_stale_head(after_a, 150)


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
