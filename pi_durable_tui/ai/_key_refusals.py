"""What to do when a server refuses a request's credentials (HTTP 401 or 403).

Owns ``key_refusal_hint`` (one clause saying which variable sends a key to that
server, or that none was sent and how to send one) and ``explain_key_refusals``
(a stream whose final error carries that clause). ``Models.stream`` applies it
to every provider's stream, so a local server started with ``--api-key``, a
proxy that wants a token and a rejected vendor key all say what to set,
whichever wire API spoke. Implements DESIGN.md section 5 (keys come from the
environment; a custom provider names its key variable).

REMINDER: the clause names variables, never their values.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from pi_durable_tui.ai._events import AssistantEvent, AssistantStream, ErrorEvent

KEY_REFUSED_STATUSES = frozenset({401, 403})
"""Statuses that mean the server wants other credentials."""


def key_refusal_hint(provider: str, variable: str | None, *, declared: bool, key_sent: bool) -> str:
    """Say which variable holds the key a server refused, or how to send one.

    Args:
        provider: The provider part of the model's ``provider/id``.
        variable: The environment variable the provider's key comes from, if any.
        declared: The provider is known (the catalog's or declared in settings),
            not only a name used with ``--base-url``.
        key_sent: A key was sent with the request.

    Returns:
        One clause, without a trailing period.
    """
    if key_sent and variable:
        return f"the server refused the key in {variable}: check it"
    if variable:
        return f"no key was sent: set {variable}"
    if declared:
        return (
            f'no key was sent: name the variable holding it with "api_key_env" in the '
            f"{provider!r} provider of your settings, and export it"
        )
    return (
        'no key was sent: declare this server as a provider in settings with "api_key_env", '
        "or use --model openai/<id> with OPENAI_API_KEY set"
    )


def explain_key_refusals(stream: AssistantStream, hint: Callable[[], str]) -> AssistantStream:
    """Wrap a stream so that a 401 or 403 error says what to set.

    Args:
        stream: A provider's stream.
        hint: Makes the clause (called only for a refusal).

    Returns:
        A stream with the same events, the final error's message extended by
        ``(<hint>)`` when its status is 401 or 403.
    """

    async def events() -> AsyncIterator[AssistantEvent]:
        try:
            async for event in stream:
                if (
                    isinstance(event, ErrorEvent)
                    and event.error.error_status in KEY_REFUSED_STATUSES
                ):
                    text = f"{event.error.error_message or 'HTTP error'} ({hint()})"
                    error = event.error.model_copy(update={"error_message": text})
                    event = ErrorEvent(event.reason, error)
                yield event
        finally:
            await stream.aclose()

    return AssistantStream(events())
