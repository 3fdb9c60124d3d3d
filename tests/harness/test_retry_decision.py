"""The one retry decision that generation and compaction share (R86, R87, R111)."""

from __future__ import annotations

from typing import Any

import pytest

from pi_durable_tui.ai import AssistantMessage
from pi_durable_tui.harness import RetrySettings
from pi_durable_tui.harness._settings import retry_wait_ms

POLICY = RetrySettings(base_delay_ms=2000, max_agent_delay_ms=60_000, max_retries=3)


def failed(text: str, status: int | None = None, **fields: Any) -> AssistantMessage:
    values: dict[str, Any] = {
        "api": "openai-completions",
        "provider": "local",
        "model": "qwen3-8b",
        "stop_reason": "error",
        "error_message": text,
        "error_status": status,
    }
    values.update(fields)
    return AssistantMessage(**values)


@pytest.mark.parametrize(("attempt", "wait"), [(1, 2000), (2, 4000), (3, 8000), (4, None)])
def test_a_transient_failure_waits_twice_as_long_each_attempt_until_retries_run_out(
    attempt: int, wait: int | None
) -> None:
    assert retry_wait_ms(POLICY, failed("Overloaded", 529), attempt) == wait


@pytest.mark.parametrize(
    "message",
    [
        failed("HTTP 400: invalid_request_error: bad tools", 400),
        failed("HTTP 409: conflict", 409),
        failed("Error from the server: The model output does not match the expected format", 500),
        failed("HTTP 400: prompt is too long: 300000 tokens > 200000 maximum", 400),
        failed("", stop_reason="stop"),
        failed("Request was aborted", stop_reason="aborted"),
    ],
)
def test_a_failure_that_cannot_change_on_retry_is_never_retried(message: AssistantMessage) -> None:
    assert retry_wait_ms(POLICY, message, 1) is None


def test_a_provider_wait_longer_than_the_policy_accepts_gives_up_and_a_shorter_one_wins() -> None:
    long_wait = failed("HTTP 429: rate limited", 429, retry_after_ms=120_000)
    short_wait = failed("HTTP 429: rate limited", 429, retry_after_ms=7000)

    assert retry_wait_ms(POLICY, long_wait, 1) is None
    assert retry_wait_ms(POLICY, short_wait, 1) == 7000


def test_disabled_retries_never_wait() -> None:
    policy = RetrySettings(enabled=False)

    assert retry_wait_ms(policy, failed("Overloaded", 529), 1) is None
