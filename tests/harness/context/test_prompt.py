"""System prompt sections and dynamic tools (R77-R82): replay and planning."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_durable_tui.harness.context._context import ContextView
from pi_durable_tui.harness.context._prompt import (
    SYSTEM_ENTRY_KIND,
    SystemEntryDraft,
    plan_system_entries,
    render_section,
)
from pi_durable_tui.harness.context._prompt_state import replay_prompt
from pi_durable_tui.kernel import Ownerless, Session
from pi_durable_tui.storage import EntryRecord, Json, JsonObject, MemoryStorage
from tests.harness.transcript import (
    assistant_entry,
    entry,
    system_entry,
    tool,
    user,
    user_entry,
    view_of,
)


def shown() -> ContextView:
    """A context whose prompt shows sections a, b, c and tools read, bash."""
    base = system_entry(3, {"a": "A", "b": "B", "c": "C"}, tools_added=[tool("read"), tool("bash")])
    return view_of(user_entry(2, "hi"), base, assistant_entry(4, "hello"))


def messages(drafts: list[SystemEntryDraft]) -> list[JsonObject]:
    assert all(len(draft.model) == 1 for draft in drafts)
    return [draft.model[0] for draft in drafts]


def applied(view: ContextView, drafts: list[SystemEntryDraft]) -> ContextView:
    """The context after appending the planned entries."""
    next_id = max(e.id for e in view.entries) + 1
    new = [
        EntryRecord(
            next_id + i,
            1,
            "pi.system",
            model=list[Json](d.model),
            edits=None if d.edits is None else list[Json](d.edits),
        )
        for i, d in enumerate(drafts)
    ]
    return view_of(*sorted([*view.entries, *new], key=lambda e: e.id))


# --- R78: rendering ----------------------------------------------------------------------


def test_r78_a_tagged_section_is_wrapped_in_its_key_and_an_untagged_one_is_not() -> None:
    assert render_section("env", "cwd: /x") == "<env>\ncwd: /x\n</env>"
    assert render_section("env", "cwd: /x", tag=False) == "cwd: /x"


# --- R79: replay -------------------------------------------------------------------------


def test_r79_a_section_string_replaces_in_place_and_null_then_re_add_appends() -> None:
    state = replay_prompt(
        [
            {"role": "system", "content": "", "sections": {"a": "1", "b": "2", "c": "3"}},
            user("ignored"),
            {"role": "system", "content": "", "sections": {"a": "1'", "b": None}},
            {"role": "system", "content": "", "sections": {"b": "2'"}},
        ]
    )

    assert list(state.sections.items()) == [("a", "1'"), ("c", "3"), ("b", "2'")]


def test_r79_tool_removals_apply_before_additions_in_one_message() -> None:
    state = replay_prompt(
        [
            {"role": "system", "content": "", "tools_added": [tool("read"), tool("bash")]},
            {
                "role": "system",
                "content": "",
                "tools_added": [tool("read", "new read")],
                "tools_removed": [{"name": "read"}],
            },
        ]
    )

    assert [(t["name"], t["description"]) for t in state.tool_specs] == [
        ("bash", "The bash tool."),
        ("read", "new read"),
    ]


def test_r80_a_removal_stored_as_a_bare_name_by_an_older_store_replays_the_same() -> None:
    state = replay_prompt(
        [
            {"role": "system", "content": "", "tools_added": [tool("read"), tool("bash")]},
            {"role": "system", "content": "", "tools_removed": ["read"]},
        ]
    )

    assert [t["name"] for t in state.tool_specs] == ["bash"]


def test_r79_non_empty_content_appends_instructions_ahead_of_the_sections() -> None:
    state = replay_prompt(
        [
            {"role": "system", "content": "Be brief.", "sections": {"a": "<a>\nA\n</a>"}},
            {"role": "system", "content": "Be kind."},
        ]
    )

    assert state.text() == "Be brief.\n\nBe kind.\n\n<a>\nA\n</a>"


# --- R77: only differences are appended --------------------------------------------------


def test_r77_an_unchanged_prompt_appends_nothing() -> None:
    assert (
        plan_system_entries(
            shown(), [("a", "A"), ("b", "B"), ("c", "C")], [tool("read"), tool("bash")]
        )
        == []
    )


def test_r77_a_transcript_with_no_sections_and_no_tools_appends_nothing() -> None:
    assert plan_system_entries(view_of(user_entry(2, "hi")), [], []) == []


def test_r77_the_first_preparation_writes_every_section_and_tool_in_one_entry() -> None:
    drafts = plan_system_entries(
        view_of(user_entry(2, "hi")), [("a", "A"), ("b", "B")], [tool("read")]
    )

    assert messages(drafts) == [
        {
            "role": "system",
            "content": "",
            "sections": {"a": "A", "b": "B"},
            "tools_added": [tool("read")],
            "tools_removed": [],
        }
    ]
    assert drafts[0].edits is None


# --- R80: planning -----------------------------------------------------------------------


def test_r80_changed_values_and_removals_become_one_minimal_patch() -> None:
    drafts = plan_system_entries(
        shown(), [("a", "A2"), ("c", "C"), ("d", "D")], [tool("read"), tool("bash")]
    )

    assert messages(drafts) == [
        {
            "role": "system",
            "content": "",
            "sections": {"a": "A2", "b": None, "d": "D"},
            "tools_added": [],
            "tools_removed": [],
        }
    ]


def test_r80_a_new_order_removes_every_shown_section_then_re_adds_every_desired_one() -> None:
    drafts = plan_system_entries(
        shown(), [("b", "B"), ("a", "A"), ("c", "C")], [tool("read"), tool("bash")]
    )

    assert [m["sections"] for m in messages(drafts)] == [
        {"a": None, "b": None, "c": None},
        {"b": "B", "a": "A", "c": "C"},
    ]


def test_r80_tool_changes_ride_on_the_last_planned_entry() -> None:
    drafts = plan_system_entries(shown(), [("c", "C"), ("a", "A"), ("b", "B")], [tool("read")])

    first, last = messages(drafts)
    assert (first["tools_added"], first["tools_removed"]) == ([], [])
    assert (last["tools_added"], last["tools_removed"]) == ([], [{"name": "bash"}])


def test_r80_tool_changes_alone_get_an_entry_of_their_own() -> None:
    drafts = plan_system_entries(
        shown(), [("a", "A"), ("b", "B"), ("c", "C")], [tool("read"), tool("bash"), tool("edit")]
    )

    assert messages(drafts) == [
        {
            "role": "system",
            "content": "",
            "sections": {},
            "tools_added": [tool("edit")],
            "tools_removed": [],
        }
    ]


def test_r80_a_changed_declaration_is_removed_and_re_added_in_the_same_message() -> None:
    changed = tool("bash", "Run a command, now with a timeout.", timeout={"type": "number"})
    drafts = plan_system_entries(
        shown(), [("a", "A"), ("b", "B"), ("c", "C")], [tool("read"), changed]
    )

    (message,) = messages(drafts)
    assert (message["tools_removed"], message["tools_added"]) == ([{"name": "bash"}], [changed])


def test_r80_when_appending_cannot_give_the_desired_order_all_tools_are_reset() -> None:
    drafts = plan_system_entries(
        shown(), [("a", "A"), ("b", "B"), ("c", "C")], [tool("bash"), tool("read")]
    )

    (message,) = messages(drafts)
    assert message["tools_removed"] == [{"name": "read"}, {"name": "bash"}]
    assert message["tools_added"] == [tool("bash"), tool("read")]


def test_r80_declarations_are_compared_and_written_without_application_metadata() -> None:
    desired = [{**tool("read"), "replay": "safe"}, {**tool("bash"), "execute": "<fn>"}]
    assert plan_system_entries(shown(), [("a", "A"), ("b", "B"), ("c", "C")], desired) == []

    drafts = plan_system_entries(view_of(user_entry(2, "hi")), [], desired)
    assert messages(drafts)[0]["tools_added"] == [tool("read"), tool("bash")]


@pytest.mark.parametrize(
    ("sections", "tools", "message"),
    [
        ([("a", "1"), ("a", "2")], [], "Section 'a' is given twice"),
        ([], [tool("read"), tool("read")], "Tool 'read' is given twice"),
        ([], [{"description": "no name"}], "needs a non-empty string 'name'"),
    ],
)
def test_r80_duplicate_keys_and_nameless_tools_are_refused(
    sections: list[tuple[str, str]], tools: list[JsonObject], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        plan_system_entries(shown(), sections, tools)


# --- R81: head rebaseline ------------------------------------------------------------------


def compacted(*after: EntryRecord) -> ContextView:
    """Sections a, b and tool read were shown; a summary kept entries from 3 (a system entry)."""
    return view_of(
        user_entry(2, "hi"),
        system_entry(3, {"a": "A", "b": "B"}, tools_added=[tool("read")]),
        assistant_entry(4, "hello"),
        system_entry(5, {"b": None}),
        entry(6, "pi.compaction", user("summary"), head=3),
        *after,
    )


def test_r81_after_a_head_marker_an_unchanged_prompt_is_rewritten_as_a_complete_baseline() -> None:
    drafts = plan_system_entries(compacted(user_entry(7, "next")), [("a", "A")], [tool("read")])

    assert messages(drafts) == [
        {
            "role": "system",
            "content": "",
            "sections": {"a": "A"},
            "tools_added": [tool("read")],
            "tools_removed": [],
        }
    ]
    assert drafts[0].edits == [{"target": 3, "action": "omit"}, {"target": 5, "action": "omit"}]


def test_r81_the_baseline_replays_to_exactly_the_desired_prompt() -> None:
    view = compacted()
    drafts = plan_system_entries(view, [("c", "C"), ("a", "A2")], [tool("edit")])

    state = replay_prompt(applied(view, drafts).messages)
    assert list(state.sections.items()) == [("c", "C"), ("a", "A2")]
    assert [t["name"] for t in state.tool_specs] == ["edit"]


def test_r81_once_a_system_entry_follows_the_marker_planning_patches_again() -> None:
    view = compacted()
    view = applied(view, plan_system_entries(view, [("a", "A")], [tool("read")]))

    assert plan_system_entries(view, [("a", "A")], [tool("read")]) == []
    drafts = plan_system_entries(view, [("a", "A2")], [tool("read")])
    assert [(m["sections"], d.edits) for m, d in zip(messages(drafts), drafts, strict=True)] == [
        ({"a": "A2"}, None)
    ]


def test_r81_a_reset_with_nothing_shown_and_nothing_desired_appends_nothing() -> None:
    view = view_of(user_entry(2, "hi"), entry(3, "pi.reset", user("handoff"), head=3))

    assert plan_system_entries(view, [], []) == []


def test_r81_a_baseline_with_nothing_desired_still_omits_the_earlier_system_entries() -> None:
    drafts = plan_system_entries(compacted(), [], [])

    assert messages(drafts)[0]["sections"] == {}
    assert drafts[0].edits == [{"target": 3, "action": "omit"}, {"target": 5, "action": "omit"}]


# --- the plan always reaches the desired prompt ------------------------------------------

KEYS = st.sampled_from("abcdef")
SECTIONS = st.lists(st.tuples(KEYS, st.sampled_from(["1", "2"])), unique_by=lambda p: p[0])
TOOLS = st.lists(
    st.builds(
        lambda name, text: tool(name, text),
        st.sampled_from(["r", "w", "e", "b"]),
        st.sampled_from(["x", "y"]),
    ),
    unique_by=lambda t: t["name"],
)


@settings(max_examples=150, deadline=None)
@given(shown_sections=SECTIONS, shown_tools=TOOLS, sections=SECTIONS, tools=TOOLS)
def test_r80_any_plan_replays_to_the_desired_sections_and_tools_in_order(
    shown_sections: list[tuple[str, str]],
    shown_tools: list[JsonObject],
    sections: list[tuple[str, str]],
    tools: list[JsonObject],
) -> None:
    view = view_of(user_entry(2, "hi"))
    view = applied(view, plan_system_entries(view, shown_sections, shown_tools))

    drafts = plan_system_entries(view, sections, tools)
    state = replay_prompt(applied(view, drafts).messages)

    assert list(state.sections.items()) == sections
    assert state.tool_specs == tools
    assert len(drafts) <= 2
    if shown_sections == sections and shown_tools == tools:
        assert drafts == []


@pytest.fixture
async def session() -> AsyncIterator[Session]:
    opened = await Session.open(MemoryStorage())
    yield opened
    await opened.close()


async def test_a_stored_system_entry_never_aliases_the_declaration_it_was_planned_from(
    session: Session,
) -> None:
    # Tools hand their shared declaration (``Tool.declaration``) to the planner; a
    # stored message that aliased it would change every later request's tool. The
    # draft shares it read-only; the commit that stores it copies it.
    declaration = tool("edit")
    drafts = plan_system_entries(
        shown(), [("a", "A"), ("b", "B"), ("c", "C")], [tool("read"), tool("bash"), declaration]
    )
    conversation = await session.commit(lambda tx: tx.create_conversation(Ownerless()))
    entry = await session.commit(
        lambda tx: tx.append(conversation.id, SYSTEM_ENTRY_KIND, model=drafts[0].model)
    )
    parameters: Any = declaration["parameters"]
    parameters["changed"] = True
    stored = await session.storage.entry(entry.id)

    assert stored is not None
    for model in (stored.entry.model, entry.model):  # in the store, and as published
        message: Any = (model or [{}])[0]
        (added,) = message["tools_added"]
        assert added["name"] == "edit"
        assert "changed" not in added["parameters"]
