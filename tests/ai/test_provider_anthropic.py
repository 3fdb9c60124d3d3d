"""The Anthropic Messages provider against recorded streams served over real HTTP."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from pi_durable_tui.ai.anthropic import AnthropicProvider
from pi_durable_tui.ai.events import AssistantEvent, ToolCallDeltaEvent
from pi_durable_tui.ai.failures import is_context_overflow, is_retryable_error
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

API = "anthropic-messages"
KEY = "sk-ant-test-key"


def provider(client: httpx.AsyncClient) -> AnthropicProvider:
    return AnthropicProvider(lambda name: KEY if name == "anthropic" else None, client)


def model(server: SseServer, **fields: Any) -> Model:
    return priced_model(API, server.url, **fields)


async def run(
    server: SseServer,
    client: httpx.AsyncClient,
    context: Context = HELLO,
    options: StreamOptions | None = None,
    **fields: Any,
) -> list[AssistantEvent]:
    stream = provider(client).stream(model(server, **fields), context, options or StreamOptions())
    return await collect(stream)


async def test_a_text_response_streams_its_deltas_and_prices_usage_with_cache_counters(
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
    assert [e.delta for e in events if e.type == "text_delta"] == ["Hello", ", world", "!"]
    message = final(events)
    assert message.content == [TextContent(text="Hello, world!")]
    assert message.stop_reason == "stop"
    assert message.response_id == "msg_01TEXT"
    assert (message.api, message.provider, message.model) == (API, "anthropic", "test-model")
    usage = message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (120, 12, 4200, 1500)
    assert usage.total_tokens == 5832
    assert usage.cost.input == pytest.approx(120 * 3 / 1e6)
    assert usage.cost.cache_read == pytest.approx(4200 * 0.3 / 1e6)
    assert usage.cost.cache_write == pytest.approx(1500 * 3.75 / 1e6)
    assert usage.cost.total == pytest.approx(0.007425)
    assert message.error_message is None


async def test_thinking_blocks_keep_their_signature_and_redacted_thinking_keeps_its_data(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(API, "thinking", chunks=ODD_CHUNKS)

    events = await run(sse_server, http_client)

    assert summary(events) == [
        ("start", None),
        ("thinking_start", 0),
        ("thinking_delta", 0),
        ("thinking_delta", 0),
        ("thinking_end", 0),
        ("thinking_start", 1),
        ("thinking_end", 1),
        ("text_start", 2),
        ("text_delta", 2),
        ("text_end", 2),
        ("done", None),
    ]
    message = final(events)
    assert message.content == [
        ThinkingContent(
            thinking="Two plus two is four.", thinking_signature="EqQBCkgIARABGAIiQLsig0"
        ),
        ThinkingContent(
            thinking="[Reasoning redacted]",
            thinking_signature="EmwKAhgBEgyREDACTEDdata",
            redacted=True,
        ),
        TextContent(text="The answer is 4."),
    ]
    assert message.stop_reason == "stop"
    assert (message.usage.input, message.usage.output) == (50, 40)


async def test_parallel_tool_calls_split_into_fragments_are_parsed_live_and_at_block_end(
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
        ("text_start", 0),
        ("text_delta", 0),
        ("text_end", 0),
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
    assert message.content == [
        TextContent(text="Reading both files."),
        ToolCall(id="toolu_01A", name="read", arguments={"path": "src/main.py", "limit": 20}),
        ToolCall(id="toolu_01B", name="read", arguments={"path": "README.md"}),
    ]
    assert message.stop_reason == "toolUse"
    # message_delta usage is cumulative: it replaces message_start's, never adds to it.
    usage = message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (300, 87, 2048, 0)
    assert usage.total_tokens == 2435


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
        TextContent(text="line\u2028separator and para\u2029graph \U0001f642")
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
    assert message.stop_reason == "error"
    assert message.error_message == (
        "The stream ended before message_stop: the response is incomplete"
    )
    assert message.content == [TextContent(text="Partial answer")]
    assert (message.usage.input, message.usage.output) == (10, 1)
    assert message.error_status is None
    assert is_retryable_error(message)


async def test_a_dropped_connection_ends_the_stream_with_an_error_keeping_the_partial_text(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    body = recording(API, "text")
    sse_server.reply(Reply(body=body, chunks=ODD_CHUNKS, drop_after=body.index(b", world")))

    events = await run(sse_server, http_client)

    assert summary(events) == [
        ("start", None),
        ("text_start", 0),
        ("text_delta", 0),
        ("error", None),
    ]
    message = final(events)
    assert message.stop_reason == "error"
    assert message.error_message is not None
    assert message.error_message.startswith("Connection dropped mid-stream")
    assert message.content == [TextContent(text="Hello")]
    assert (message.usage.input, message.usage.cache_read, message.usage.cache_write) == (
        120,
        4200,
        1500,
    )
    assert message.retryable is True
    assert is_retryable_error(message)


async def test_an_overloaded_error_event_after_http_200_ends_with_a_retryable_529(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(API, "overloaded_midstream", chunks=ODD_CHUNKS)

    events = await run(sse_server, http_client)

    assert summary(events) == [
        ("start", None),
        ("text_start", 0),
        ("text_delta", 0),
        ("error", None),
    ]
    message = final(events)
    assert message.error_message == "overloaded_error: Overloaded"
    assert message.error_status == 529
    assert message.content == [TextContent(text="Start of")]
    assert is_retryable_error(message)


@pytest.mark.parametrize(
    ("status", "kind", "text", "headers", "retry_after_ms"),
    [
        (429, "rate_limit_error", "Too many tokens per minute", {"retry-after": "7"}, 7000),
        (500, "api_error", "Internal server error", {}, None),
        (529, "overloaded_error", "Overloaded", {"retry-after-ms": "1500"}, 1500),
    ],
)
async def test_retryable_http_errors_end_with_their_status_message_and_requested_wait(
    sse_server: SseServer,
    http_client: httpx.AsyncClient,
    status: int,
    kind: str,
    text: str,
    headers: dict[str, str],
    retry_after_ms: int | None,
) -> None:
    body = f'{{"type":"error","error":{{"type":"{kind}","message":"{text}"}}}}'
    sse_server.error(status, body, **headers)

    events = await run(sse_server, http_client)

    assert summary(events) == [("start", None), ("error", None)]
    message = final(events)
    assert message.stop_reason == "error"
    assert message.error_message == f"HTTP {status}: {kind}: {text}"
    assert message.error_status == status
    assert message.retry_after_ms == retry_after_ms
    assert message.content == []
    assert message.usage.total_tokens == 0
    assert is_retryable_error(message)
    assert not is_context_overflow(message, 200_000)


async def test_a_400_prompt_too_long_is_a_context_overflow_and_never_retried(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.error(
        400,
        '{"type":"error","error":{"type":"invalid_request_error",'
        '"message":"prompt is too long: 213462 tokens > 200000 maximum"}}',
    )

    events = await run(sse_server, http_client)

    assert summary(events) == [("start", None), ("error", None)]
    message = final(events)
    assert message.error_message == (
        "HTTP 400: invalid_request_error: prompt is too long: 213462 tokens > 200000 maximum"
    )
    assert message.error_status == 400
    assert is_context_overflow(message, 200_000)
    assert not is_retryable_error(message)


async def test_a_non_sse_error_body_is_reported_by_its_first_characters(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    page = "<html><head><title>502 Bad Gateway</title></head><body>" + "x" * 2000 + "</body></html>"
    sse_server.error(502, page, **{"content-type": "text/html"})

    events = await run(sse_server, http_client)

    assert summary(events) == [("start", None), ("error", None)]
    message = final(events)
    assert message.error_message == "HTTP 502: " + page[:500]
    assert message.error_status == 502
    assert is_retryable_error(message)


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
        ("text_start", 0),
        ("text_delta", 0),
        ("text_end", 0),
        ("toolcall_start", 1),
        ("toolcall_delta", 1),
        ("error", None),
    ]
    assert events[-1].type == "error"
    assert events[-1].reason == "aborted"
    message = final(events)
    assert message.stop_reason == "aborted"
    assert message.error_message == "Request was aborted"
    assert message.content == [
        TextContent(text="Reading both files."),
        ToolCall(id="toolu_01A", name="read", arguments={"path": "src/"}),
    ]
    assert (message.usage.input, message.usage.output, message.usage.cache_read) == (300, 2, 2048)
    assert not is_retryable_error(message)


async def test_a_refusal_stop_reason_ends_with_an_error_keeping_the_text(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.reply(Reply(body=recording(API, "text").replace(b'"end_turn"', b'"refusal"')))

    events = await run(sse_server, http_client)

    assert summary(events)[-2:] == [("text_end", 0), ("error", None)]
    message = final(events)
    assert message.error_message == "The model declined to respond (stop reason refusal)"
    assert message.content == [TextContent(text="Hello, world!")]
    assert message.retryable is False
