"""``PromptSizes`` counts what ``serialize_context`` would build, without building it."""

from __future__ import annotations

from pi_durable_tui.ai import (
    AssistantMessage,
    Context,
    ImageContent,
    TextContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from pi_durable_tui.ai.faux._prompt_size import PromptSizes
from pi_durable_tui.ai.faux._steps import serialize_context


def _context(rounds: int) -> Context:
    messages: list[object] = [UserMessage(content="read it\nall")]
    for index in range(rounds):
        messages.append(
            AssistantMessage(
                api="faux",
                provider="faux",
                model="faux-1",
                content=[
                    TextContent(text=f"round {index}"),
                    ToolCall(id=f"c{index}", name="read", arguments={"path": "a"}),
                ],
            )
        )
        messages.append(
            ToolResultMessage(
                tool_call_id=f"c{index}",
                tool_name="read",
                content=[
                    TextContent(text="hello é\n" * 3),
                    ImageContent(data="AA", mime_type="image/png"),
                ],
            )
        )
    tool = ToolSpec(name="read", description="Read a file.", parameters={"type": "object"})
    return Context(system_prompt="be brief", messages=messages, tools=[tool])  # type: ignore[arg-type]


def test_the_count_equals_the_length_of_the_serialised_context() -> None:
    sizes = PromptSizes()
    for rounds in (0, 1, 5):
        context = _context(rounds)
        assert sizes.chars(context) == len(serialize_context(context))


def test_a_grown_context_counts_its_new_messages_on_top_of_the_remembered_ones() -> None:
    sizes = PromptSizes()
    context = _context(3)
    assert sizes.chars(context) == len(serialize_context(context))
    grown = context.model_copy(
        update={"messages": [*context.messages, UserMessage(content="and more")]}
    )

    assert sizes.chars(grown) == len(serialize_context(grown))
    assert sizes.chars(Context(messages=[])) == len(serialize_context(Context(messages=[])))


def test_a_context_that_replaced_or_dropped_earlier_messages_is_counted_anew() -> None:
    sizes = PromptSizes()
    context = _context(3)
    sizes.chars(context)
    compacted = context.model_copy(
        update={"messages": [UserMessage(content="summary"), *context.messages[3:]]}
    )
    assert sizes.chars(compacted) == len(serialize_context(compacted))
    shorter = context.model_copy(update={"messages": context.messages[:2]})
    assert sizes.chars(shorter) == len(serialize_context(shorter))
    assert sizes.chars(context) == len(serialize_context(context))


def test_equal_copies_of_the_tools_count_as_the_tools_did() -> None:
    sizes = PromptSizes()
    context = _context(2)
    sizes.chars(context)
    copied = context.model_copy(update={"tools": [t.model_copy(deep=True) for t in context.tools]})
    assert sizes.chars(copied) == len(serialize_context(copied))
    other = ToolSpec(name="write", description="Write a file.", parameters={"type": "object"})
    more = context.model_copy(update={"tools": [*context.tools, other]})
    assert sizes.chars(more) == len(serialize_context(more))
    fewer = context.model_copy(update={"tools": []})
    assert sizes.chars(fewer) == len(serialize_context(fewer))
