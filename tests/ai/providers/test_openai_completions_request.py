"""What the Chat Completions provider sends: body, headers and compat switches."""

from __future__ import annotations

import httpx

from pi_durable_tui.ai import (
    AssistantMessage,
    Context,
    ImageContent,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from tests.ai.providers.test_openai_completions import COMPLETIONS
from tests.ai.providers.wire import READ_TOOL
from tests.ai.sse_server import SseServer
from tests.ai.streams import collect


async def test_the_official_request_uses_developer_role_completion_tokens_and_effort(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(COMPLETIONS.api, "text")
    history = Context(
        system_prompt="You are terse.",
        tools=[READ_TOOL],
        messages=[
            UserMessage(content="Read it"),
            AssistantMessage(
                api=COMPLETIONS.api,
                provider="openai",
                model="test-model",
                stop_reason="toolUse",
                content=[
                    ThinkingContent(thinking="private"),
                    TextContent(text="Reading."),
                    ToolCall(id="call_1", name="read", arguments={"path": "a.png"}),
                ],
            ),
            ToolResultMessage(
                tool_call_id="call_1",
                tool_name="read",
                content=[
                    TextContent(text="an image"),
                    ImageContent(data="QUJD", mime_type="image/png"),
                ],
            ),
            UserMessage(content=[TextContent(text="What is it?")]),
        ],
    )
    official = COMPLETIONS.model(sse_server, reasoning=True, input=["text", "image"])
    # The official endpoint is recognised by "api.openai.com" in the base URL; a path
    # on the local server carrying that name gets the official defaults offline.
    official = official.model_copy(update={"base_url": sse_server.url + "/api.openai.com/v1"})
    options = StreamOptions(reasoning="high", max_tokens=500, session_id="s-1")

    await collect(COMPLETIONS.provider(http_client).stream(official, history, options))

    request = sse_server.requests[0]
    assert request.path == "/api.openai.com/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {COMPLETIONS.key}"
    assert request.json() == {
        "model": "test-model",
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_completion_tokens": 500,
        "reasoning_effort": "high",
        "prompt_cache_key": "s-1",
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read",
                    "description": "Read a file",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                },
            }
        ],
        "messages": [
            {"role": "developer", "content": "You are terse."},
            {"role": "user", "content": "Read it"},
            {
                "role": "assistant",
                "content": "Reading.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "read", "arguments": '{"path": "a.png"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "an image"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Images returned by the tool calls above:"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}},
                ],
            },
            {"role": "user", "content": "What is it?"},
        ],
    }


async def test_a_local_server_gets_system_role_max_tokens_no_key_and_its_compat_switches(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(COMPLETIONS.api, "text")
    local = COMPLETIONS.model(
        sse_server,
        provider="llama.cpp",
        reasoning=True,
        compat={"supportsUsageInStreaming": False, "requires_tool_result_name": True},
    )
    history = Context(
        system_prompt="sys",
        messages=[
            UserMessage(content="go"),
            AssistantMessage(
                api=COMPLETIONS.api,
                provider="llama.cpp",
                model="test-model",
                stop_reason="toolUse",
                content=[ToolCall(id="abc", name="bash", arguments={})],
            ),
        ],
    )
    options = StreamOptions(reasoning="off", max_tokens=100, session_id="s-1")

    await collect(COMPLETIONS.provider(http_client, key="").stream(local, history, options))

    request = sse_server.requests[0]
    assert "authorization" not in request.headers
    body = request.json()
    assert body["messages"][0] == {"role": "system", "content": "sys"}
    assert body["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "abc",
        "name": "bash",
        "content": "No result provided",
    }
    assert body["max_tokens"] == 100
    assert "max_completion_tokens" not in body
    assert "stream_options" not in body
    assert "reasoning_effort" not in body
    assert "prompt_cache_key" not in body
