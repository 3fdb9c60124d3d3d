"""A derived context grown by newer entries equals the context derived whole (R72-R76, R127).

``extend_range`` orders only the messages from the last assistant message on;
these tests hold it to ``derive_range`` of the whole grown range, on examples and
on generated transcripts (tool rounds with missing and orphan results, aborted
answers, system entries with edits, head markers), split at every point.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from pi_durable_tui.harness.context._context import (
    ContextView,
    DerivedRange,
    active_range,
    derive_range,
    extend_range,
)
from pi_durable_tui.harness.context._loading import RangeCache, load_context
from pi_durable_tui.harness.context._prompt_state import replay_prompt
from pi_durable_tui.storage import (
    ConversationRecord,
    EntryRecord,
    MemoryStorage,
    PutConversation,
    PutEntry,
)
from tests.harness.transcript import (
    assistant_entry,
    entry,
    result_entry,
    system_entry,
    texts,
    user,
    user_entry,
)


def same_view(left: ContextView, right: ContextView) -> bool:
    return (
        left.head == right.head
        and [e.id for e in left.entries] == [e.id for e in right.entries]
        and left.contributions == right.contributions
        and left.messages == right.messages
        and left.prompt == right.prompt
    )


def grown(visible: list[EntryRecord], split: int) -> DerivedRange | None:
    return extend_range(derive_range(active_range(visible[:split])), visible[split:])


TOOL_ROUND = [
    user_entry(2, "go"),
    assistant_entry(3, calls=[("c1", "read"), ("c2", "bash")]),
    result_entry(4, "c2", "bash"),
    user_entry(5, "steer"),
    result_entry(6, "c1"),
    assistant_entry(7, "done"),
]


def test_a_range_grown_by_a_tool_round_derives_what_a_whole_derivation_does() -> None:
    whole = derive_range(active_range(TOOL_ROUND)).view
    for split in range(2, len(TOOL_ROUND)):
        extended = grown(TOOL_ROUND, split)

        assert extended is not None, split
        assert same_view(extended.view, whole), split
    assert texts(whole.messages) == [
        "user:go",
        "assistant:c1+c2",
        "result:c1",
        "result:c2",
        "user:steer",
        "assistant:done",
    ]


def test_growing_leaves_the_earlier_derivation_as_it_was() -> None:
    before = derive_range(active_range(TOOL_ROUND[:3]))
    messages, contributions = list(before.view.messages), dict(before.view.contributions)

    extend_range(before, TOOL_ROUND[3:])

    assert before.view.messages == messages
    assert before.view.contributions == contributions


def test_a_new_head_marker_or_an_edit_of_an_older_entry_needs_a_whole_derivation() -> None:
    base = derive_range(active_range(TOOL_ROUND[:3]))
    marker = entry(8, "pi.compaction", user("summary"), head=3)
    omit_older = system_entry(8, {"s": "x"}, edits=[{"target": 2, "action": "omit"}])

    assert extend_range(base, [marker]) is None
    assert extend_range(base, [omit_older]) is None
    assert extend_range(base, [user_entry(3, "out of order")]) is None


def test_an_edit_of_an_entry_added_with_it_applies_r72() -> None:
    visible = [
        *TOOL_ROUND[:3],
        user_entry(5, "drop me"),
        system_entry(6, {"s": "x"}, edits=[{"target": 5, "action": "omit"}]),
    ]

    extended = grown(visible, 3)

    assert extended is not None
    assert extended.view.contributions[5] == []
    assert same_view(extended.view, derive_range(active_range(visible)).view)


def test_a_range_without_an_assistant_message_yet_is_derived_whole() -> None:
    assert grown([user_entry(2, "a"), user_entry(3, "b")], 1) is None


async def test_a_cached_context_read_after_a_tool_round_equals_an_uncached_one() -> None:
    storage = MemoryStorage()
    await storage.commit([PutConversation(ConversationRecord(1)), *map(PutEntry, TOOL_ROUND[:2])])
    cache = RangeCache()
    await load_context(storage, 1, cache=cache)
    await storage.commit([PutEntry(record) for record in TOOL_ROUND[2:]])

    cached = await load_context(storage, 1, cache=cache)

    assert same_view(cached, await load_context(storage, 1))


# --- generated transcripts -------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    kind: str
    choice: int


steps = st.lists(
    st.builds(
        Step,
        st.sampled_from(
            ["user", "answer", "calls", "aborted", "result", "orphan", "system", "edit", "marker"]
        ),
        st.integers(0, 5),
    ),
    min_size=1,
    max_size=24,
)


def transcript(plan: list[Step]) -> list[EntryRecord]:
    """Entries from a plan: ascending IDs from 2, calls numbered, results picking a call."""
    made: list[EntryRecord] = []
    calls: list[str] = []
    for number, step in enumerate(plan, start=2):
        match step.kind:
            case "user":
                made.append(user_entry(number, f"u{number}"))
            case "answer":
                made.append(assistant_entry(number, f"a{number}"))
            case "calls":
                ids = [f"c{number}.{n}" for n in range(1 + step.choice % 3)]
                calls += ids
                made.append(assistant_entry(number, calls=[(cid, "read") for cid in ids]))
            case "aborted":
                made.append(assistant_entry(number, f"x{number}", stop_reason="aborted"))
            case "result" if calls:
                made.append(result_entry(number, calls[step.choice % len(calls)]))
            case "orphan" | "result":
                made.append(result_entry(number, f"orphan{number}"))
            case "system":  # a few keys, set, replaced and removed (R79)
                value = None if step.choice == 5 else f"x{number}"
                made.append(system_entry(number, {f"s{step.choice % 3}": value}))
            case "edit":
                # Targets anything from the first entry to a few entries ahead.
                target = 2 + (number * 7 + step.choice) % (number + 2)
                action = "omit" if step.choice % 2 else "replace"
                edit = {"target": target, "action": action}
                if action == "replace":
                    edit["messages"] = [user(f"replaced by {number}")]
                made.append(system_entry(number, {f"e{number}": "x"}, edits=[edit]))
            case _:
                made.append(entry(number, "pi.compaction", user("summary"), head=2 + step.choice))
    return made


@settings(max_examples=300, deadline=None)
@given(steps)
def test_any_transcript_grown_at_any_point_derives_what_a_whole_derivation_does(
    plan: list[Step],
) -> None:
    visible = transcript(plan)
    whole = derive_range(active_range(visible))
    for split in range(1, len(visible)):
        extended = grown(visible, split)
        if extended is not None:
            assert same_view(extended.view, whole.view), (split, texts(whole.view.messages))
            assert extended.view.prompt == replay_prompt(whole.view.messages)
            assert extended.settled >= 0
