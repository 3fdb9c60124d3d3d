"""The Anthropic Messages provider: the shared contract, then what only this API does."""

from __future__ import annotations

import json
from typing import ClassVar

import httpx

from pi_durable_tui.ai import (
    TextContent,
    ThinkingContent,
    is_retryable_error,
)
from pi_durable_tui.ai._types import AssistantContent
from pi_durable_tui.ai.providers import AnthropicProvider
from tests.ai.providers.contract import ProviderContract
from tests.ai.providers.wire import WireApi
from tests.ai.sse_server import ODD_CHUNKS, Reply, SseServer, recording
from tests.ai.streams import final, sequence, summary

ANTHROPIC = WireApi("anthropic-messages", AnthropicProvider, key="sk-ant-test-key")


class TestAnthropicMessagesContract(ProviderContract):
    wire = ANTHROPIC
    endpoint = "/v1/messages"
    text_usage = (120, 12, 4200, 1500)
    text_response_id = "msg_01TEXT"
    text_signature = None
    # Each block ends at its content_block_stop, before the next one starts.
    tool_round: ClassVar[list[tuple[str, int | None]]] = sequence(
        "start",
        "text_start 0",
        "text_delta 0",
        "text_end 0",
        "toolcall_start 1",
        "toolcall_delta 1 x4",
        "toolcall_end 1",
        "toolcall_start 2",
        "toolcall_delta 2 x3",
        "toolcall_end 2",
        "done",
    )
    tool_round_lead: ClassVar[AssistantContent] = TextContent(text="Reading both files.")
    tool_call_ids = ("toolu_01A", "toolu_01B")
    truncated_error = "The stream ended before message_stop: the response is incomplete"
    truncated_text = "Partial answer"
    overflow_text = "prompt is too long: 213462 tokens > 200000 maximum"
    max_tokens_field = "max_tokens"

    def error_body(self, kind: str, text: str) -> str:
        return json.dumps({"type": "error", "error": {"type": kind, "message": text}})


async def test_thinking_blocks_keep_their_signature_and_redacted_thinking_keeps_its_data(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(ANTHROPIC.api, "thinking", chunks=ODD_CHUNKS)

    events = await ANTHROPIC.run(sse_server, http_client)

    assert summary(events) == sequence(
        "start",
        "thinking_start 0",
        "thinking_delta 0 x2",
        "thinking_end 0",
        "thinking_start 1",
        "thinking_end 1",
        "text_start 2",
        "text_delta 2",
        "text_end 2",
        "done",
    )
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


async def test_usage_from_message_start_survives_a_stream_that_fails_midway(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    body = recording(ANTHROPIC.api, "text")
    sse_server.reply(Reply(body=body, chunks=ODD_CHUNKS, drop_after=body.index(b", world")))
    sse_server.sse(ANTHROPIC.api, "truncated", chunks=ODD_CHUNKS)

    dropped = final(await ANTHROPIC.run(sse_server, http_client)).usage
    truncated = final(await ANTHROPIC.run(sse_server, http_client)).usage

    assert (dropped.input, dropped.cache_read, dropped.cache_write) == (120, 4200, 1500)
    assert (truncated.input, truncated.output) == (10, 1)


async def test_an_overloaded_error_event_after_http_200_ends_with_a_retryable_529(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(ANTHROPIC.api, "overloaded_midstream", chunks=ODD_CHUNKS)

    events = await ANTHROPIC.run(sse_server, http_client)

    assert summary(events) == sequence("start", "text_start 0", "text_delta 0", "error")
    message = final(events)
    assert message.error_message == "overloaded_error: Overloaded"
    assert message.error_status == 529
    assert message.content == [TextContent(text="Start of")]
    assert is_retryable_error(message)


async def test_a_refusal_stop_reason_ends_with_an_error_keeping_the_text(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    body = recording(ANTHROPIC.api, "text").replace(b'"end_turn"', b'"refusal"')
    sse_server.reply(Reply(body=body))

    events = await ANTHROPIC.run(sse_server, http_client)

    assert summary(events)[-2:] == [("text_end", 0), ("error", None)]
    message = final(events)
    assert message.error_message == "The model declined to respond (stop reason refusal)"
    assert message.content == [TextContent(text="Hello, world!")]
    assert message.retryable is False
