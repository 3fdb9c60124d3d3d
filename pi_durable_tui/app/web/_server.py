"""The web page's server: static files and the WebSocket, on aiohttp (issue 15).

``WebServer`` serves the page (``static/``, shipped in the wheel, nothing
fetched from elsewhere) and ``/ws``, a WebSocket speaking the same message
family as the Unix socket (``app._wire``), one message per text frame. The
WebSocket is just another transport of the session's ``SessionHost``
(``WebSocketTransport``): after the access checks (``_access``) the upgrade is
handed to ``SessionHost.serve_client``, the one code path every client takes,
so the page gets the same snapshot, commit frames, replies and bounds as an
attached terminal.

A message past ``MAX_MESSAGE`` is refused by aiohttp itself (close code 1009,
message too big) before it is read into memory; the host is unharmed and the
other clients go on. A binary frame is ``malformed`` (the connection stays).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import WSMsgType, web

from pi_durable_tui.app._wire import MAX_MESSAGE, WireError
from pi_durable_tui.app.host import SessionHost
from pi_durable_tui.app.web._access import Access, new_token
from pi_durable_tui.app.web._address import WebAddress

STATIC = Path(__file__).parent / "static"
PAGES = {"": "index.html"}
TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
SECURITY_HEADERS = {
    # Nothing but this server's own files; no framing by other sites.
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class WebSocketTransport:
    """A web page's connection, as the host's ``Transport``."""

    def __init__(self, ws: web.WebSocketResponse, address: str) -> None:
        self._ws = ws
        self._address = address

    def describe(self) -> dict[str, Any]:
        """Where the page connects from."""
        return {"address": self._address}

    async def receive(self) -> bytes:
        """One text frame's bytes (``b""`` when the page closed)."""
        message = await self._ws.receive()
        if message.type == WSMsgType.TEXT:
            return str(message.data).encode("utf-8", "surrogatepass")
        if message.type == WSMsgType.BINARY:
            raise WireError("malformed", "Messages are text frames of JSON")
        if message.type == WSMsgType.ERROR:
            raise WireError("oversized", f"Message longer than {MAX_MESSAGE} bytes")
        return b""

    async def send(self, data: bytes) -> None:
        """One encoded message as a text frame (its line's newline dropped)."""
        if self._ws.closed:
            raise ConnectionResetError("The page closed the WebSocket")
        await self._ws.send_frame(data.rstrip(b"\n"), WSMsgType.TEXT)

    async def close(self) -> None:
        """Close the WebSocket."""
        with contextlib.suppress(Exception):
            await self._ws.close()


class WebServer:
    """Serves the page and its WebSocket for one ``SessionHost``.

    Args:
        host: The session's host.
        address: Where to listen (checked by ``parse_web_address``).
        token: The access token (a fresh one by default).
    """

    def __init__(self, host: SessionHost, address: WebAddress, token: str | None = None) -> None:
        self.host = host
        self.address = address
        self.access = Access(token or new_token(), address)
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        """The page's address with its token (what ``serve`` prints)."""
        host = f"[{self.address.host}]" if ":" in self.address.host else self.address.host
        return f"http://{host}:{self.address.port}/?token={self.access.token}"

    async def start(self) -> str:
        """Listen; returns ``url`` (with the port the system picked for 0).

        Raises:
            OSError: The address cannot be bound.
        """
        app = web.Application(middlewares=[self._guard], client_max_size=MAX_MESSAGE)
        app.router.add_get("/", self._page)
        app.router.add_get("/ws", self._websocket)
        app.router.add_get("/static/{name}", self._asset)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, self.address.host, self.address.port)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            port = int(sockets[0].getsockname()[1])
            self.address = WebAddress(self.address.host, port)
            self.access = Access(self.access.token, self.address)
        return self.url

    async def close(self) -> None:
        """Stop listening (close the host first: it says ``bye`` to the pages)."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    @web.middleware
    async def _guard(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        access = self.access
        if not access.host_ok(request.host):
            return _plain(403, "Forbidden: this page answers to its own address only")
        if not access.token_ok(request.query, request.cookies):
            return _plain(401, "Unauthorized: open the URL pidurable serve printed (with ?token=)")
        response = await handler(request)
        if not isinstance(response, web.WebSocketResponse):
            response.headers.update(SECURITY_HEADERS)
            if request.query.get("token"):
                response.set_cookie(
                    access.cookie, access.token, httponly=True, samesite="Strict", path="/"
                )
        return response

    async def _page(self, request: web.Request) -> web.StreamResponse:
        return _file("index.html")

    async def _asset(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        if name == "index.html" or name not in _assets():
            raise web.HTTPNotFound()
        return _file(name)

    async def _websocket(self, request: web.Request) -> web.StreamResponse:
        if not self.access.origin_ok(request.headers.get("Origin"), request.host):
            return _plain(403, "Forbidden: a WebSocket from another site's page")
        ws = web.WebSocketResponse(max_msg_size=MAX_MESSAGE, heartbeat=None)
        await ws.prepare(request)
        peer = request.transport.get_extra_info("peername") if request.transport else None
        where = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else "web"
        await self.host.serve_client(WebSocketTransport(ws, where))
        return ws


def _assets() -> set[str]:
    """The files of ``static/`` (only these are served: no path reaches elsewhere)."""
    return {path.name for path in STATIC.iterdir() if path.suffix in TYPES}


def _file(name: str) -> web.Response:
    path = STATIC / name
    return web.Response(body=path.read_bytes(), content_type=TYPES[path.suffix], charset="utf-8")


def _plain(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=text + "\n", headers=SECURITY_HEADERS)
