"""The HTTP layer the providers share, and building them: keys, bodies, errors, waits."""

from __future__ import annotations

import email.utils
import json

import httpx
import pytest

from pi_durable_tui.ai import create_providers, env_keys
from pi_durable_tui.ai.providers import (
    AnthropicProvider,
    OpenAICompletionsProvider,
    OpenAIResponsesProvider,
)
from pi_durable_tui.ai.providers._transport import (
    describe_error_body,
    encode_json_body,
    parse_retry_after_ms,
    redact,
    secrets_of,
)


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


def test_env_keys_reads_a_custom_providers_variable_at_each_request() -> None:
    environ: dict[str, str] = {}
    keys = env_keys(environ, {"vllm": "VLLM_KEY"})

    assert keys("vllm") is None
    environ["VLLM_KEY"] = "v-key"
    assert keys("vllm") == "v-key"
    assert keys("anthropic") is None  # only the variables given are read


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
        # a type the text already names is not repeated
        (b'{"error":{"message":"Limit for requests","type":"requests"}}', "Limit for requests"),
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
