"""Classifying failed responses: retry, context overflow, requested wait.

Owns ``is_retryable_error``, ``is_context_overflow`` and ``retry_after_ms``,
which the harness calls on a final ``AssistantMessage``; streams never retry by
themselves. Implements model-layer.md 1.4 (overflow classifier) and 1.9
(retry conditions).
"""

from __future__ import annotations

import re

from pi_durable_tui.ai._types import AssistantMessage

RETRYABLE_STATUSES = frozenset({408, 429})
"""4xx statuses worth retrying (a timeout, a rate limit); every 5xx (529 included) is
retryable too. Any other 4xx says the request itself is wrong: sending it again
cannot change the answer."""

_PERMANENT = re.compile(
    "|".join(
        [
            # A local server that cannot parse what the model produced (llama.cpp's
            # grammar-constrained output, tool-call parsers): at temperature 0 the
            # same request produces the same output, so a retry fails the same way.
            r"does not match the expected format",
            r"failed to parse (?:the )?(?:input|output|model output|tool call)",
        ]
    ),
    re.IGNORECASE,
)

_OVERFLOW = re.compile(
    "|".join(
        [
            r"prompt is too long",  # Anthropic
            r"input is too long",
            r"exceed(?:s|ed)? (?:the )?context (?:window|limit|length)",  # Anthropic, generic
            r"maximum context length",  # OpenAI Chat
            r"context[_ ]length[_ ]exceeded",  # OpenAI code
            r"exceeds the context window",  # OpenAI Responses
            r"context window (?:is )?exceeded",
            r"exceeds? the available context size",  # llama.cpp
            r"exceed_context_size_error",  # llama.cpp error type
            r"greater than the context length",  # LM Studio
            r"prompt too long",  # Ollama
            r"reduce the length of the (?:messages|input|prompt)",
            r"too many tokens in (?:the )?(?:prompt|input|request)",
            r"model_context_window_exceeded",
        ]
    ),
    re.IGNORECASE,
)

_RATE_LIMIT = re.compile(
    r"rate[ _-]?limit|too many requests|tokens per min|requests per min|\bTPM\b|\bRPM\b|quota",
    re.IGNORECASE,
)

_TRANSIENT = re.compile(
    "|".join(
        [
            r"overloaded",
            r"rate[ _-]?limit",
            r"too many requests",
            r"\b(?:408|429|5\d\d)\b",
            r"service unavailable",
            r"bad gateway",
            r"gateway timeout",
            r"internal server error",
            r"server[ _]error",
            r"connection (?:refused|reset|dropped|failed|closed|error)",
            r"fetch failed",
            r"network error",
            r"terminated",
            r"timed out",
            r"idle timeout",
            r"ended before",
            r"retry delay",
            r"temporarily unavailable",
        ]
    ),
    re.IGNORECASE,
)

_TRY_AGAIN_IN = re.compile(
    r"(?:try again|retry) (?:in|after) (\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?)\b",
    re.IGNORECASE,
)


def is_context_overflow(message: AssistantMessage, context_window: int) -> bool:
    """Tell whether a response failed (or was cut) because the prompt was too large.

    Args:
        message: The final message of a response.
        context_window: The model's context window in tokens; ``0`` skips the
            checks for silent overflow.

    Returns:
        True for an error phrased as an overflow by any known provider (rate
        limits excluded), or a silent overflow: a prompt (input plus cache reads
        and writes) larger than the window, or a ``length`` stop with no output.
    """
    if message.stop_reason == "error":
        text = message.error_message or ""
        if message.error_status == 429 or _RATE_LIMIT.search(text):
            return False
        if _OVERFLOW.search(text):
            return True
    if context_window > 0 and message.stop_reason in ("stop", "length", "toolUse"):
        usage = message.usage
        if usage.input + usage.cache_read + usage.cache_write > context_window:
            return True
    return message.stop_reason == "length" and message.usage.output == 0


def is_retryable_error(message: AssistantMessage) -> bool:
    """Tell whether a failed response is worth sending again.

    Args:
        message: The final message of a response.

    Returns:
        False unless the stop reason is ``error``, and always False for a context
        overflow or a failure that cannot change on retry (a server that cannot
        parse the model's output, whatever status it gave). Otherwise the
        provider's own ``retryable`` verdict when it gave one; then the status
        (408, 429 and 5xx yes, every other 4xx no); then the text (overloaded,
        rate limit, dropped connection, timeout...).
    """
    if message.stop_reason != "error":
        return False
    if is_context_overflow(message, 0):
        return False
    if _PERMANENT.search(message.error_message or ""):
        return False
    if message.retryable is not None:
        return message.retryable
    status = message.error_status
    if status is not None:
        return status in RETRYABLE_STATUSES or 500 <= status <= 599
    return bool(_TRANSIENT.search(message.error_message or ""))


def retry_after_ms(message: AssistantMessage) -> int | None:
    """Return how long the provider asked to wait before a retry.

    Args:
        message: The final message of a failed response.

    Returns:
        The ``retry-after`` the stream recorded, else a wait quoted in the
        error text ("Please try again in 1.5s"), else ``None``.
    """
    if message.retry_after_ms is not None:
        return message.retry_after_ms
    match = _TRY_AGAIN_IN.search(message.error_message or "")
    if match is None:
        return None
    amount = float(match.group(1))
    unit = match.group(2).lower()
    return round(amount if unit.startswith("m") else amount * 1000)
