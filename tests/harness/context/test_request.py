"""Turning a context's messages into one model request (R75, R79, R89)."""

from __future__ import annotations

import pytest

from pi_durable_tui.ai import AssistantMessage, ToolResultMessage, ToolSpec, UserMessage
from pi_durable_tui.harness.context._request import ValidatedMessages, build_request
from pi_durable_tui.storage import JsonObject
from tests.harness.transcript import (
    assistant_entry,
    entry,
    result_entry,
    system_entry,
    tool,
    user,
    user_entry,
    view_of,
)

FIRST = (
    user_entry(2, "fix the test"),
    system_entry(
        3,
        {"role": "<role>\nYou code.\n</role>", "env": "<env>\n/x\n</env>"},
        tools_added=[tool("read"), tool("bash")],
    ),
    assistant_entry(4, calls=[("c1", "read")]),
    result_entry(5, "c1", text="file body"),
    assistant_entry(6, "fixed"),
)


def test_the_leading_system_message_becomes_the_system_prompt_and_the_tool_list() -> None:
    context = build_request(view_of(*FIRST).messages)

    assert context.system_prompt == "<role>\nYou code.\n</role>\n\n<env>\n/x\n</env>"
    assert [type(m) for m in context.messages] == [
        UserMessage,
        AssistantMessage,
        ToolResultMessage,
        AssistantMessage,
    ]
    assert context.tools == [
        ToolSpec.model_validate(tool("read")),
        ToolSpec.model_validate(tool("bash")),
    ]


def test_a_later_patch_becomes_a_system_update_message_and_keeps_the_prefix_stable() -> None:
    before = build_request(view_of(*FIRST).messages)
    patch = system_entry(7, {"env": "<env>\n/y\n</env>", "role": None})
    after = build_request(view_of(*FIRST, patch, user_entry(8, "again")).messages)

    assert after.system_prompt == before.system_prompt
    assert after.messages[: len(before.messages)] == before.messages
    update, last = after.messages[len(before.messages) :]
    assert isinstance(update, UserMessage)
    assert update.content[0].text == (  # type: ignore[union-attr]
        "<system-update>\n<env>\n/y\n</env>\n\nSection role removed.\n</system-update>"
    )
    assert last == UserMessage.model_validate(user("again"))


def test_consecutive_patches_become_one_update_in_their_order() -> None:
    remove_all = system_entry(7, {"role": None, "env": None})
    re_add = system_entry(8, {"env": "E", "role": "R"})

    context = build_request(view_of(*FIRST, remove_all, re_add).messages)

    assert context.messages[-1].content[0].text == (  # type: ignore[union-attr]
        "<system-update>\nSection role removed.\n\nSection env removed.\n\nE\n\nR\n</system-update>"
    )


def test_a_patch_that_changes_only_tools_changes_the_tool_list_and_adds_no_message() -> None:
    patch = system_entry(7, tools_removed=["bash"], tools_added=[tool("edit")])
    messages = view_of(*FIRST, patch).messages

    context = build_request(messages)

    assert len(context.messages) == 4
    assert [t.name for t in context.tools] == ["read", "edit"]
    assert [t["name"] for t in view_of(*FIRST, patch).prompt.tool_specs] == ["read", "edit"]


def test_a_rebaseline_after_kept_entries_still_becomes_the_system_prompt() -> None:
    # R81: after compaction the complete baseline lands after the kept entries; it
    # replays from nothing, so it is the whole prompt.
    view = view_of(
        *FIRST,
        entry(7, "pi.compaction", user("summary"), head=4),
        system_entry(8, {"role": "R2"}, tools_added=[tool("read")]),
    )

    context = build_request(view.messages)

    assert context.system_prompt == "R2"
    assert [type(m) for m in context.messages] == [
        UserMessage,
        AssistantMessage,
        ToolResultMessage,
        AssistantMessage,
    ]
    assert [t.name for t in context.tools] == ["read"]


def test_a_context_without_system_messages_has_no_system_prompt_and_no_tools() -> None:
    context = build_request(view_of(user_entry(2, "hi")).messages)

    assert (context.system_prompt, context.tools) == (None, [])
    assert len(context.messages) == 1


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ({"role": "user"}, r"Context message 1 \(role 'user'\) is not a valid model message"),
        ({"role": "narrator", "content": "x"}, r"role 'narrator'"),
        (
            {"role": "system", "content": "", "sections": {"a": 1}},
            "'sections' is not an object of strings and nulls",
        ),
        (
            {"role": "system", "content": "", "tools_added": [{"description": "x"}]},
            "'tools_added' is not a list of tool specs with a name",
        ),
        (
            {"role": "system", "content": "", "tools_removed": "bash"},
            "'tools_removed' is not a list of removed tools",
        ),
    ],
)
def test_a_malformed_message_is_refused_naming_its_index_and_what_is_wrong(
    message: JsonObject, error: str
) -> None:
    with pytest.raises(ValueError, match=error):
        build_request([user("hi"), message])


def test_a_later_request_reuses_the_validated_messages_of_the_same_stored_dicts_r127() -> None:
    cache = ValidatedMessages()
    messages = view_of(*FIRST).messages
    first = build_request(messages, cache)
    grown = [*messages, *view_of(user_entry(7, "again")).messages]

    second = build_request(grown, cache)

    assert all(a is b for a, b in zip(first.messages, second.messages, strict=False))
    assert second.messages[-1] == UserMessage.model_validate(user("again"))
    assert len(cache) == len(first.messages) + 1


def test_an_equal_but_different_dict_is_validated_again_not_taken_from_the_cache() -> None:
    cache = ValidatedMessages()
    stored = view_of(user_entry(2, "before")).messages
    build_request(stored, cache)
    changed = [{**stored[0], "content": "after"}]

    assert build_request(changed, cache).messages[0].content == "after"


def test_the_cache_forgets_the_least_recently_requested_messages_beyond_its_size() -> None:
    cache = ValidatedMessages(kept=2)
    messages = view_of(user_entry(2, "a"), user_entry(3, "b"), user_entry(4, "c")).messages

    build_request(messages, cache)

    assert len(cache) == 2


def test_a_cached_request_still_names_an_invalid_message() -> None:
    cache = ValidatedMessages()
    with pytest.raises(ValueError, match="Context message 0 \\(role 'assistant'\\)"):
        build_request([{"role": "assistant", "content": 3}], cache)


def test_a_request_that_grows_the_last_one_equals_the_same_request_built_from_nothing() -> None:
    cache = ValidatedMessages()
    # The last request ends in a system patch: the next one resumes inside that run.
    messages = view_of(*FIRST, system_entry(7, {"env": "<env>\n/y\n</env>"})).messages
    first = build_request(messages, cache)
    grown = [
        *messages,
        *view_of(
            system_entry(8, {"role": None}, tools_added=[tool("grep")]),
            user_entry(9, "again"),
            system_entry(10, {"note": "late"}),
        ).messages,
    ]

    second = build_request(grown, cache)

    assert first == build_request(messages)
    assert second == build_request(grown)
    assert build_request(grown, cache) == second


def test_a_request_not_beginning_with_the_last_ones_messages_is_built_from_its_start() -> None:
    cache = ValidatedMessages()
    messages = view_of(*FIRST).messages
    build_request(messages, cache)
    compacted = [*view_of(user_entry(9, "summary")).messages, *messages[3:]]

    assert build_request(compacted, cache) == build_request(compacted)


def test_a_malformed_message_after_a_remembered_prefix_is_refused_on_every_request() -> None:
    cache = ValidatedMessages()
    messages = view_of(*FIRST).messages
    build_request(messages, cache)
    grown = [*messages, {"role": "assistant", "content": 3}]

    for _ in range(2):
        with pytest.raises(ValueError, match=f"Context message {len(messages)} \\(role"):
            build_request(grown, cache)
