"""What the Responses provider sends: a stateless body replaying reasoning and calls."""

from __future__ import annotations

import json

import httpx

from pi_durable_tui.ai import (
    AssistantMessage,
    Context,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from pi_durable_tui.ai._handoff import normalize_tool_call_id
from tests.ai.providers.test_openai_responses import OFFICIAL_SWITCHES, RESPONSES
from tests.ai.providers.wire import READ_TOOL
from tests.ai.sse_server import SseServer


async def test_the_request_is_stateless_and_replays_reasoning_messages_and_calls(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(RESPONSES.api, "text")
    reasoning_item = {"id": "rs_9", "type": "reasoning", "summary": [], "encrypted_content": "enc"}
    history = Context(
        system_prompt="You are terse.",
        tools=[READ_TOOL],
        messages=[
            UserMessage(content="Read it"),
            AssistantMessage(
                api=RESPONSES.api,
                provider="openai",
                model="test-model",
                stop_reason="toolUse",
                content=[
                    ThinkingContent(thinking="", thinking_signature=json.dumps(reasoning_item)),
                    TextContent(text="Reading.", text_signature="msg_9"),
                    ToolCall(id="call_9|fc_9", name="read", arguments={"path": "a.py"}),
                ],
            ),
            ToolResultMessage(
                tool_call_id="call_9|fc_9", tool_name="read", content=[TextContent(text="A")]
            ),
        ],
    )
    options = StreamOptions(
        reasoning="high", max_tokens=800, session_id="s-1", cache_retention="long"
    )

    await RESPONSES.run(
        sse_server, http_client, history, options, reasoning=True, compat=OFFICIAL_SWITCHES
    )

    request = sse_server.requests[0]
    assert request.path == "/responses"
    assert request.headers["authorization"] == f"Bearer {RESPONSES.key}"
    assert request.json() == {
        "model": "test-model",
        "stream": True,
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "reasoning": {"effort": "high", "summary": "auto"},
        "max_output_tokens": 800,
        "prompt_cache_key": "s-1",
        "prompt_cache_retention": "24h",
        "tools": [
            {
                "type": "function",
                "name": "read",
                "description": "Read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                "strict": False,
            }
        ],
        "input": [
            {"role": "developer", "content": "You are terse."},
            {"role": "user", "content": [{"type": "input_text", "text": "Read it"}]},
            reasoning_item,
            {
                "type": "message",
                "role": "assistant",
                "id": "msg_9",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Reading.", "annotations": []}],
            },
            {
                "type": "function_call",
                "call_id": "call_9",
                "name": "read",
                "arguments": '{"path": "a.py"}',
                "id": "fc_9",
            },
            {"type": "function_call_output", "call_id": "call_9", "output": "A"},
        ],
    }


async def test_a_history_from_another_provider_is_handed_off_as_typed_items_with_fresh_ids(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(RESPONSES.api, "text")
    history = Context(
        messages=[
            UserMessage(content="Read it"),
            AssistantMessage(
                api="anthropic-messages",
                provider="anthropic",
                model="claude-x",
                stop_reason="toolUse",
                content=[
                    ThinkingContent(thinking="Let me look.", thinking_signature="anthropic-sig"),
                    ToolCall(id="toolu_1", name="read", arguments={}),
                ],
            ),
            ToolResultMessage(tool_call_id="toolu_1", tool_name="read", content=[]),
        ]
    )

    options = StreamOptions(reasoning="off")
    await RESPONSES.run(sse_server, http_client, history, options, reasoning=True)

    body = sse_server.requests[0].json()
    new_id = normalize_tool_call_id("toolu_1", RESPONSES.model(sse_server), same_model=False)
    call_id, item_id = new_id.split("|")
    assert (call_id, item_id[:3]) == ("toolu_1", "fc_")
    assert body["input"][1:] == [
        # Typed, with output_text parts: llama-server refuses the untyped form (issue 7).
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Let me look.", "annotations": []}],
        },
        {
            "type": "function_call",
            "call_id": "toolu_1",
            "name": "read",
            "arguments": "{}",
            "id": item_id,
        },
        {"type": "function_call_output", "call_id": "toolu_1", "output": ""},
    ]
    assert body["reasoning"] == {"effort": "none"}
    assert "store" not in body
