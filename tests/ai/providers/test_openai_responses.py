"""The OpenAI Responses provider: the shared contract, then what only this API does."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import httpx
import pytest

from pi_durable_tui.ai import (
    TextContent,
    ThinkingContent,
    is_retryable_error,
)
from pi_durable_tui.ai._types import AssistantContent
from pi_durable_tui.ai.providers import OpenAIResponsesProvider
from tests.ai.providers.contract import ProviderContract
from tests.ai.providers.wire import WireApi
from tests.ai.sse_server import ODD_CHUNKS, Reply, SseServer
from tests.ai.streams import final, sequence, summary

RESPONSES = WireApi("openai-responses", OpenAIResponsesProvider, key="sk-openai-test-key")
OFFICIAL_SWITCHES = {
    "supports_store": True,
    "supports_strict_mode": True,
    "supports_developer_role": True,
    "supports_prompt_cache_key": True,
}


def named(*events: dict[str, Any]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


class TestOpenAIResponsesContract(ProviderContract):
    wire = RESPONSES
    endpoint = "/responses"
    text_usage = (226, 12, 1024, 0)
    text_response_id = "resp_01"
    text_signature = "msg_01"
    # The reasoning item comes first; each item ends at its output_item.done.
    tool_round: ClassVar[list[tuple[str, int | None]]] = sequence(
        "start",
        "thinking_start 0",
        "thinking_end 0",
        "toolcall_start 1",
        "toolcall_delta 1 x4",
        "toolcall_end 1",
        "toolcall_start 2",
        "toolcall_delta 2 x3",
        "toolcall_end 2",
        "done",
    )
    tool_round_lead: ClassVar[AssistantContent] = ThinkingContent(
        thinking="",
        thinking_signature=json.dumps(
            {
                "id": "rs_03",
                "type": "reasoning",
                "summary": [],
                "encrypted_content": "gAAAAABtools==",
            }
        ),
    )
    tool_call_ids = ("call_A1|fc_01", "call_B2|fc_02")
    truncated_error = "The stream ended before response.completed: the response is incomplete"
    truncated_text = "Hello, world"
    overflow_text = "Your input exceeds the context window of this model. Please adjust your input."
    max_tokens_field = "max_output_tokens"


async def test_reasoning_summaries_become_thinking_signed_with_the_reasoning_item(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(RESPONSES.api, "reasoning", chunks=ODD_CHUNKS)

    events = await RESPONSES.run(sse_server, http_client)

    assert summary(events) == sequence(
        "start",
        "thinking_start 0",
        "thinking_delta 0 x4",
        "thinking_end 0",
        "text_start 1",
        "text_delta 1",
        "text_end 1",
        "done",
    )
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


async def test_an_error_event_in_the_stream_ends_with_its_code_and_message(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.sse(RESPONSES.api, "error_event", chunks=ODD_CHUNKS)

    events = await RESPONSES.run(sse_server, http_client)

    assert summary(events) == sequence("start", "text_start 0", "text_delta 0", "error")
    message = final(events)
    assert message.error_message == (
        "server_is_overloaded: The server is overloaded. Please try again later."
    )
    assert message.error_status == 503
    assert message.content == [TextContent(text="Start of")]
    assert is_retryable_error(message)


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

    incomplete = await RESPONSES.run(sse_server, http_client)
    failed = await RESPONSES.run(sse_server, http_client)

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

    message = final(await RESPONSES.run(sse_server, http_client))

    assert message.usage.cost.total == pytest.approx(1.5)
