"""The Chat Completions provider against recorded streams served over real HTTP."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from pi_durable_tui.ai.events import AssistantEvent, ToolCallDeltaEvent
from pi_durable_tui.ai.failures import is_context_overflow, is_retryable_error, retry_after_ms
from pi_durable_tui.ai.openai_completions import OpenAICompletionsProvider
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

API = "openai-completions"
KEY = "sk-openai-test-key"


def provider(client: httpx.AsyncClient, key: str | None = KEY) -> OpenAICompletionsProvider:
    return OpenAICompletionsProvider(lambda name: key, client)


def model(server: SseServer, **fields: Any) -> Model:
    return priced_model(API, server.url, **fields)


def chunks(*objects: dict[str, Any], done: bool = True) -> bytes:
    text = "".join(f"data: {json.dumps(item)}\n\n" for item in objects)
    return (text + ("data: [DONE]\n\n" if done else "")).encode()


def delta(finish: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"id": "c1", "choices": [{"index": 0, "delta": fields, "finish_reason": finish}]}


async def run(
    server: SseServer,
    client: httpx.AsyncClient,
    context: Context = HELLO,
    options: StreamOptions | None = None,
    **fields: Any,
) -> list[AssistantEvent]:
    stream = provider(client).stream(model(server, **fields), context, options or StreamOptions())
    return await collect(stream)


async def test_a_text_response_reports_usage_without_the_cached_tokens_in_input(
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
    assert message.content == [TextContent(text="Hello, world!")]
    assert message.stop_reason == "stop"
    assert message.response_id == "chatcmpl-01"
    usage = message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (276, 12, 1024, 0)
    assert usage.total_tokens == 1312
    assert usage.cost.total == pytest.approx((276 * 3 + 12 * 15 + 1024 * 0.3) / 1e6)


async def test_reasoning_content_becomes_a_thinking_block_before_the_text(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(API, "reasoning", chunks=ODD_CHUNKS)

    events = await run(sse_server, http_client)

    assert summary(events) == [
        ("start", None),
        ("thinking_start", 0),
        ("thinking_delta", 0),
        ("thinking_delta", 0),
        ("thinking_end", 0),
        ("text_start", 1),
        ("text_delta", 1),
        ("text_delta", 1),
        ("text_end", 1),
        ("done", None),
    ]
    message = final(events)
    assert message.content == [
        ThinkingContent(thinking="Two plus two is four."),
        TextContent(text="The answer is 4."),
    ]
    assert (message.usage.input, message.usage.output, message.usage.total_tokens) == (20, 30, 50)


@pytest.mark.parametrize("field", ["reasoning", "reasoning_text"])
async def test_reasoning_is_also_read_from_the_other_field_names(
    sse_server: SseServer, http_client: httpx.AsyncClient, field: str
) -> None:
    sse_server.reply(
        Reply(body=chunks(delta(**{field: "hmm"}), delta(content="ok"), delta("stop")))
    )

    events = await run(sse_server, http_client)

    assert summary(events) == [
        ("start", None),
        ("thinking_start", 0),
        ("thinking_delta", 0),
        ("thinking_end", 0),
        ("text_start", 1),
        ("text_delta", 1),
        ("text_end", 1),
        ("done", None),
    ]
    assert final(events).content == [ThinkingContent(thinking="hmm"), TextContent(text="ok")]


async def test_parallel_tool_calls_are_assembled_from_indexed_fragments(
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
        ("toolcall_start", 2),
        ("toolcall_delta", 2),
        ("toolcall_delta", 2),
        ("toolcall_delta", 2),
        ("toolcall_end", 1),
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
        ToolCall(id="call_A1", name="read", arguments={"path": "src/main.py", "limit": 20}),
        ToolCall(id="call_B2", name="read", arguments={"path": "README.md"}),
    ]
    assert message.stop_reason == "toolUse"
    usage = message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (300, 87, 2048, 0)


async def test_a_whole_tool_call_in_one_chunk_without_usage_or_done_still_completes(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(API, "whole_tool_call", chunks=ODD_CHUNKS)

    events = await run(sse_server, http_client)

    assert summary(events) == [
        ("start", None),
        ("toolcall_start", 0),
        ("toolcall_delta", 0),
        ("toolcall_end", 0),
        ("done", None),
    ]
    message = final(events)
    assert message.content == [ToolCall(id="call_x1", name="bash", arguments={"command": "ls -la"})]
    assert message.stop_reason == "toolUse"
    assert message.usage.total_tokens == 0
    assert message.usage.cost.total == 0


async def test_a_server_reusing_index_zero_for_new_ids_gets_separate_calls(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    def call(call_id: str, arguments: str) -> dict[str, Any]:
        fn = {"name": "read", "arguments": arguments}
        return delta(tool_calls=[{"index": 0, "id": call_id, "type": "function", "function": fn}])

    body = chunks(call("a", '{"path": "1"}'), call("b", '{"path": "2"}'), delta("tool_calls"))
    sse_server.reply(Reply(body=body))

    events = await run(sse_server, http_client)

    assert summary(events) == [
        ("start", None),
        ("toolcall_start", 0),
        ("toolcall_delta", 0),
        ("toolcall_start", 1),
        ("toolcall_delta", 1),
        ("toolcall_end", 0),
        ("toolcall_end", 1),
        ("done", None),
    ]
    assert final(events).content == [
        ToolCall(id="a", name="read", arguments={"path": "1"}),
        ToolCall(id="b", name="read", arguments={"path": "2"}),
    ]


async def test_cache_write_tokens_are_taken_out_of_the_cached_count_and_the_input(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    usage = {
        "prompt_tokens": 5000,
        "completion_tokens": 10,
        "prompt_tokens_details": {"cached_tokens": 3000, "cache_write_tokens": 1000},
    }
    body = chunks(delta(content="ok"), {"id": "c1", "choices": [], "usage": usage}, done=False)
    sse_server.reply(Reply(body=body.replace(b'"finish_reason": null', b'"finish_reason": "stop"')))

    events = await run(sse_server, http_client)

    assert summary(events) == [
        ("start", None),
        ("text_start", 0),
        ("text_delta", 0),
        ("text_end", 0),
        ("done", None),
    ]
    got = final(events).usage
    assert (got.input, got.output, got.cache_read, got.cache_write) == (2000, 10, 2000, 1000)
    assert got.total_tokens == 5010


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


async def test_a_stream_that_stops_mid_event_without_a_finish_reason_is_an_error(
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
        "The stream ended before a finish_reason: the response is incomplete"
    )
    assert message.content == [TextContent(text="Partial answer")]
    assert message.usage.total_tokens == 0
    assert is_retryable_error(message)


async def test_a_dropped_connection_ends_the_stream_with_an_error_keeping_the_partial_call(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    body = recording(API, "tool_calls")
    cut = body.index(b'th\\": \\"READ')
    sse_server.reply(Reply(body=body, chunks=ODD_CHUNKS, drop_after=cut))

    events = await run(sse_server, http_client)

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
        ("toolcall_start", 2),
        ("toolcall_delta", 2),
        ("error", None),
    ]
    message = final(events)
    assert message.error_message is not None
    assert message.error_message.startswith("Connection dropped mid-stream")
    assert message.content == [
        TextContent(text="Reading both files."),
        ToolCall(id="call_A1", name="read", arguments={"path": "src/main.py", "limit": 20}),
        ToolCall(id="call_B2", name="read", arguments={}),
    ]
    assert is_retryable_error(message)


RATE_LIMIT_TEXT = "Rate limit reached for requests. Please try again in 1.5s."
ENGINE_TEXT = "The engine is currently overloaded"


@pytest.mark.parametrize(
    ("status", "error", "headers", "wait_ms", "expected"),
    [
        (
            429,
            {"message": RATE_LIMIT_TEXT, "type": "requests", "code": "rate_limit_exceeded"},
            {"retry-after": "2"},
            2000,
            # the type already appears in the text, so it is not repeated
            f"HTTP 429: {RATE_LIMIT_TEXT}",
        ),
        (
            500,
            {"message": "The server had an error", "type": "server_error"},
            {},
            None,
            "HTTP 500: server_error: The server had an error",
        ),
        (
            503,
            {"message": ENGINE_TEXT, "type": "server_error"},
            {},
            None,
            f"HTTP 503: server_error: {ENGINE_TEXT}",
        ),
    ],
)
async def test_retryable_http_errors_end_with_their_status_message_and_requested_wait(
    sse_server: SseServer,
    http_client: httpx.AsyncClient,
    status: int,
    error: dict[str, str],
    headers: dict[str, str],
    wait_ms: int | None,
    expected: str,
) -> None:
    sse_server.error(status, json.dumps({"error": error}), **headers)

    events = await run(sse_server, http_client)

    assert summary(events) == [("start", None), ("error", None)]
    message = final(events)
    assert message.error_message == expected
    assert message.error_status == status
    assert message.retry_after_ms == wait_ms
    assert message.content == []
    assert is_retryable_error(message)
    assert not is_context_overflow(message, 128_000)


async def test_a_wait_quoted_only_in_the_error_text_is_still_found(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.error(429, '{"error": {"message": "Slow down. Please try again in 1.5s."}}')

    message = final(await run(sse_server, http_client))

    assert message.retry_after_ms is None
    assert retry_after_ms(message) == 1500


async def test_a_400_maximum_context_length_is_a_context_overflow_and_never_retried(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    text = (
        "This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 130000 tokens. Please reduce the length of the messages."
    )
    error = {"message": text, "type": "invalid_request_error", "code": "context_length_exceeded"}
    sse_server.error(400, json.dumps({"error": error}))

    events = await run(sse_server, http_client)

    assert summary(events) == [("start", None), ("error", None)]
    message = final(events)
    assert message.error_message == f"HTTP 400: invalid_request_error: {text}"
    assert is_context_overflow(message, 128_000)
    assert not is_retryable_error(message)


async def test_a_non_sse_error_body_is_reported_by_its_first_characters(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.error(502, "upstream connect error or disconnect", **{"content-type": "text/plain"})

    events = await run(sse_server, http_client)

    assert summary(events) == [("start", None), ("error", None)]
    message = final(events)
    assert message.error_message == "HTTP 502: upstream connect error or disconnect"
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
    message = final(events)
    assert message.stop_reason == "aborted"
    assert message.error_message == "Request was aborted"
    assert message.content == [
        TextContent(text="Reading both files."),
        ToolCall(id="call_A1", name="read", arguments={"path": "src/"}),
    ]
    assert message.usage.total_tokens == 0


async def test_a_content_filter_finish_ends_with_an_error_naming_it(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.reply(Reply(body=chunks(delta(content="Some"), delta("content_filter"))))

    events = await run(sse_server, http_client)

    assert summary(events) == [
        ("start", None),
        ("text_start", 0),
        ("text_delta", 0),
        ("text_end", 0),
        ("error", None),
    ]
    message = final(events)
    assert (
        message.error_message == "The provider stopped the response: finish_reason content_filter"
    )
    assert message.content == [TextContent(text="Some")]
    assert not is_retryable_error(message)


async def test_an_error_object_inside_the_stream_ends_with_an_error(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    body = chunks(delta(content="Hi"), {"error": {"message": "upstream died", "code": 502}})
    sse_server.reply(Reply(body=body))

    events = await run(sse_server, http_client)

    assert summary(events) == [
        ("start", None),
        ("text_start", 0),
        ("text_delta", 0),
        ("error", None),
    ]
    message = final(events)
    assert message.error_message == "Error from the server: upstream died"
    assert message.error_status == 502
