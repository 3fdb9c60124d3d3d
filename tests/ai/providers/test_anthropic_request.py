"""What the Anthropic Messages provider sends: body, headers, caching and thinking."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from pi_durable_tui.ai import (
    AssistantMessage,
    Context,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from pi_durable_tui.ai.providers import AnthropicProvider
from tests.ai.providers.test_anthropic import ANTHROPIC
from tests.ai.providers.wire import HELLO, READ_TOOL
from tests.ai.sse_server import SseServer
from tests.ai.streams import collect, final, summary


async def test_the_request_sends_system_prompt_tools_history_and_cache_breakpoints(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(ANTHROPIC.api, "text")
    history = Context(
        system_prompt="You are terse.",
        tools=[READ_TOOL],
        messages=[
            UserMessage(content="Read it"),
            AssistantMessage(
                api=ANTHROPIC.api,
                provider="anthropic",
                model="test-model",
                stop_reason="toolUse",
                content=[
                    ThinkingContent(thinking="I should read.", thinking_signature="sig-1"),
                    TextContent(text="Reading."),
                    ToolCall(id="toolu_9", name="read", arguments={"path": "a.py"}),
                    ToolCall(id="toolu_10", name="read", arguments={"path": "b.py"}),
                ],
            ),
            ToolResultMessage(
                tool_call_id="toolu_9", tool_name="read", content=[TextContent(text="A")]
            ),
            ToolResultMessage(
                tool_call_id="toolu_10",
                tool_name="read",
                content=[TextContent(text="no such file")],
                is_error=True,
            ),
            UserMessage(content="Now summarize \ud83d it"),
        ],
    )

    options = StreamOptions(max_tokens=1000, temperature=0.2)
    await ANTHROPIC.run(sse_server, http_client, history, options)

    request = sse_server.requests[0]
    assert (request.method, request.path) == ("POST", "/v1/messages")
    assert request.headers["x-api-key"] == ANTHROPIC.key
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "anthropic-beta" not in request.headers
    ephemeral = {"type": "ephemeral"}
    assert request.json() == {
        "model": "test-model",
        "max_tokens": 1000,
        "stream": True,
        "temperature": 0.2,
        "system": [{"type": "text", "text": "You are terse.", "cache_control": ephemeral}],
        "tools": [
            {
                "name": "read",
                "description": "Read a file",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
            }
        ],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Read it"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "I should read.", "signature": "sig-1"},
                    {"type": "text", "text": "Reading."},
                    {
                        "type": "tool_use",
                        "id": "toolu_9",
                        "name": "read",
                        "input": {"path": "a.py"},
                    },
                    {
                        "type": "tool_use",
                        "id": "toolu_10",
                        "name": "read",
                        "input": {"path": "b.py"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_9",
                        "content": [{"type": "text", "text": "A"}],
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_10",
                        "content": [{"type": "text", "text": "no such file"}],
                        "is_error": True,
                        "cache_control": ephemeral,
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Now summarize  it", "cache_control": ephemeral}
                ],
            },
        ],
    }


@pytest.mark.parametrize(
    ("retention", "marker"),
    [("long", {"type": "ephemeral", "ttl": "1h"}), ("none", None)],
)
async def test_cache_retention_long_marks_one_hour_and_none_sends_no_marker(
    sse_server: SseServer,
    http_client: httpx.AsyncClient,
    retention: Any,
    marker: dict[str, str] | None,
) -> None:
    sse_server.sse(ANTHROPIC.api, "text")
    context = Context(tools=[READ_TOOL], messages=[UserMessage(content="hi")])

    await ANTHROPIC.run(sse_server, http_client, context, StreamOptions(cache_retention=retention))

    body = sse_server.requests[0].json()
    assert "system" not in body
    assert body["tools"][-1].get("cache_control") == marker
    assert body["messages"][-1]["content"][-1].get("cache_control") == marker


async def test_budget_thinking_raises_max_tokens_drops_temperature_and_asks_interleaving(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(ANTHROPIC.api, "thinking")
    context = Context(tools=[READ_TOOL], messages=[UserMessage(content="hi")])
    options = StreamOptions(reasoning="medium", max_tokens=4000, temperature=0.5)

    await ANTHROPIC.run(sse_server, http_client, context, options, reasoning=True)

    request = sse_server.requests[0]
    body = request.json()
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert body["max_tokens"] == 12192
    assert "temperature" not in body
    assert "output_config" not in body
    assert request.headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"


async def test_adaptive_thinking_sends_an_effort_and_the_level_off_disables_thinking(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(ANTHROPIC.api, "text")
    sse_server.sse(ANTHROPIC.api, "text")
    fields: dict[str, Any] = {
        "reasoning": True,
        "thinking_levels": ["off", "low", "medium", "high", "xhigh"],
        "compat": {"adaptive_thinking": True, "xhigh_effort": "max"},
    }

    await ANTHROPIC.run(sse_server, http_client, HELLO, StreamOptions(reasoning="xhigh"), **fields)
    await ANTHROPIC.run(sse_server, http_client, HELLO, StreamOptions(reasoning="off"), **fields)

    adaptive, disabled = (request.json() for request in sse_server.requests)
    assert adaptive["thinking"] == {"type": "adaptive"}
    assert adaptive["output_config"] == {"effort": "max"}
    assert adaptive["max_tokens"] == 32000
    assert disabled["thinking"] == {"type": "disabled"}
    assert "output_config" not in disabled


async def test_without_a_key_for_the_official_endpoint_nothing_is_sent(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    official = Model(id="claude-x", api=ANTHROPIC.api, provider="anthropic")
    stream = AnthropicProvider(lambda name: None, http_client).stream(
        official, HELLO, StreamOptions()
    )

    events = await collect(stream)

    assert summary(events) == [("start", None), ("error", None)]
    assert final(events).error_message == (
        "No API key for provider 'anthropic': set ANTHROPIC_API_KEY"
    )
    assert sse_server.requests == []
