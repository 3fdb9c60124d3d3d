"""The ``Provider`` protocol: one wire API turned into an ``AssistantStream``.

A provider never raises for a failed request: HTTP errors, dropped connections,
idle timeouts and aborts all end the stream with an ``ErrorEvent``
(model-layer.md 1.4). Credentials are looked up through a ``KeyResolver`` at
request time and never travel in ``StreamOptions``, which the harness stores.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from pi_durable_tui.ai._events import AssistantStream
from pi_durable_tui.ai._types import Context, Model, StreamOptions

KeyResolver = Callable[[str], "str | None"]
"""Maps a provider name (``anthropic``, ``openai``...) to its API key, or ``None``."""


class Provider(Protocol):
    """Streams responses for every model whose ``api`` equals ``self.api``."""

    @property
    def api(self) -> str:
        """The wire API this provider implements, for example ``anthropic-messages``."""
        ...

    def stream(
        self,
        model: Model,
        context: Context,
        options: StreamOptions,
        *,
        abort: asyncio.Event | None = None,
    ) -> AssistantStream:
        """Start one request.

        Args:
            model: The model to call; its ``api`` must match this provider.
            context: System prompt, messages and tools.
            options: Per-request options.
            abort: When set, the stream stops promptly and ends with an ``aborted``
                error event carrying the partial message.

        Returns:
            The stream of events; nothing is sent until it is first iterated.
        """
        ...
