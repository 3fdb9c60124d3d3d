"""The pure half of compaction (R108-R112): estimates, the cut, the summarizer's input."""

from __future__ import annotations

import pytest

from pi_durable_tui.ai import Usage
from pi_durable_tui.harness.compaction._compaction_range import (
    SUMMARY_SYSTEM_PROMPT,
    TOOL_RESULT_MAX_CHARS,
    CompactionCut,
    checkpoint_prompt,
    estimate_tokens,
    message_tokens,
    select_cut,
    serialize_conversation,
    summary_message_text,
)
from tests.harness.transcript import (
    assistant,
    assistant_entry,
    entry,
    result,
    result_entry,
    system_entry,
    texts,
    tool,
    user,
    user_entry,
    view_of,
)


def words(count: int) -> str:
    """Text of about ``count`` tokens (one per repeated word)."""
    return " word" * count


def cut_ids(cut: CompactionCut | None) -> tuple[int, list[int]] | None:
    return None if cut is None else (cut.first_kept, [e.id for e in cut.summarized])


# --- R109: where to cut ------------------------------------------------------------------


SPEC_EXAMPLE = (
    user_entry(1, "please look"),
    assistant_entry(2, calls=[("c1", "read")]),
    result_entry(3, "c1", text=words(30_000)),
    assistant_entry(4, "found it"),
    user_entry(5, "good"),
    assistant_entry(6, "done"),
)


def test_r109_the_spec_example_cuts_at_4_and_summarizes_1_to_3() -> None:
    view = view_of(*SPEC_EXAMPLE)

    cut = select_cut(view, 20_000)

    assert cut_ids(cut) == (4, [1, 2, 3])
    assert cut is not None
    assert texts(cut.messages) == ["user:please look", "assistant:c1", "result:c1"]
    summary = entry(7, "pi.compaction", user("summary"), head=cut.first_kept)
    after = view_of(*SPEC_EXAMPLE, summary)
    assert texts(after.messages) == [
        "user:summary",
        "assistant:found it",
        "user:good",
        "assistant:done",
    ]


def test_r109_nothing_is_compacted_while_the_context_is_under_keep_recent_tokens() -> None:
    assert select_cut(view_of(*SPEC_EXAMPLE), 40_000) is None


def test_r109_tool_results_and_system_entries_are_never_the_cut() -> None:
    view = view_of(
        user_entry(1, words(50)),
        assistant_entry(2, calls=[("c1", "read")]),
        result_entry(3, "c1", text=words(500)),
        system_entry(4, {"s": words(500)}),
        assistant_entry(5, words(10)),
    )

    # The sum reaches the budget at the system entry (4): the next candidate is 5.
    assert cut_ids(select_cut(view, 400)) == (5, [1, 2, 3, 4])


def test_r109_a_user_entry_still_followed_by_a_result_of_the_previous_calls_is_not_a_cut() -> None:
    # A steer (4) was committed between the call (2) and its second result (5).
    entries = (
        user_entry(1, words(100)),
        assistant_entry(2, calls=[("c1", "read"), ("c2", "bash")]),
        result_entry(3, "c1", text=words(10)),
        user_entry(4, words(10)),
        result_entry(5, "c2", text=words(10)),
        assistant_entry(6, words(10)),
    )
    view = view_of(*entries)
    newest_two = sum(
        message_tokens(m) for e in entries[4:] for m in e.model or [] if isinstance(m, dict)
    )

    # The sum reaches the budget at the steer, which may not be cut: the cut moves to 6.
    assert cut_ids(select_cut(view, newest_two + 1)) == (6, [1, 2, 3, 4, 5])


def test_r109_a_user_entry_after_all_results_is_a_cut() -> None:
    view = view_of(
        user_entry(1, words(100)),
        assistant_entry(2, calls=[("c1", "read")]),
        result_entry(3, "c1", text=words(10)),
        user_entry(4, words(300)),
        assistant_entry(5, words(10)),
    )

    assert cut_ids(select_cut(view, 300)) == (4, [1, 2, 3])


def test_r109_when_no_candidate_follows_the_newest_candidate_is_the_cut() -> None:
    view = view_of(
        user_entry(1, words(100)),
        assistant_entry(2, calls=[("c1", "read")]),
        result_entry(3, "c1", text=words(1_000)),
    )

    assert cut_ids(select_cut(view, 500)) == (2, [1])


def test_r109_an_earlier_summary_is_summarized_again() -> None:
    view = view_of(
        user_entry(1, "old"),
        assistant_entry(2, words(300)),
        entry(3, "pi.compaction", user("first summary"), head=2),
        user_entry(4, words(300)),
        assistant_entry(5, words(300)),
    )

    cut = select_cut(view, 300)

    assert cut_ids(cut) == (5, [3, 2, 4])
    assert cut is not None
    assert texts(cut.messages)[0] == "user:first summary"


def test_r109_nothing_is_compacted_when_no_entry_before_the_cut_contributes() -> None:
    view = view_of(
        entry(1, "app.note"),
        assistant_entry(2, "aborted", stop_reason="aborted"),
        user_entry(3, words(500)),
    )

    assert select_cut(view, 100) is None


def test_r109_a_negative_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="keep_recent_tokens must be 0 or more, got -1"):
        select_cut(view_of(*SPEC_EXAMPLE), -1)


# --- R108: the estimate ------------------------------------------------------------------


def test_r108_the_newest_reported_usage_plus_estimates_of_what_follows() -> None:
    measured = Usage(input=900, output=100, total_tokens=1_000)
    later = [user("more"), assistant("reply")]
    planned = {"role": "system", "content": "", "sections": {"a": words(40)}}
    view = view_of(
        user_entry(2, words(5_000)),
        assistant_entry(3, "answer", usage=measured),
        user_entry(4, "more"),
        entry(5, "pi.assistant", later[1]),
    )

    expected = 1_000 + sum(message_tokens(m) for m in later) + message_tokens(planned)
    assert estimate_tokens(view, [planned]) == expected


def test_r108_usage_without_a_total_counts_input_output_and_cache() -> None:
    usage = Usage(input=10, output=20, cache_read=300, cache_write=4)
    view = view_of(user_entry(2, "hi"), assistant_entry(3, "x", usage=usage))

    assert estimate_tokens(view, []) == 334


def test_r108_failed_answers_and_answers_before_the_head_marker_are_not_measurements() -> None:
    view = view_of(
        user_entry(2, "hi"),
        assistant_entry(3, "kept", usage=Usage(total_tokens=50_000)),
        entry(4, "pi.compaction", user("summary"), head=3),
        assistant_entry(5, "x", stop_reason="error", usage=Usage(total_tokens=70_000)),
    )

    assert estimate_tokens(view, []) == sum(message_tokens(m) for m in view.messages)


def test_r108_a_system_message_counts_its_sections_and_tools() -> None:
    bare = {"role": "system", "content": "", "sections": {"a": "A"}}
    with_tool = {**bare, "tools_added": [tool("read", words(100))]}

    assert message_tokens(with_tool) >= message_tokens(bare) + 100


def test_r108_a_message_that_is_not_a_model_message_is_refused() -> None:
    with pytest.raises(ValueError, match="role 'narrator'"):
        message_tokens({"role": "narrator"})


# --- R111: the summarizer's input ------------------------------------------------------------


def test_r111_a_conversation_serializes_part_by_part_without_system_messages() -> None:
    text = serialize_conversation(
        [
            {"role": "system", "content": "", "sections": {"a": "hidden"}},
            user("Fix it"),
            assistant(
                "Reading.",
                thinking="Check the file first.",
                calls=[("c1", "read"), ("c2", "bash")],
                arguments={"path": "a.py", "limit": 2, "note": "é"},
            ),
            result("c1", text="contents"),
            result("c2", "bash", text=""),
        ]
    )

    assert text == (
        "[User]: Fix it\n\n"
        "[Assistant thinking]: Check the file first.\n\n"
        "[Assistant]: Reading.\n\n"
        '[Assistant tool calls]: read(path="a.py", limit=2, note="é"); '
        'bash(path="a.py", limit=2, note="é")\n\n'
        "[Tool result]: contents"
    )


def test_r111_a_long_tool_result_keeps_2000_characters_and_says_how_many_were_cut() -> None:
    text = serialize_conversation([result("c1", text="x" * (TOOL_RESULT_MAX_CHARS + 345))])

    assert text == f"[Tool result]: {'x' * 2000}\n\n[... 345 more characters truncated]"


def test_r111_the_checkpoint_prompt_wraps_the_conversation_and_names_every_section() -> None:
    prompt = checkpoint_prompt("[User]: hi")

    assert prompt.startswith("<conversation>\n[User]: hi\n</conversation>\n\n")
    for heading in (
        "## Goal",
        "## Constraints & Preferences",
        "## Progress",
        "### Done",
        "### In Progress",
        "### Blocked",
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
    ):
        assert heading in prompt
    assert "Additional focus" not in prompt
    assert checkpoint_prompt("x", "the parser bug").endswith("\n\nAdditional focus: the parser bug")
    assert "Do not continue the conversation" in SUMMARY_SYSTEM_PROMPT


# --- R112: the summary entry's text --------------------------------------------------------


def test_r112_the_summary_is_wrapped_after_a_fixed_lead_in() -> None:
    assert summary_message_text("Goal: x") == (
        "The conversation history before this point was compacted into the following summary:"
        "\n\n<summary>\nGoal: x\n</summary>"
    )
