"""Fixtures of the model-layer tests: the recorded-SSE server on 127.0.0.1 and a client for it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.ai.sse_server import SseServer


@pytest.fixture
async def sse_server() -> AsyncIterator[SseServer]:
    server = SseServer()
    await server.start()
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
async def http_client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=httpx.Timeout(5.0, read=None), trust_env=False) as client:
        yield client
