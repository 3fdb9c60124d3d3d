"""Cross-provider handoff: histories rewritten for the model they are sent to."""

from __future__ import annotations

import re
from typing import Any

from pi_durable_tui.ai import (
    AssistantMessage,
    ImageContent,
    Message,
    Model,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    transform_messages,
)
from pi_durable_tui.ai._handoff import normalize_tool_call_id
from pi_durable_tui.ai._types import AssistantContent

CLAUDE = Model(
    id="claude-x", api="anthropic-messages", provider="anthropic", input=["text", "image"]
)
GPT = Model(id="gpt-x", api="openai-responses", provider="openai")
CHAT = Model(id="local", api="openai-completions", provider="ollama")


def reply(
    model: Model, *content: AssistantContent, stop: StopReason = "stop", **extra: Any
) -> AssistantMessage:
    return AssistantMessage(
        api=model.api,
        provider=model.provider,
        model=model.id,
        content=list(content),
        stop_reason=stop,
        **extra,
    )


def result(call_id: str, text: str = "ok") -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call_id, tool_name="read", content=[TextContent(text=text)]
    )


def test_thinking_from_another_model_becomes_text_and_redacted_or_empty_thinking_is_dropped() -> (
    None
):
    history: list[Message] = [
        UserMessage(content="hi"),
        reply(
            GPT,
            ThinkingContent(thinking="Plan: read.", thinking_signature='{"type":"reasoning"}'),
            ThinkingContent(thinking="[Reasoning redacted]", thinking_signature="x", redacted=True),
            ThinkingContent(thinking="  "),
            TextContent(text="Done.", text_signature="msg_1"),
        ),
    ]

    moved = transform_messages(history, CLAUDE)

    assert moved[1].content == [TextContent(text="Plan: read."), TextContent(text="Done.")]
    assert history[1].content[0] == ThinkingContent(
        thinking="Plan: read.", thinking_signature='{"type":"reasoning"}'
    )


def test_thinking_of_the_same_model_keeps_its_signature_and_the_message_is_unchanged() -> None:
    same = reply(
        CLAUDE,
        ThinkingContent(thinking="Plan.", thinking_signature="sig"),
        ThinkingContent(thinking="[Reasoning redacted]", thinking_signature="data", redacted=True),
        TextContent(text="Done."),
    )

    moved = transform_messages([UserMessage(content="hi"), same], CLAUDE)

    assert moved[1] is same


def test_anthropic_ids_keep_only_allowed_characters_and_at_most_64_of_them() -> None:
    long_id = "call_" + "z" * 100
    history: list[Message] = [
        UserMessage(content="go"),
        reply(
            GPT,
            ToolCall(id="call_abc|fc_123", name="read"),
            ToolCall(id="call.with:odd/chars", name="read"),
            ToolCall(id=long_id, name="read"),
            stop="toolUse",
        ),
        result("call_abc|fc_123"),
        result("call.with:odd/chars"),
        result(long_id),
    ]

    moved = transform_messages(history, CLAUDE)

    calls = moved[1].content
    ids = [call.id for call in calls if isinstance(call, ToolCall)]
    assert ids[:2] == ["call_abc", "call_with_odd_chars"]
    assert len(ids[2]) == 64
    assert ids[2].startswith("call_zzz")
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", call_id) for call_id in ids)
    assert [m.tool_call_id for m in moved[2:] if isinstance(m, ToolResultMessage)] == ids
    assert normalize_tool_call_id(long_id, CLAUDE, same_model=False) == ids[2]


def test_responses_ids_keep_the_item_only_for_the_same_model() -> None:
    own = normalize_tool_call_id("call_1|fc_1", GPT, same_model=True)
    foreign = normalize_tool_call_id("call_1|fc_1", GPT, same_model=False)
    from_claude = normalize_tool_call_id("toolu_01", GPT, same_model=False)

    assert own == "call_1|fc_1"
    assert re.fullmatch(r"call_1\|fc_[0-9a-f]{24}", foreign)
    assert foreign != own
    assert re.fullmatch(r"toolu_01\|fc_[0-9a-f]{24}", from_claude)
    assert normalize_tool_call_id("toolu_01", GPT, same_model=False) == from_claude


def test_chat_completions_ids_drop_the_item_part_and_stay_within_40_characters() -> None:
    assert normalize_tool_call_id("call_1|fc_1", CHAT, same_model=False) == "call_1"
    assert len(normalize_tool_call_id("c" * 90, CHAT, same_model=False)) == 40


def test_errored_and_aborted_turns_are_dropped_with_the_results_of_their_calls() -> None:
    history: list[Message] = [
        UserMessage(content="go"),
        reply(CLAUDE, TextContent(text="partial"), ToolCall(id="t1", name="read"), stop="aborted"),
        result("t1"),
        reply(CLAUDE, TextContent(text="Overloa"), stop="error", error_message="529"),
        UserMessage(content="again"),
        reply(CLAUDE, TextContent(text="Fine.")),
    ]

    moved = transform_messages(history, CLAUDE)

    assert [m.role for m in moved] == ["user", "user", "assistant"]
    assert moved[2].content == [TextContent(text="Fine.")]


def test_a_tool_call_without_a_result_gets_a_synthetic_error_before_the_next_turn() -> None:
    history: list[Message] = [
        UserMessage(content="go"),
        reply(
            CLAUDE,
            ToolCall(id="t1", name="read"),
            ToolCall(id="t2", name="bash"),
            stop="toolUse",
            timestamp=42,
        ),
        result("t1"),
        UserMessage(content="stop that"),
        reply(CLAUDE, ToolCall(id="t3", name="read"), stop="toolUse"),
    ]

    moved = transform_messages(history, CLAUDE)

    assert [m.role for m in moved] == [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "user",
        "assistant",
        "toolResult",
    ]
    assert moved[3] == ToolResultMessage(
        tool_call_id="t2",
        tool_name="bash",
        content=[TextContent(text="No result provided")],
        is_error=True,
        timestamp=42,
    )
    assert isinstance(moved[6], ToolResultMessage)
    assert (moved[6].tool_call_id, moved[6].is_error) == ("t3", True)


def test_a_duplicate_result_is_dropped() -> None:
    history: list[Message] = [
        UserMessage(content="go"),
        reply(CLAUDE, ToolCall(id="t1", name="read"), stop="toolUse"),
        result("t1", "first"),
        result("t1", "second"),
    ]

    moved = transform_messages(history, CLAUDE)

    assert [m.content for m in moved[2:]] == [[TextContent(text="first")]]


def test_images_become_a_placeholder_for_a_model_without_image_input() -> None:
    image = ImageContent(data="QUJD", mime_type="image/png")
    history: list[Message] = [
        UserMessage(content=[TextContent(text="look"), image]),
        reply(CHAT, ToolCall(id="t1", name="shot"), stop="toolUse"),
        ToolResultMessage(tool_call_id="t1", tool_name="shot", content=[image]),
    ]

    for_text_model = transform_messages(history, CHAT)
    for_image_model = transform_messages(history, CLAUDE)

    placeholder = TextContent(text="(image omitted: this model does not accept images)")
    assert for_text_model[0].content == [TextContent(text="look"), placeholder]
    assert for_text_model[2].content == [placeholder]
    assert for_image_model[0] is history[0]
    assert for_image_model[2].content == [image]
