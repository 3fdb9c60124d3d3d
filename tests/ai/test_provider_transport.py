"""What the three HTTP providers share: keys, cancellation, abort, idle timeout, errors."""

from __future__ import annotations

import asyncio
import email.utils
import json
import socket
from collections.abc import Callable

import httpx
import pytest

from pi_durable_tui.ai.anthropic import AnthropicProvider
from pi_durable_tui.ai.events import AssistantEvent, AssistantStream, DoneEvent, ErrorEvent
from pi_durable_tui.ai.failures import is_retryable_error
from pi_durable_tui.ai.http import (
    describe_error_body,
    encode_json_body,
    parse_retry_after_ms,
    redact,
    secrets_of,
)
from pi_durable_tui.ai.openai_completions import OpenAICompletionsProvider
from pi_durable_tui.ai.openai_responses import OpenAIResponsesProvider
from pi_durable_tui.ai.provider import KeyResolver, Provider
from pi_durable_tui.ai.providers import create_providers, env_keys
from pi_durable_tui.ai.types import Context, StreamOptions, TextContent, UserMessage
from tests.ai.sse_server import (
    ODD_CHUNKS,
    Reply,
    SseServer,
    collect,
    final,
    priced_model,
    recording,
    summary,
)

CANARY = "sk-canary-7f3a9c1e5b2d8046"
HEADER_CANARY = "tok-canary-0d9e8f7a6b5c"
HELLO = Context(messages=[UserMessage(content="hi")])
ProviderFactory = Callable[[KeyResolver, httpx.AsyncClient], Provider]
PROVIDERS: list[tuple[str, ProviderFactory]] = [
    ("anthropic-messages", AnthropicProvider),
    ("openai-completions", OpenAICompletionsProvider),
    ("openai-responses", OpenAIResponsesProvider),
]
API_NAMES = [api for api, _ in PROVIDERS]


def stream_of(
    api: str,
    server: SseServer,
    client: httpx.AsyncClient,
    options: StreamOptions | None = None,
    abort: asyncio.Event | None = None,
) -> AssistantStream:
    factory = dict(PROVIDERS)[api]
    model = priced_model(api, server.url, headers={"x-custom-token": HEADER_CANARY})
    return factory(lambda name: CANARY, client).stream(
        model, HELLO, options or StreamOptions(), abort=abort
    )


def dumped(events: list[AssistantEvent]) -> str:
    parts = []
    for event in events:
        if isinstance(event, DoneEvent):
            parts.append(event.message.model_dump_json())
        elif isinstance(event, ErrorEvent):
            parts.append(event.error.model_dump_json())
        else:
            parts.append(event.partial.model_dump_json())
    return "\n".join(parts)


@pytest.mark.parametrize("api", API_NAMES)
async def test_the_api_key_is_sent_but_never_appears_in_errors_or_messages(
    sse_server: SseServer, http_client: httpx.AsyncClient, api: str
) -> None:
    echo = {"error": {"message": f"Incorrect API key provided: {CANARY} ({HEADER_CANARY})"}}
    sse_server.error(401, json.dumps(echo))
    sse_server.sse(api, "text", chunks=ODD_CHUNKS)

    rejected = await collect(stream_of(api, sse_server, http_client))
    accepted = await collect(stream_of(api, sse_server, http_client))

    sent = sse_server.requests[0].headers
    assert CANARY in (sent.get("x-api-key", "") + sent.get("authorization", ""))
    assert sent["x-custom-token"] == HEADER_CANARY
    assert final(rejected).error_message == (
        "HTTP 401: Incorrect API key provided: [redacted] ([redacted])"
    )
    assert final(rejected).error_status == 401
    assert not is_retryable_error(final(rejected))
    for text in (dumped(rejected), dumped(accepted)):
        assert CANARY not in text
        assert HEADER_CANARY not in text


@pytest.mark.parametrize("api", API_NAMES)
async def test_cancelling_the_consuming_task_closes_the_connection_promptly(
    sse_server: SseServer, http_client: httpx.AsyncClient, api: str
) -> None:
    body = recording(api, "text")
    sse_server.reply(Reply(body=body, stall_after=body.index(b", world")))
    first_delta = asyncio.Event()

    async def consume() -> None:
        async for event in stream_of(api, sse_server, http_client, abort=asyncio.Event()):
            if event.type == "text_delta":
                first_delta.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first_delta.wait(), 5)
    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(sse_server.disconnected.wait(), 5)


@pytest.mark.parametrize("api", API_NAMES)
async def test_a_stalled_server_ends_the_stream_after_the_idle_timeout(
    sse_server: SseServer, http_client: httpx.AsyncClient, api: str
) -> None:
    body = recording(api, "text")
    sse_server.reply(Reply(body=body, stall_after=body.index(b", world")))

    stream = stream_of(api, sse_server, http_client, StreamOptions(idle_timeout_s=0.2))
    events = await asyncio.wait_for(collect(stream), 5)

    assert summary(events)[-3:] == [("text_start", 0), ("text_delta", 0), ("error", None)]
    message = final(events)
    assert message.stop_reason == "error"
    assert message.error_message == "Stream idle timeout: no data from the server for 0.2 s"
    assert message.content[0] == TextContent(text="Hello", text_signature=None)
    assert message.retryable is True
    await asyncio.wait_for(sse_server.disconnected.wait(), 5)


@pytest.mark.parametrize("api", API_NAMES)
async def test_an_abort_while_waiting_for_a_stalled_server_ends_at_once(
    sse_server: SseServer, http_client: httpx.AsyncClient, api: str
) -> None:
    body = recording(api, "text")
    sse_server.reply(Reply(body=body, stall_after=body.index(b", world")))
    abort = asyncio.Event()

    def abort_once_waiting(event: AssistantEvent) -> None:
        if event.type == "text_delta":
            # Runs after the consumer has gone back to waiting for the next byte.
            asyncio.get_running_loop().call_soon(abort.set)

    stream = stream_of(api, sse_server, http_client, abort=abort)
    events = await asyncio.wait_for(collect(stream, abort_once_waiting), 5)

    assert summary(events)[-3:] == [("text_start", 0), ("text_delta", 0), ("error", None)]
    message = final(events)
    assert (message.stop_reason, message.error_message) == ("aborted", "Request was aborted")
    assert message.content == [TextContent(text="Hello")]
    await asyncio.wait_for(sse_server.disconnected.wait(), 5)


async def test_an_abort_set_before_the_stream_starts_sends_nothing(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    abort = asyncio.Event()
    abort.set()

    events = await collect(stream_of("anthropic-messages", sse_server, http_client, abort=abort))

    assert summary(events) == [("start", None), ("error", None)]
    assert final(events).stop_reason == "aborted"
    assert sse_server.requests == []


async def test_a_json_reply_with_status_200_is_not_read_as_an_event_stream(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    sse_server.error(200, '{"choices": []}')

    events = await collect(stream_of("openai-completions", sse_server, http_client))

    assert summary(events) == [("start", None), ("error", None)]
    assert final(events).error_message == (
        'Expected an event stream but the server sent application/json: {"choices": []}'
    )


async def test_a_refused_connection_is_a_retryable_error(http_client: httpx.AsyncClient) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = priced_model("openai-completions", f"http://127.0.0.1:{port}/v1")
    provider = OpenAICompletionsProvider(lambda name: None, http_client)

    events = await collect(provider.stream(model, HELLO, StreamOptions()))

    assert summary(events) == [("start", None), ("error", None)]
    message = final(events)
    assert message.error_message is not None
    assert message.error_message.startswith("Connection failed")
    assert message.error_status is None
    assert is_retryable_error(message)


async def test_a_model_of_another_api_is_refused_without_a_request(
    sse_server: SseServer, http_client: httpx.AsyncClient
) -> None:
    model = priced_model("openai-responses", sse_server.url)
    provider = AnthropicProvider(lambda name: CANARY, http_client)

    events = await collect(provider.stream(model, HELLO, StreamOptions()))

    assert summary(events) == [("start", None), ("error", None)]
    assert final(events).error_message == (
        "Model openai/test-model uses api 'openai-responses', not anthropic-messages"
    )
    assert sse_server.requests == []


def test_create_providers_maps_each_api_to_its_provider_sharing_one_client() -> None:
    client = httpx.AsyncClient()
    providers = create_providers(lambda name: None, client)

    assert sorted(providers) == ["anthropic-messages", "openai-completions", "openai-responses"]
    assert isinstance(providers["anthropic-messages"], AnthropicProvider)
    assert isinstance(providers["openai-completions"], OpenAICompletionsProvider)
    assert isinstance(providers["openai-responses"], OpenAIResponsesProvider)
    assert all(provider.api == api for api, provider in providers.items())


def test_env_keys_reads_the_two_variables_and_knows_no_other_provider() -> None:
    environ = {"ANTHROPIC_API_KEY": "a-key", "OPENAI_API_KEY": ""}
    keys = env_keys(environ)

    assert keys("anthropic") == "a-key"
    assert keys("openai") is None
    assert keys("ollama") is None
    environ["OPENAI_API_KEY"] = "o-key"
    assert keys("openai") == "o-key"


def test_retry_after_is_read_in_milliseconds_seconds_or_as_an_http_date() -> None:
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)

    assert parse_retry_after_ms(httpx.Headers({"retry-after-ms": "1500.4"})) == 1500
    assert parse_retry_after_ms(httpx.Headers({"retry-after": "2.5"})) == 2500
    assert parse_retry_after_ms(httpx.Headers({"retry-after": date}), now=now) == 30_000
    assert parse_retry_after_ms(httpx.Headers({"retry-after": date}), now=now + 60) == 0
    assert parse_retry_after_ms(httpx.Headers({"retry-after": "soon"})) is None
    assert parse_retry_after_ms(httpx.Headers({})) is None


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"type":"error","error":{"type":"api_error","message":"boom"}}', "api_error: boom"),
        (b'{"error":{"message":"bad","code":"invalid"}}', "invalid: bad"),
        (b'{"error":"model not found"}', "model not found"),
        (b'{"message":"nope"}', "nope"),
        (b'{"detail":"Not Found"}', "Not Found"),
        (b'[{"error":{"message":"listed"}}]', "listed"),
        (b"", "Bad Gateway"),
        (b"  plain\n\ntext  ", "plain text"),
    ],
)
def test_error_bodies_become_the_providers_own_words(body: bytes, expected: str) -> None:
    assert describe_error_body(502, body, "Bad Gateway") == f"HTTP 502: {expected}"


def test_long_non_json_error_bodies_keep_their_first_500_characters() -> None:
    assert describe_error_body(500, b"y" * 5000) == "HTTP 500: " + "y" * 500


def test_request_bodies_drop_lone_surrogates_and_keep_every_other_character() -> None:
    encoded = encode_json_body({"text": "a\ud800b\udfffc \u2028 \U0001f642"})

    assert json.loads(encoded) == {"text": "abc \u2028 \U0001f642"}


def test_credential_headers_are_secrets_with_bearer_tokens_listed_bare() -> None:
    secrets = secrets_of(
        {"authorization": "Bearer abc123", "x-api-key": "k1", "content-type": "application/json"}
    )

    assert secrets == ("Bearer abc123", "abc123", "k1")
    assert redact("key abc123 and k1", secrets) == "key [redacted] and [redacted]"
