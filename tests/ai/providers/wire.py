"""How a provider test calls one wire API: its provider, its key, a priced model, a request.

``WireApi`` sends ``HELLO`` (or any context) to the 127.0.0.1 server of
``tests.ai.sse_server`` and reads the whole stream, checking the event order
of model-layer.md 1.3 on the way; ``priced_model`` gives round prices so costs
are easy to check.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from pi_durable_tui.ai import (
    AssistantEvent,
    AssistantStream,
    Context,
    KeyResolver,
    Model,
    ModelCost,
    Provider,
    StreamOptions,
    ToolSpec,
    UserMessage,
)
from tests.ai.sse_server import SseServer
from tests.ai.streams import check_stream_order, collect

HELLO = Context(system_prompt="You are terse.", messages=[UserMessage(content="Say hello")])
"""The smallest request every provider test sends."""
READ_TOOL = ToolSpec(
    name="read",
    description="Read a file",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)
"""A tool offered in tool-call tests."""
PRICES = ModelCost(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
ProviderType = Callable[[KeyResolver, httpx.AsyncClient], Provider]


def priced_model(api: str, base_url: str, **fields: Any) -> Model:
    """A model of ``api`` served at ``base_url`` with round prices; ``fields`` override."""
    values: dict[str, Any] = {
        "id": "test-model",
        "api": api,
        "provider": "anthropic" if api.startswith("anthropic") else "openai",
        "base_url": base_url,
        "cost": PRICES,
        "context_window": 200_000,
        "max_tokens": 64_000,
    }
    values.update(fields)
    return Model(**values)


@dataclass(frozen=True)
class WireApi:
    """One wire API under test: its provider, its key, and how a test calls it."""

    api: str
    provider_type: ProviderType
    key: str

    def provider(self, client: httpx.AsyncClient, key: str | None = None) -> Provider:
        """The provider, resolving every provider name to ``key`` (this API's by default)."""
        wanted = self.key if key is None else key
        return self.provider_type(lambda name: wanted or None, client)

    def model(self, server: SseServer, **fields: Any) -> Model:
        """A priced model of this API served by ``server``."""
        api, base_url = fields.pop("api", self.api), fields.pop("base_url", server.url)
        return priced_model(api, base_url, **fields)

    def stream(
        self,
        server: SseServer,
        client: httpx.AsyncClient,
        context: Context = HELLO,
        options: StreamOptions | None = None,
        *,
        abort: asyncio.Event | None = None,
        **fields: Any,
    ) -> AssistantStream:
        """Start one request to ``server``; model fields override ``priced_model``'s."""
        model = self.model(server, **fields)
        return self.provider(client).stream(model, context, options or StreamOptions(), abort=abort)

    async def run(
        self,
        server: SseServer,
        client: httpx.AsyncClient,
        context: Context = HELLO,
        options: StreamOptions | None = None,
        *,
        abort: asyncio.Event | None = None,
        on_event: Callable[[AssistantEvent], None] | None = None,
        **fields: Any,
    ) -> list[AssistantEvent]:
        """Read one whole response, checking the event order of model-layer.md 1.3."""
        stream = self.stream(server, client, context, options, abort=abort, **fields)
        events = await collect(stream, on_event)
        check_stream_order(events)
        return events
