"""Model context derivation (R71-R76): pure derivation, then loading from real storage."""

from __future__ import annotations

import pytest

from pi_durable_tui.harness.context._context import (
    MISSING_RESULT_TEXT,
    active_range,
    derive_range,
    is_stale_head,
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
