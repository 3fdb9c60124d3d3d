"""Fixtures of the web tests: a served session with its web page on 127.0.0.1.

``web_page(*responses, **screen_options)`` serves a session as the host tests
do (``tests/app/host/conftest.py``), starts a real ``WebServer`` on
``127.0.0.1:0`` over its host and returns ``Page``: the server, an aiohttp
client session, and ``socket()`` to open the WebSocket as a page would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from pi_durable_tui.app._wire import Mirror
from pi_durable_tui.app.web import WebAddress, WebServer
from tests.app.host.conftest import Served, ServeFactory, serve
from tests.deadlines import WAIT
from tests.harness.run_support import within

__all__ = ["PageFactory", "Socket", "serve", "serve_process"]


@dataclass(eq=False)
class Socket:
    """A page's WebSocket and the mirror it keeps."""

    ws: aiohttp.ClientWebSocketResponse
    mirror: Mirror = field(default_factory=Mirror)
    seen: list[dict[str, Any]] = field(default_factory=list)

    async def next(self, kind: str | None = None) -> dict[str, Any]:
        """The next message (of ``kind``), applied to the mirror."""
        while True:
            frame = await within(self.ws.receive(), WAIT)
            assert frame.type == aiohttp.WSMsgType.TEXT, f"the socket ended: {frame}"
            message = json.loads(frame.data)
            self.seen.append(message)
            self.mirror.apply(message)
            if kind is None or message["t"] == kind:
                return message

    async def hello(self, **fields: Any) -> dict[str, Any]:
        """Say hello; returns the snapshot after the welcome."""
        await self.ws.send_str(json.dumps({"t": "hello", "v": 1, "name": "web", **fields}))
        assert (await self.next())["t"] == "welcome"
        return await self.next("snapshot")

    async def call(self, call_id: int, method: str, **args: Any) -> dict[str, Any]:
        """Send a call; returns its reply (applying what comes before it)."""
        message = {"t": "call", "id": call_id, "method": method, "args": args}
        await self.ws.send_str(json.dumps(message))
        while True:
            reply = await self.next()
            if reply["t"] == "reply" and reply["id"] == call_id:
                return reply


@dataclass(eq=False)
class Page:
    served: Served
    server: WebServer
    client: aiohttp.ClientSession

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.address.port}"

    @property
    def token(self) -> str:
        return self.server.access.token

    async def socket(self, *, token: str | None = None, **headers: str) -> Socket:
        """The WebSocket with ``?token=`` (the page's own token by default)."""
        url = f"{self.base}/ws?token={self.token if token is None else token}"
        ws = await within(self.client.ws_connect(url, headers=headers, autoping=True))
        return Socket(ws)


PageFactory = Callable[..., Awaitable[Page]]


def serve_process(home: Path, project: Path, *arguments: str) -> subprocess.Popen[str]:
    """``python -m pi_durable_tui serve ARGUMENTS`` in ``project``, stdout and stderr piped."""
    worktree = str(Path(__file__).resolve().parents[3])  # the code under test
    return subprocess.Popen(
        [sys.executable, "-m", "pi_durable_tui", "serve", *arguments],
        cwd=project,
        env={**os.environ, "PIDURABLE_HOME": str(home), "PYTHONPATH": worktree},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
async def web_page(serve: ServeFactory) -> AsyncIterator[PageFactory]:
    pages: list[Page] = []

    async def factory(*responses: Any, **options: Any) -> Page:
        served = await serve(*responses, **options)
        server = WebServer(served.host, WebAddress("127.0.0.1", 0))
        await within(server.start())
        jar = aiohttp.CookieJar(unsafe=True)  # keeps cookies of an IP address (127.0.0.1)
        page = Page(served, server, aiohttp.ClientSession(cookie_jar=jar))
        pages.append(page)
        return page

    yield factory
    for page in pages:
        await within(page.client.close())
        await within(page.served.host.close())
        await within(page.server.close())
