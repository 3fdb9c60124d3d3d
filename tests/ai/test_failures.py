"""Classifying failed responses: retry, context overflow and requested waits."""

from __future__ import annotations

from typing import Any

import pytest

from pi_durable_tui.ai import (
    AssistantMessage,
    Usage,
    is_context_overflow,
    is_retryable_error,
    retry_after_ms,
)


def failed(text: str = "", status: int | None = None, **fields: Any) -> AssistantMessage:
    values: dict[str, Any] = {
        "api": "openai-completions",
        "provider": "p",
        "model": "m",
        "stop_reason": "error",
        "error_message": text,
        "error_status": status,
    }
    values.update(fields)
    return AssistantMessage(**values)


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504, 529])
def test_timeouts_rate_limits_and_server_errors_are_retryable(status: int) -> None:
    assert is_retryable_error(failed("whatever", status))


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 413, 422, 425])
def test_every_other_client_error_is_not_retryable(status: int) -> None:
    assert not is_retryable_error(failed("Overloaded?", status))


@pytest.mark.parametrize(
    ("text", "status", "verdict"),
    [
        ("The model output does not match the expected format", 500, None),
        ("Error from the server: Failed to parse input at pos 12", None, None),
        ("failed to parse tool call: overloaded", 503, True),
    ],
)
def test_a_server_that_cannot_parse_the_models_output_is_never_retried(
    text: str, status: int | None, verdict: bool | None
) -> None:
    assert not is_retryable_error(failed(text, status, retryable=verdict))


@pytest.mark.parametrize(
    "text",
    [
        "overloaded_error: Overloaded",
        "Rate limit reached for requests",
        "Connection dropped mid-stream: peer closed connection",
        "Connection failed: [Errno 111] Connection refused",
        "Stream idle timeout: no data from the server for 120 s",
        "The stream ended before message_stop: the response is incomplete",
        "fetch failed",
        "upstream error 503",
    ],
)
def test_without_a_status_transient_texts_are_retryable(text: str) -> None:
    assert is_retryable_error(failed(text))


def test_the_providers_own_verdict_comes_before_the_status_and_the_text() -> None:
    assert not is_retryable_error(failed("overloaded", 529, retryable=False))
    assert is_retryable_error(failed("odd", 400, retryable=True))
    assert not is_retryable_error(failed("The model declined to respond"))


def test_aborted_and_successful_messages_are_never_retried() -> None:
    assert not is_retryable_error(failed("Request was aborted", stop_reason="aborted"))
    assert not is_retryable_error(failed("", 500, stop_reason="stop"))


def test_a_context_overflow_is_never_retried_even_when_flagged_retryable() -> None:
    overflow = failed("prompt is too long: 210000 tokens > 200000 maximum", 400, retryable=True)

    assert is_context_overflow(overflow, 200_000)
    assert not is_retryable_error(overflow)


@pytest.mark.parametrize(
    "text",
    [
        "prompt is too long: 213462 tokens > 200000 maximum",
        "input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000",
        "This model's maximum context length is 128000 tokens.",
        "Your input exceeds the context window of this model.",
        "context_length_exceeded",
        "the request exceeds the available context size, try increasing it",
        "Trying to keep the first 9000 tokens when context the overflows. "
        "However, the model is loaded with context length of only 8192 tokens, which is not "
        "enough. Try to load the model with a larger context length, or provide a shorter input"
        " - The number of tokens to keep from the initial prompt is greater than the context "
        "length",
        "prompt too long; exceeded max context length by 100 tokens",
    ],
)
def test_overflow_phrasings_of_each_provider_are_recognised(text: str) -> None:
    assert is_context_overflow(failed(text, 400), 128_000)


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 50000", 429),
        ("Rate limit: exceeds the context window quota", None),
        ("Overloaded", 529),
    ],
)
def test_rate_limit_texts_are_not_overflows(text: str, status: int | None) -> None:
    assert not is_context_overflow(failed(text, status), 128_000)


def test_a_silent_overflow_is_a_prompt_larger_than_the_window_or_a_length_stop_without_output() -> (
    None
):
    big = failed(stop_reason="stop", usage=Usage(input=1_000, cache_read=130_000, output=50))
    cut = failed(stop_reason="length", usage=Usage(input=100, output=0))
    fine = failed(stop_reason="length", usage=Usage(input=100, output=10))

    assert is_context_overflow(big, 128_000)
    assert not is_context_overflow(big, 200_000)
    assert is_context_overflow(cut, 128_000)
    assert not is_context_overflow(fine, 128_000)


def test_the_requested_wait_comes_from_the_header_or_the_error_text() -> None:
    assert retry_after_ms(failed("try again in 2s", retry_after_ms=750)) == 750
    assert retry_after_ms(failed("Please try again in 1.5s.")) == 1500
    assert retry_after_ms(failed("Please retry after 300ms")) == 300
    assert retry_after_ms(failed("Please try again later.")) is None
