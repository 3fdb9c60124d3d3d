"""The provider contract: what every HTTP provider shows, written once, run per wire API.

Each wire API's test module subclasses ``ProviderContract`` in a ``Test...``
class, names its ``WireApi`` (``tests.ai.providers.wire``) and states what its
recordings say in its own words (usage counts, ids, the first block of the
tool round, the error texts); the tests here then check the same behaviours
against each API over the real 127.0.0.1 server of ``tests.ai.sse_server``,
the way the storage conformance suite runs against each backend:

- streaming order (model-layer.md 1.3): one ``start``, blocks opened in order
  with deltas of their own kind, exactly one terminal event (every test reads
  its stream through ``WireApi.run``, which checks this);
- tool-call assembly: live arguments after every partial-JSON fragment, final
  arguments at block end;
- usage normalized (``input`` without cache reads) and priced per million;
- abort: before the request, while waiting for a stalled server, in the middle
  of a tool-call argument; cancelling the consumer closes the connection;
- the request: the model's declared output limit is sent (an explicit
  ``max_tokens`` option wins);
- an empty completion (one end-of-text token, no content) is a non-retryable
  error, not an answer;
- HTTP and transport errors (1.4, 1.9): status, the provider's own words, the
  requested wait (``retry-after``, for "Retrying in Ns"), retry classification
  (any 4xx but 408/429 and a server's "does not match the expected format" are
  never retried),
  context overflow, idle timeout, a cut or dropped stream, refused connections
  and 404s naming the URL; keys never appear in any message.
"""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any, ClassVar

import httpx
import pytest

from pi_durable_tui.ai import (
    AssistantEvent,
    DoneEvent,
    ErrorEvent,
    StreamOptions,
    TextContent,
    ToolCall,
    ToolCallDeltaEvent,
    is_context_overflow,
    is_retryable_error,
    retry_after_ms,
)
from pi_durable_tui.ai._types import AssistantContent
from pi_durable_tui.ai.providers._sse import EMPTY_ANSWER_MESSAGE
from pi_durable_tui.ai.providers._transport import IDLE_TIMEOUT_ADVICE
from tests.ai.providers.wire import HELLO, PRICES, WireApi, priced_model
from tests.ai.sse_server import ODD_CHUNKS, Reply, SseServer, recording
from tests.ai.streams import check_stream_order, collect, final, sequence, summary

HEADER_CANARY = "tok-canary-0d9e8f7a6b5c"
LIVE_ARGUMENTS = [
    (1, {"path": "src/"}),
    (1, {"path": "src/main.py"}),
    (1, {"path": "src/main.py", "limit": 2}),
    (1, {"path": "src/main.py", "limit": 20}),
    (2, {}),
    (2, {"path": "READ"}),
    (2, {"path": "README.md"}),
]
"""The live arguments of the two calls of every ``tool_calls`` recording, fragment by fragment."""


class LiveArguments:
    """Records a tool call's live arguments at each fragment, as ``(content index, arguments)``.

    Pass it as ``on_event``: the partial message is shared and grows in place, so
    the arguments must be copied while the event is current.
    """

    def __init__(self) -> None:
        self.seen: list[tuple[int, dict[str, Any]]] = []

    def __call__(self, event: AssistantEvent) -> None:
        if isinstance(event, ToolCallDeltaEvent):
            block = event.partial.content[event.content_index]
            assert isinstance(block, ToolCall)
            self.seen.append((event.content_index, dict(block.arguments)))


def everything_shown(events: list[AssistantEvent]) -> str:
    """Every message a consumer of ``events`` could show or store, as JSON."""
    messages = [
        event.message
        if isinstance(event, DoneEvent)
        else event.error
        if isinstance(event, ErrorEvent)
        else event.partial
        for event in events
    ]
    return "\n".join(message.model_dump_json() for message in messages)


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


class ProviderContract:
    """The behaviours every HTTP provider shows; subclass it once per wire API."""

    wire: ClassVar[WireApi]
    endpoint: ClassVar[str]
    """The request path for a base URL without ``/v1`` (``/v1/messages``, ``/responses``...)."""
    text_usage: ClassVar[tuple[int, int, int, int]]
    """``(input, output, cache_read, cache_write)`` of ``text.sse``, normalized."""
    text_response_id: ClassVar[str]
    text_signature: ClassVar[str | None]
    """The text block's replay signature in ``text.sse``, if the API gives one."""
    tool_round: ClassVar[list[tuple[str, int | None]]]
    """The exact event summary of ``tool_calls.sse``."""
    tool_round_lead: ClassVar[AssistantContent]
    """The block before the two calls in ``tool_calls.sse``."""
    tool_call_ids: ClassVar[tuple[str, str]]
    truncated_error: ClassVar[str]
    """The message of a stream cut before the API's terminal event."""
    truncated_text: ClassVar[str]
    overflow_text: ClassVar[str]
    """The API's words for a prompt larger than the context window."""
    max_tokens_field: ClassVar[str]
    """The body field of the output limit on a compatible (not official) server."""

    def error_body(self, kind: str, text: str) -> str:
        """The JSON body of an HTTP error, in the API's shape (OpenAI's by default)."""
        return json.dumps({"error": {"message": text, "type": kind}})

    async def test_a_text_response_streams_in_order_and_ends_with_one_done(
        self, sse_server: SseServer, http_client: httpx.AsyncClient
    ) -> None:
        sse_server.sse(self.wire.api, "text", chunks=ODD_CHUNKS)

        events = await self.wire.run(sse_server, http_client)

        assert summary(events) == sequence(
            "start", "text_start 0", "text_delta 0 x3", "text_end 0", "done"
        )
        assert [getattr(e, "delta", None) for e in events[2:5]] == ["Hello", ", world", "!"]
        message = final(events)
        assert message.content == [
            TextContent(text="Hello, world!", text_signature=self.text_signature)
        ]
        assert (message.stop_reason, message.error_message) == ("stop", None)
        assert message.response_id == self.text_response_id
        assert (message.api, message.model) == (self.wire.api, "test-model")

    async def test_usage_excludes_cached_input_and_is_priced_per_million_tokens(
        self, sse_server: SseServer, http_client: httpx.AsyncClient
    ) -> None:
        sse_server.sse(self.wire.api, "text")

        usage = final(await self.wire.run(sse_server, http_client)).usage

        counts = (usage.input, usage.output, usage.cache_read, usage.cache_write)
        assert counts == self.text_usage
        assert usage.total_tokens == sum(self.text_usage)
        prices = (PRICES.input, PRICES.output, PRICES.cache_read, PRICES.cache_write)
        expected = [price * tokens / 1e6 for price, tokens in zip(prices, counts, strict=True)]
        cost = usage.cost
        assert [cost.input, cost.output, cost.cache_read, cost.cache_write] == pytest.approx(
            expected
        )
        assert cost.total == pytest.approx(sum(expected))

    async def test_parallel_tool_calls_are_assembled_live_from_partial_json(
        self, sse_server: SseServer, http_client: httpx.AsyncClient
    ) -> None:
        sse_server.sse(self.wire.api, "tool_calls", chunks=ODD_CHUNKS)

        live = LiveArguments()
        events = await self.wire.run(sse_server, http_client, on_event=live)

        assert summary(events) == self.tool_round
        assert live.seen == LIVE_ARGUMENTS
        message = final(events)
        first, second = self.tool_call_ids
        assert message.content == [
            self.tool_round_lead,
            ToolCall(id=first, name="read", arguments={"path": "src/main.py", "limit": 20}),
            ToolCall(id=second, name="read", arguments={"path": "README.md"}),
        ]
        assert message.stop_reason == "toolUse"
        usage = message.usage
        counts = (usage.input, usage.output, usage.cache_read, usage.cache_write)
        assert (counts, usage.total_tokens) == ((300, 87, 2048, 0), 2435)

    async def test_a_u2028_inside_a_json_string_stays_inside_the_text(
        self, sse_server: SseServer, http_client: httpx.AsyncClient
    ) -> None:
        sse_server.sse(self.wire.api, "unicode", chunks=(1,))

        events = await self.wire.run(sse_server, http_client)

        assert summary(events) == sequence(
            "start", "text_start 0", "text_delta 0 x2", "text_end 0", "done"
        )
        assert final(events).text() == "line\u2028separator and para\u2029graph \U0001f642"

    async def test_an_abort_in_the_middle_of_a_tool_call_argument_keeps_the_partial_call(
        self, sse_server: SseServer, http_client: httpx.AsyncClient
    ) -> None:
        sse_server.sse(self.wire.api, "tool_calls", chunks=ODD_CHUNKS)
        abort = asyncio.Event()

        def abort_after_first_fragment(event: AssistantEvent) -> None:
            if isinstance(event, ToolCallDeltaEvent):
                abort.set()

        events = await self.wire.run(
            sse_server, http_client, abort=abort, on_event=abort_after_first_fragment
        )

        cut = self.tool_round.index(("toolcall_delta", 1)) + 1
        assert summary(events) == [*self.tool_round[:cut], ("error", None)]
        last = events[-1]
        assert isinstance(last, ErrorEvent)
        assert last.reason == "aborted"
        message = final(events)
        assert (message.stop_reason, message.error_message) == ("aborted", "Request was aborted")
        assert message.content == [
            self.tool_round_lead,
            ToolCall(id=self.tool_call_ids[0], name="read", arguments={"path": "src/"}),
        ]
        assert not is_retryable_error(message)

    async def test_an_abort_set_before_the_stream_starts_sends_nothing(
        self, sse_server: SseServer, http_client: httpx.AsyncClient
    ) -> None:
        abort = asyncio.Event()
        abort.set()

        events = await self.wire.run(sse_server, http_client, abort=abort)

        assert summary(events) == [("start", None), ("error", None)]
        assert final(events).stop_reason == "aborted"
        assert sse_server.requests == []

    async def test_an_abort_while_waiting_for_a_stalled_server_ends_at_once(
        self, sse_server: SseServer, http_client: httpx.AsyncClient
    ) -> None:
        body = recording(self.wire.api, "text")
        sse_server.reply(Reply(body=body, stall_after=body.index(b", world")))
        abort = asyncio.Event()

        def abort_once_waiting(event: AssistantEvent) -> None:
            if event.type == "text_delta":
                # Runs after the consumer has gone back to waiting for the next byte.
                asyncio.get_running_loop().call_soon(abort.set)

        events = await asyncio.wait_for(
            self.wire.run(sse_server, http_client, abort=abort, on_event=abort_once_waiting), 5
        )

        assert summary(events)[-3:] == [("text_start", 0), ("text_delta", 0), ("error", None)]
        message = final(events)
        assert (message.stop_reason, message.error_message) == ("aborted", "Request was aborted")
        assert message.content == [TextContent(text="Hello")]
        await asyncio.wait_for(sse_server.disconnected.wait(), 5)

    async def test_cancelling_the_consuming_task_closes_the_connection_promptly(
        self, sse_server: SseServer, http_client: httpx.AsyncClient
    ) -> None:
        body = recording(self.wire.api, "text")
        sse_server.reply(Reply(body=body, stall_after=body.index(b", world")))
        first_delta = asyncio.Event()

        async def consume() -> None:
            stream = self.wire.stream(sse_server, http_client, abort=asyncio.Event())
            async for event in stream:
                if event.type == "text_delta":
                    first_delta.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(first_delta.wait(), 5)
        task.cancel()

        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(sse_server.disconnected.wait(), 5)

    async def test_a_stalled_server_ends_the_stream_after_the_idle_timeout(
        self, sse_server: SseServer, http_client: httpx.AsyncClient
    ) -> None:
        body = recording(self.wire.api, "text")
        sse_server.reply(Reply(body=body, stall_after=body.index(b", world")))

        options = StreamOptions(idle_timeout_s=0.2)
        events = await asyncio.wait_for(self.wire.run(sse_server, http_client, HELLO, options), 5)

        assert summary(events)[-3:] == [("text_start", 0), ("text_delta", 0), ("error", None)]
        message = final(events)
        assert message.stop_reason == "error"
        assert message.error_message == (
            "Stream idle timeout: no data from the server for 0.2 s (a slow local model "
            f"may need longer: {IDLE_TIMEOUT_ADVICE})"
        )
        assert message.content == [TextContent(text="Hello")]
        assert message.retryable is True
        await asyncio.wait_for(sse_server.disconnected.wait(), 5)

    async def test_a_stream_cut_before_its_terminal_event_is_a_retryable_error(
        self, sse_server: SseServer, http_client: httpx.AsyncClient
    ) -> None:
        sse_server.sse(self.wire.api, "truncated", chunks=ODD_CHUNKS)

        events = await self.wire.run(sse_server, http_client)

        assert summary(events) == sequence("start", "text_start 0", "text_delta 0 x2", "error")
        message = final(events)
        assert (message.stop_reason, message.error_message) == ("error", self.truncated_error)
        assert message.text() == self.truncated_text
        assert message.error_status is None
        assert is_retryable_error(message)

    async def test_a_dropped_connection_is_a_retryable_error_keeping_the_partial_text(
        self, sse_server: SseServer, http_client: httpx.AsyncClient
    ) -> None:
        body = recording(self.wire.api, "text")
        sse_server.reply(Reply(body=body, chunks=ODD_CHUNKS, drop_after=body.index(b", world")))

        events = await self.wire.run(sse_server, http_client)

        assert summary(events) == sequence("start", "text_start 0", "text_delta 0", "error")
        message = final(events)
        assert message.stop_reason == "error"
        assert (message.error_message or "").startswith("Connection dropped mid-stream")
        assert message.content == [TextContent(text="Hello")]
        assert message.retryable is True
        assert is_retryable_error(message)

    @pytest.mark.parametrize(
        ("status", "kind", "text", "headers", "wait_ms"),
        [
            (429, "rate_limit_error", "Too many tokens per minute", {"retry-after": "7"}, 7000),
            (500, "api_error", "Internal server error", {}, None),
            (529, "overloaded_error", "Overloaded", {"retry-after-ms": "1500"}, 1500),
            (
                503,
                "server_error",
                "Service unavailable",
                {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"},
                0,
            ),
        ],
    )
    async def test_retryable_http_errors_carry_status_words_and_the_requested_wait(
        self,
        sse_server: SseServer,
        http_client: httpx.AsyncClient,
        status: int,
        kind: str,
        text: str,
        headers: dict[str, str],
        wait_ms: int | None,
    ) -> None:
        sse_server.error(status, self.error_body(kind, text), **headers)

        events = await self.wire.run(sse_server, http_client)

        assert summary(events) == [("start", None), ("error", None)]
        message = final(events)
        assert message.stop_reason == "error"
        assert message.error_message == f"HTTP {status}: {kind}: {text}"
        assert message.error_status == status
        # The wait travels on the message, so the harness can say "Retrying in 7s".
        assert message.retry_after_ms == wait_ms
        assert retry_after_ms(message) == wait_ms
        assert (message.content, message.usage.total_tokens) == ([], 0)
        assert is_retryable_error(message)
        assert not is_context_overflow(message, 200_000)

    async def test_a_wait_quoted_only_in_the_error_text_is_still_found(
        self, sse_server: SseServer, http_client: httpx.AsyncClient
    ) -> None:
        sse_server.error(429, self.error_body("rate_limit", "Slow down. Try again in 1.5s."))

        message = final(await self.wire.run(sse_server, http_client))

        assert message.retry_after_ms is None
        assert retry_after_ms(message) == 1500

    async def test_a_context_overflow_is_classified_as_such_and_never_retried(
        self, sse_server: SseServer, http_client: httpx.AsyncClient
    ) -> None:
        sse_server.error(400, self.error_body("invalid_request_error", self.overflow_text))

        events = await self.wire.run(sse_server, http_client)

        assert summary(events) == [("start", None), ("error", None)]
        message = final(events)
        assert message.error_message == f"HTTP 400: invalid_request_error: {self.overflow_text}"
        assert message.error_status == 400
        assert is_context_overflow(message, 200_000)
        assert not is_retryable_error(message)

    async def test_a_non_json_error_body_is_reported_by_its_first_500_characters(
        self, sse_server: SseServer, http_client: httpx.AsyncClient
    ) -> None:
        page = "<html><title>502 Bad Gateway</title>" + "x" * 2000 + "</html>"
        sse_server.error(502, page, **{"content-type": "text/html"})

        events = await self.wire.run(sse_server, http_client)

        assert summary(events) == [("start", None), ("error", None)]
        message = final(events)
        assert message.error_message == "HTTP 502: " + page[:500]
        assert message.error_status == 502
        assert is_retryable_error(message)

    async def test_the_key_is_sent_but_never_appears_in_an_error_or_a_message(
        self, sse_server: SseServer, http_client: httpx.AsyncClient
    ) -> None:
        key = self.wire.key
        echo = self.error_body("authentication_error", f"Bad key: {key} ({HEADER_CANARY})")
        sse_server.error(401, echo)
        sse_server.sse(self.wire.api, "text", chunks=ODD_CHUNKS)
        custom = {"x-custom-token": HEADER_CANARY}

        rejected = await self.wire.run(sse_server, http_client, headers=custom)
        accepted = await self.wire.run(sse_server, http_client, headers=custom)

        sent = sse_server.requests[0].headers
        assert key in sent.get("x-api-key", "") + sent.get("authorization", "")
        assert sent["x-custom-token"] == HEADER_CANARY
        message = final(rejected)
        assert message.error_message == (
            "HTTP 401: authentication_error: Bad key: [redacted] ([redacted])"
        )
        assert message.error_status == 401
        assert not is_retryable_error(message)
        for text in (everything_shown(rejected), everything_shown(accepted)):
            assert key not in text
            assert HEADER_CANARY not in text

    async def test_a_json_reply_with_status_200_is_not_read_as_an_event_stream(
        self, sse_server: SseServer, http_client: httpx.AsyncClient
    ) -> None:
        sse_server.error(200, '{"choices": []}')

        events = await self.wire.run(sse_server, http_client)

        assert summary(events) == [("start", None), ("error", None)]
        assert final(events).error_message == (
            'Expected an event stream but the server sent application/json: {"choices": []}'
        )

    async def test_a_model_of_another_api_is_refused_without_a_request(
        self, sse_server: SseServer, http_client: httpx.AsyncClient
    ) -> None:
        events = await self.wire.run(sse_server, http_client, api="martian-rpc", provider="mars")

        assert summary(events) == [("start", None), ("error", None)]
        assert final(events).error_message == (
            f"Model mars/test-model uses api 'martian-rpc', not {self.wire.api}"
        )
        assert final(events).retryable is False
        assert sse_server.requests == []

    async def test_a_refused_connection_names_the_url_and_is_retryable(
        self, http_client: httpx.AsyncClient
    ) -> None:
        base_url = f"http://127.0.0.1:{closed_port()}"
        model = priced_model(self.wire.api, base_url)

        stream = self.wire.provider(http_client).stream(model, HELLO, StreamOptions())
        events = await collect(stream)

        check_stream_order(events)
        assert summary(events) == [("start", None), ("error", None)]
        message = final(events)
        assert (message.error_message or "").startswith(
            f"Connection failed to {base_url}{self.endpoint}: "
        )
        assert (message.error_message or "").endswith("(is the server running?)")
        assert message.error_status is None
        assert is_retryable_error(message)

    @pytest.mark.parametrize("suffix", ["", "/v1"])
    async def test_a_404_names_the_url_and_suggests_v1_when_the_path_lacks_it(
        self, sse_server: SseServer, http_client: httpx.AsyncClient, suffix: str
    ) -> None:
        sse_server.error(404, '{"error": {"message": "File Not Found", "code": 404}}')

        base_url = sse_server.url + suffix
        message = final(await self.wire.run(sse_server, http_client, base_url=base_url))

        path = sse_server.requests[0].path
        assert path.endswith(self.endpoint.removeprefix("/v1"))
        text = message.error_message or ""
        tried = f"POST {sse_server.url}{path} was not found"
        assert text.startswith(f"HTTP 404: File Not Found ({tried}")
        assert ("the path has no /v1" in text) is ("/v1" not in path)
        assert message.error_status == 404
        assert not is_retryable_error(message)

    @pytest.mark.parametrize(
        "missing",
        [
            '{"error": {"message": "model \\"qwen9\\" not found, try pulling it first"}}',
            '{"object": "error", "message": "The model `qwen9` does not exist.", "code": 404}',
        ],
    )
    async def test_a_404_for_a_model_the_server_lacks_lists_the_models_it_serves(
        self, sse_server: SseServer, http_client: httpx.AsyncClient, missing: str
    ) -> None:
        sse_server.error(404, missing)
        listing = {"object": "list", "data": [{"id": "qwen3:8b"}, {"id": "llama3.2"}]}
        sse_server.error(200, json.dumps(listing))

        base_url = f"{sse_server.url}/v1"
        message = final(await self.wire.run(sse_server, http_client, base_url=base_url, id="qwen9"))

        posted, listed = sse_server.requests
        assert (listed.method, listed.path) == ("GET", "/v1/models")
        assert listed.headers.get("authorization") == posted.headers.get("authorization")
        text = message.error_message or ""
        assert text.endswith(
            f"(the server at {base_url} has no model 'qwen9'; it serves: qwen3:8b, llama3.2)"
        )
        assert "was not found" not in text  # the URL was right; the model was not
        assert message.error_status == 404
        assert not is_retryable_error(message)

    async def test_a_404_for_a_missing_model_without_a_listing_says_where_to_look(
        self, sse_server: SseServer, http_client: httpx.AsyncClient
    ) -> None:
        sse_server.error(404, '{"error": "model \'qwen9\' not found"}')
        sse_server.error(404, "404 page not found", **{"content-type": "text/plain"})

        base_url = f"{sse_server.url}/v1"
        message = final(await self.wire.run(sse_server, http_client, base_url=base_url, id="qwen9"))

        assert (message.error_message or "").endswith(
            f"(the server at {base_url} has no model 'qwen9'; "
            f"GET {base_url}/models lists the ones it serves)"
        )

    async def test_a_web_page_where_the_api_should_be_says_the_url_is_not_the_api(
        self, sse_server: SseServer, http_client: httpx.AsyncClient
    ) -> None:
        page = "<!DOCTYPE html><title>Open WebUI</title>"
        sse_server.error(200, page, **{"content-type": "text/html"})

        message = final(await self.wire.run(sse_server, http_client))

        path = sse_server.requests[0].path
        text = message.error_message or ""
        assert text.startswith("Expected an event stream but the server sent text/html: <!DOCTYPE")
        assert f"(POST {sse_server.url}{path} answered with a web page, not the API" in text
        assert ("the path has no /v1" in text) is ("/v1" not in path)
        assert message.retryable is False

    @pytest.mark.parametrize(("declared", "option", "sent"), [(4096, None, 4096), (4096, 500, 500)])
    async def test_the_models_declared_output_limit_is_sent_unless_the_options_say(
        self,
        sse_server: SseServer,
        http_client: httpx.AsyncClient,
        declared: int,
        option: int | None,
        sent: int,
    ) -> None:
        sse_server.sse(self.wire.api, "text")

        options = StreamOptions(max_tokens=option)
        await self.wire.run(sse_server, http_client, HELLO, options, max_tokens=declared)

        [request] = sse_server.requests
        assert request.json()[self.max_tokens_field] == sent

    async def test_an_empty_completion_is_an_error_that_is_not_retried(
        self, sse_server: SseServer, http_client: httpx.AsyncClient
    ) -> None:
        sse_server.sse(self.wire.api, "empty", chunks=ODD_CHUNKS)

        events = await self.wire.run(sse_server, http_client)

        assert summary(events)[-1] == ("error", None)
        assert not any(isinstance(event, DoneEvent) for event in events)
        message = final(events)
        assert (message.stop_reason, message.error_message) == ("error", EMPTY_ANSWER_MESSAGE)
        assert message.text() == ""
        assert message.usage.output == 1  # the attempt's usage is kept
        assert not is_retryable_error(message)

    @pytest.mark.parametrize(
        ("status", "kind", "text"),
        [
            (400, "invalid_request_error", "Invalid value for 'tools'"),
            (404, "not_found_error", "model 'qwen9' not found"),
            (409, "conflict", "Conflict"),
            (422, "unprocessable_entity", "Unprocessable: overloaded?"),
            (500, "server_error", "The model output does not match the expected format"),
        ],
    )
    async def test_a_failure_that_cannot_change_on_retry_is_not_retryable(
        self,
        sse_server: SseServer,
        http_client: httpx.AsyncClient,
        status: int,
        kind: str,
        text: str,
    ) -> None:
        sse_server.error(status, self.error_body(kind, text))

        message = final(await self.wire.run(sse_server, http_client))

        assert message.error_status == status
        assert (message.error_message or "").startswith(f"HTTP {status}: {kind}: {text}")
        assert not is_retryable_error(message)
