"""Shared helpers for the faux provider, script and catalog tests (not a conftest)."""

from __future__ import annotations

import asyncio
from typing import Any

from pi_durable_tui.ai.events import AssistantEvent, AssistantStream
from pi_durable_tui.ai.types import (
    AssistantMessage,
    Context,
    Message,
    TextContent,
    ToolResultMessage,
    UserMessage,
)


class RecordingSleep:
    """A fake ``sleep`` that records what was asked and returns at once."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        await asyncio.sleep(0)

    @property
    def total(self) -> float:
        return sum(self.calls)


async def collect(stream: AssistantStream) -> list[AssistantEvent]:
    return [event async for event in stream]


def kinds(events: list[AssistantEvent]) -> list[tuple[str, int | None]]:
    """Event types with their content index (None for start and terminal events)."""
    return [(event.type, getattr(event, "content_index", None)) for event in events]


def user_context(*texts: str, system: str | None = None) -> Context:
    messages: list[Message] = [UserMessage(content=text) for text in texts]
    return Context(system_prompt=system, messages=messages)


def continue_with_tool_result(
    context: Context, answer: AssistantMessage, result_text: str
) -> Context:
    """The next request of a tool loop: the answer and one result per tool call."""
    messages: list[Any] = [*context.messages, answer]
    for call in answer.tool_calls():
        messages.append(
            ToolResultMessage(
                tool_call_id=call.id,
                tool_name=call.name,
                content=[TextContent(text=result_text)],
            )
        )
    return Context(system_prompt=context.system_prompt, messages=messages, tools=context.tools)
