"""The OpenAI Responses provider against recorded streams served over real HTTP."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from pi_durable_tui.ai.events import AssistantEvent, ToolCallDeltaEvent
from pi_durable_tui.ai.failures import is_context_overflow, is_retryable_error
from pi_durable_tui.ai.openai_responses import OpenAIResponsesProvider
from pi_durable_tui.ai.types import (
    Context,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
)
from tests.ai.sse_server import (
    HELLO,
    ODD_CHUNKS,
    Reply,
    SseServer,
    collect,
    final,
    priced_model,
    recording,
    summary,
)

API = "openai-responses"
KEY = "sk-openai-test-key"
OFFICIAL_SWITCHES = {
    "supports_store": True,
    "supports_strict_mode": True,
    "supports_developer_role": True,
    "supports_prompt_cache_key": True,
}


def provider(client: httpx.AsyncClient) -> OpenAIResponsesProvider:
    return OpenAIResponsesProvider(lambda name: KEY, client)


def model(server: SseServer, **fields: Any) -> Model:
    return priced_model(API, server.url, **fields)


def named(*events: dict[str, Any]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


async def run(
    server: SseServer,
    client: httpx.AsyncClient,
    context: Context = HELLO,
    options: StreamOptions | None = None,
    **fields: Any,
) -> list[AssistantEvent]:
    stream = provider(client).stream(model(server, **fields), context, options or StreamOptions())
    return await collect(stream)


async def test_a_text_response_keeps_its_message_id_and_reports_usage_without_cached_input(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(API, "text", chunks=ODD_CHUNKS)

    events = await run(sse_server, http_client)

    assert summary(events) == [
        ("start", None),
        ("text_start", 0),
        ("text_delta", 0),
        ("text_delta", 0),
        ("text_delta", 0),
        ("text_end", 0),
        ("done", None),
    ]
    message = final(events)
    assert message.content == [TextContent(text="Hello, world!", text_signature="msg_01")]
    assert message.stop_reason == "stop"
    assert message.response_id == "resp_01"
    usage = message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (226, 12, 1024, 0)
    assert usage.total_tokens == 1262
    assert usage.cost.total == pytest.approx((226 * 3 + 12 * 15 + 1024 * 0.3) / 1e6)


async def test_reasoning_summaries_become_thinking_signed_with_the_reasoning_item(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(API, "reasoning", chunks=ODD_CHUNKS)

    events = await run(sse_server, http_client)

    assert summary(events) == [
        ("start", None),
        ("thinking_start", 0),
        ("thinking_delta", 0),
        ("thinking_delta", 0),
        ("thinking_delta", 0),
        ("thinking_delta", 0),
        ("thinking_end", 0),
        ("text_start", 1),
        ("text_delta", 1),
        ("text_end", 1),
        ("done", None),
    ]
    message = final(events)
    thinking, text = message.content
    assert isinstance(thinking, ThinkingContent)
    assert thinking.thinking == "**Adding** two and two.\n\nIt is four."
    assert thinking.thinking_signature is not None
    assert json.loads(thinking.thinking_signature) == {
        "id": "rs_01",
        "type": "reasoning",
        "summary": [
            {"type": "summary_text", "text": "**Adding** two and two."},
            {"type": "summary_text", "text": "It is four."},
        ],
        "encrypted_content": "gAAAAABencrypted==",
    }
    assert text == TextContent(text="The answer is 4.", text_signature="msg_02")
    assert (message.usage.input, message.usage.output) == (40, 90)


async def test_parallel_function_calls_split_into_fragments_stop_with_tool_use(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(API, "tool_calls", chunks=ODD_CHUNKS)
    live: list[tuple[int, dict[str, Any]]] = []

    def watch(event: AssistantEvent) -> None:
        if isinstance(event, ToolCallDeltaEvent):
            block = event.partial.content[event.content_index]
            assert isinstance(block, ToolCall)
            live.append((event.content_index, dict(block.arguments)))

    stream = provider(http_client).stream(model(sse_server), HELLO, StreamOptions())
    events = await collect(stream, watch)

    assert summary(events) == [
        ("start", None),
        ("thinking_start", 0),
        ("thinking_end", 0),
        ("toolcall_start", 1),
        ("toolcall_delta", 1),
        ("toolcall_delta", 1),
        ("toolcall_delta", 1),
        ("toolcall_delta", 1),
        ("toolcall_end", 1),
        ("toolcall_start", 2),
        ("toolcall_delta", 2),
        ("toolcall_delta", 2),
        ("toolcall_delta", 2),
        ("toolcall_end", 2),
        ("done", None),
    ]
    assert live == [
        (1, {"path": "src/"}),
        (1, {"path": "src/main.py"}),
        (1, {"path": "src/main.py", "limit": 2}),
        (1, {"path": "src/main.py", "limit": 20}),
        (2, {}),
        (2, {"path": "READ"}),
        (2, {"path": "README.md"}),
    ]
    message = final(events)
    reasoning = json.dumps(
        {"id": "rs_03", "type": "reasoning", "summary": [], "encrypted_content": "gAAAAABtools=="}
    )
    assert message.content == [
        ThinkingContent(thinking="", thinking_signature=reasoning),
        ToolCall(id="call_A1|fc_01", name="read", arguments={"path": "src/main.py", "limit": 20}),
        ToolCall(id="call_B2|fc_02", name="read", arguments={"path": "README.md"}),
    ]
    assert message.stop_reason == "toolUse"
    usage = message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.total_tokens) == (
        300,
        87,
        2048,
        2435,
    )


async def test_a_u2028_inside_a_json_string_stays_inside_the_text_with_crlf_lines(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(API, "unicode", chunks=(1,))

    events = await run(sse_server, http_client)

    assert summary(events) == [
        ("start", None),
        ("text_start", 0),
        ("text_delta", 0),
        ("text_delta", 0),
        ("text_end", 0),
        ("done", None),
    ]
    assert final(events).content == [
        TextContent(
            text="line\u2028separator and para\u2029graph \U0001f642", text_signature="msg_04"
        )
    ]


async def test_a_stream_that_stops_mid_event_ends_with_an_error_keeping_the_partial_text(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(API, "truncated", chunks=ODD_CHUNKS)

    events = await run(sse_server, http_client)

    assert summary(events) == [
        ("start", None),
        ("text_start", 0),
        ("text_delta", 0),
        ("text_delta", 0),
        ("error", None),
    ]
    message = final(events)
    assert message.error_message == (
        "The stream ended before response.completed: the response is incomplete"
    )
    assert message.content == [TextContent(text="Hello, world")]
    assert message.response_id == "resp_01"
    assert is_retryable_error(message)


async def test_a_dropped_connection_ends_the_stream_with_an_error_keeping_the_partial_text(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    body = recording(API, "text")
    sse_server.reply(Reply(body=body, chunks=ODD_CHUNKS, drop_after=body.index(b'", world"')))

    events = await run(sse_server, http_client)

    assert summary(events) == [
        ("start", None),
        ("text_start", 0),
        ("text_delta", 0),
        ("error", None),
    ]
    message = final(events)
    assert message.error_message is not None
    assert message.error_message.startswith("Connection dropped mid-stream")
    assert message.content == [TextContent(text="Hello")]
    assert is_retryable_error(message)


async def test_an_error_event_in_the_stream_ends_with_its_code_and_message(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(API, "error_event", chunks=ODD_CHUNKS)

    events = await run(sse_server, http_client)

    assert summary(events) == [
        ("start", None),
        ("text_start", 0),
        ("text_delta", 0),
        ("error", None),
    ]
    message = final(events)
    assert message.error_message == (
        "server_is_overloaded: The server is overloaded. Please try again later."
    )
    assert message.error_status == 503
    assert message.content == [TextContent(text="Start of")]
    assert is_retryable_error(message)


@pytest.mark.parametrize(
    ("status", "body", "headers", "wait_ms", "expected"),
    [
        (
            429,
            '{"error":{"message":"Rate limit reached","type":"tokens",'
            '"code":"rate_limit_exceeded"}}',
            {"retry-after-ms": "250"},
            250,
            "HTTP 429: tokens: Rate limit reached",
        ),
        (
            500,
            '{"error":{"message":"The server had an error","type":"server_error"}}',
            {},
            None,
            "HTTP 500: server_error: The server had an error",
        ),
        (
            503,
            '{"error":{"message":"Service unavailable","type":"server_error"}}',
            {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"},
            0,
            "HTTP 503: server_error: Service unavailable",
        ),
    ],
)
async def test_retryable_http_errors_end_with_their_status_message_and_requested_wait(
    sse_server: SseServer,
    http_client: httpx.AsyncClient,
    status: int,
    body: str,
    headers: dict[str, str],
    wait_ms: int | None,
    expected: str,
) -> None:
    sse_server.error(status, body, **headers)

    events = await run(sse_server, http_client)

    assert summary(events) == [("start", None), ("error", None)]
    message = final(events)
    assert message.error_message == expected
    assert message.error_status == status
    assert message.retry_after_ms == wait_ms
    assert is_retryable_error(message)


async def test_a_400_context_window_error_is_a_context_overflow_and_never_retried(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    text = "Your input exceeds the context window of this model. Please adjust your input."
    error = {"message": text, "type": "invalid_request_error", "code": "context_length_exceeded"}
    sse_server.error(400, json.dumps({"error": error}))

    events = await run(sse_server, http_client)

    assert summary(events) == [("start", None), ("error", None)]
    message = final(events)
    assert message.error_message == f"HTTP 400: invalid_request_error: {text}"
    assert is_context_overflow(message, 400_000)
    assert not is_retryable_error(message)


async def test_a_non_sse_error_body_is_reported_by_its_first_characters(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.error(504, "<html>Gateway Timeout</html>", **{"content-type": "text/html"})

    events = await run(sse_server, http_client)

    assert summary(events) == [("start", None), ("error", None)]
    assert final(events).error_message == "HTTP 504: <html>Gateway Timeout</html>"


async def test_an_abort_in_the_middle_of_a_tool_call_argument_keeps_the_partial_call(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(API, "tool_calls", chunks=ODD_CHUNKS)
    abort = asyncio.Event()

    def abort_after_first_fragment(event: AssistantEvent) -> None:
        if isinstance(event, ToolCallDeltaEvent):
            abort.set()

    stream = provider(http_client).stream(model(sse_server), HELLO, StreamOptions(), abort=abort)
    events = await collect(stream, abort_after_first_fragment)

    assert summary(events) == [
        ("start", None),
        ("thinking_start", 0),
        ("thinking_end", 0),
        ("toolcall_start", 1),
        ("toolcall_delta", 1),
        ("error", None),
    ]
    message = final(events)
    assert message.stop_reason == "aborted"
    assert message.error_message == "Request was aborted"
    assert message.content[1] == ToolCall(
        id="call_A1|fc_01", name="read", arguments={"path": "src/"}
    )
    assert len(message.content) == 2


async def test_an_incomplete_response_stops_with_length_and_a_failed_one_with_an_error(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    def ending(event_type: str, **response: Any) -> bytes:
        return named({"type": event_type, "response": {"id": "r", **response}})

    sse_server.reply(
        Reply(
            body=ending(
                "response.incomplete",
                status="incomplete",
                incomplete_details={"reason": "max_output_tokens"},
                usage={"input_tokens": 5, "output_tokens": 100},
            )
        )
    )
    sse_server.reply(
        Reply(
            body=ending(
                "response.failed",
                status="failed",
                error={"code": "server_error", "message": "Something broke"},
            )
        )
    )

    incomplete = await run(sse_server, http_client)
    failed = await run(sse_server, http_client)

    assert summary(incomplete) == [("start", None), ("done", None)]
    assert final(incomplete).stop_reason == "length"
    assert final(incomplete).usage.output == 100
    assert summary(failed) == [("start", None), ("error", None)]
    assert final(failed).error_message == "server_error: Something broke"
    assert final(failed).error_status == 500


async def test_a_flex_service_tier_halves_the_cost(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    usage = {"input_tokens": 1_000_000, "output_tokens": 0}
    body = named(
        {
            "type": "response.completed",
            "response": {"id": "r", "status": "completed", "service_tier": "flex", "usage": usage},
        }
    )
    sse_server.reply(Reply(body=body))

    message = final(await run(sse_server, http_client))

    assert message.usage.cost.total == pytest.approx(1.5)
