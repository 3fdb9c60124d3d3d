"""Request contexts the faux, script and model tests build: user turns and tool rounds."""

from __future__ import annotations

from pi_durable_tui.ai import (
    AssistantMessage,
    Context,
    Message,
    TextContent,
    ToolResultMessage,
    UserMessage,
)


def user_context(*texts: str, system: str | None = None) -> Context:
    """A context of one user message per text."""
    messages: list[Message] = [UserMessage(content=text) for text in texts]
    return Context(system_prompt=system, messages=messages)


def continue_with_tool_result(
    context: Context, answer: AssistantMessage, result_text: str
) -> Context:
    """The next request of a tool loop: the answer and one result per tool call."""
    messages: list[Message] = [*context.messages, answer]
    for call in answer.tool_calls():
        messages.append(
            ToolResultMessage(
                tool_call_id=call.id,
                tool_name=call.name,
                content=[TextContent(text=result_text)],
            )
        )
    return Context(system_prompt=context.system_prompt, messages=messages, tools=context.tools)
