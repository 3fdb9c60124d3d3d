"""The Chat Completions provider: the shared contract, then what only this API does."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import httpx
import pytest

from pi_durable_tui.ai import (
    TextContent,
    ThinkingContent,
    ToolCall,
    is_retryable_error,
)
from pi_durable_tui.ai._types import AssistantContent
from pi_durable_tui.ai.providers import OpenAICompletionsProvider
from tests.ai.providers.contract import ProviderContract
from tests.ai.providers.wire import WireApi
from tests.ai.sse_server import ODD_CHUNKS, Reply, SseServer, recording
from tests.ai.streams import final, sequence, summary

COMPLETIONS = WireApi("openai-completions", OpenAICompletionsProvider, key="sk-openai-test-key")


def chunks(*objects: dict[str, Any], done: bool = True) -> bytes:
    text = "".join(f"data: {json.dumps(item)}\n\n" for item in objects)
    return (text + ("data: [DONE]\n\n" if done else "")).encode()


def delta(finish: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"id": "c1", "choices": [{"index": 0, "delta": fields, "finish_reason": finish}]}


class TestOpenAICompletionsContract(ProviderContract):
    wire = COMPLETIONS
    endpoint = "/chat/completions"
    text_usage = (276, 12, 1024, 0)
    text_response_id = "chatcmpl-01"
    text_signature = None
    # Calls stay open until the choice finishes, so both end together.
    tool_round: ClassVar[list[tuple[str, int | None]]] = sequence(
        "start",
        "text_start 0",
        "text_delta 0",
        "text_end 0",
        "toolcall_start 1",
        "toolcall_delta 1 x4",
        "toolcall_start 2",
        "toolcall_delta 2 x3",
        "toolcall_end 1",
        "toolcall_end 2",
        "done",
    )
    tool_round_lead: ClassVar[AssistantContent] = TextContent(text="Reading both files.")
    tool_call_ids = ("call_A1", "call_B2")
    truncated_error = "The stream ended before a finish_reason: the response is incomplete"
    truncated_text = "Partial answer"
    overflow_text = (
        "This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 130000 tokens. Please reduce the length of the messages."
    )
    max_tokens_field = "max_tokens"


async def test_reasoning_content_becomes_a_thinking_block_before_the_text(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(COMPLETIONS.api, "reasoning", chunks=ODD_CHUNKS)

    events = await COMPLETIONS.run(sse_server, http_client)

    assert summary(events) == sequence(
        "start",
        "thinking_start 0",
        "thinking_delta 0 x2",
        "thinking_end 0",
        "text_start 1",
        "text_delta 1 x2",
        "text_end 1",
        "done",
    )
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

    events = await COMPLETIONS.run(sse_server, http_client)

    assert summary(events) == sequence(
        "start",
        "thinking_start 0",
        "thinking_delta 0",
        "thinking_end 0",
        "text_start 1",
        "text_delta 1",
        "text_end 1",
        "done",
    )
    assert final(events).content == [ThinkingContent(thinking="hmm"), TextContent(text="ok")]


async def test_a_whole_tool_call_in_one_chunk_without_usage_or_done_still_completes(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(COMPLETIONS.api, "whole_tool_call", chunks=ODD_CHUNKS)

    events = await COMPLETIONS.run(sse_server, http_client)

    assert summary(events) == sequence(
        "start", "toolcall_start 0", "toolcall_delta 0", "toolcall_end 0", "done"
    )
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

    events = await COMPLETIONS.run(sse_server, http_client)

    assert summary(events) == sequence(
        "start",
        "toolcall_start 0",
        "toolcall_delta 0",
        "toolcall_start 1",
        "toolcall_delta 1",
        "toolcall_end 0",
        "toolcall_end 1",
        "done",
    )
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

    events = await COMPLETIONS.run(sse_server, http_client)

    assert summary(events) == sequence(
        "start", "text_start 0", "text_delta 0", "text_end 0", "done"
    )
    got = final(events).usage
    assert (got.input, got.output, got.cache_read, got.cache_write) == (2000, 10, 2000, 1000)
    assert got.total_tokens == 5010


async def test_a_dropped_connection_ends_the_stream_with_an_error_keeping_the_partial_call(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    body = recording(COMPLETIONS.api, "tool_calls")
    cut = body.index(b'th\\": \\"READ')
    sse_server.reply(Reply(body=body, chunks=ODD_CHUNKS, drop_after=cut))

    events = await COMPLETIONS.run(sse_server, http_client)

    assert summary(events) == sequence(
        "start",
        "text_start 0",
        "text_delta 0",
        "text_end 0",
        "toolcall_start 1",
        "toolcall_delta 1 x4",
        "toolcall_start 2",
        "toolcall_delta 2",
        "error",
    )
    message = final(events)
    assert message.error_message is not None
    assert message.error_message.startswith("Connection dropped mid-stream")
    assert message.content == [
        TextContent(text="Reading both files."),
        ToolCall(id="call_A1", name="read", arguments={"path": "src/main.py", "limit": 20}),
        ToolCall(id="call_B2", name="read", arguments={}),
    ]
    assert is_retryable_error(message)


async def test_a_content_filter_finish_ends_with_an_error_naming_it(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.reply(Reply(body=chunks(delta(content="Some"), delta("content_filter"))))

    events = await COMPLETIONS.run(sse_server, http_client)

    assert summary(events) == sequence(
        "start", "text_start 0", "text_delta 0", "text_end 0", "error"
    )
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

    events = await COMPLETIONS.run(sse_server, http_client)

    assert summary(events) == sequence("start", "text_start 0", "text_delta 0", "error")
    message = final(events)
    assert message.error_message == "Error from the server: upstream died"
    assert message.error_status == 502


async def test_a_servers_format_error_inside_the_stream_keeps_the_partial_and_is_not_retried(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(COMPLETIONS.api, "format_error", chunks=ODD_CHUNKS)

    message = final(await COMPLETIONS.run(sse_server, http_client))

    assert message.stop_reason == "error"
    assert message.error_message == (
        "Error from the server: The model output does not match the expected format"
    )
    assert message.error_status == 500  # a 5xx, yet the same request fails the same way
    assert message.text() == '<tool_call>{"name": "read"'
    assert not is_retryable_error(message)
