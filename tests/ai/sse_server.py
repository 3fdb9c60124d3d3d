"""A minimal HTTP/1.1 server on 127.0.0.1 that serves recorded SSE transcripts.

Each request is recorded (method, path, headers, body) and answered with the
next queued ``Reply``: a status, headers and a body sent as chunked transfer
encoding, optionally dribbled in odd chunk sizes, cut off abruptly
(``drop_after``: the client sees an incomplete chunked body) or stalled
(``stall_after``: the server holds the connection and waits for the client to
go away, which sets ``disconnected``). ``recording`` reads the recorded
transcripts of ``recordings/<api>/<name>.sse``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RECORDINGS = Path(__file__).parent / "recordings"
ODD_CHUNKS = (1, 7, 3, 64, 2, 13, 5, 31)
"""Chunk sizes that split lines, UTF-8 sequences and CRLF pairs."""


def recording(api: str, name: str) -> bytes:
    """Return the bytes of ``recordings/<api>/<name>.sse``."""
    return (RECORDINGS / api / f"{name}.sse").read_bytes()


@dataclass
class Reply:
    """What the server answers to one request."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "text/event-stream"})
    chunks: Sequence[int] = ()
    """Body piece sizes, cycled; empty sends the body in one piece."""
    drop_after: int | None = None
    """Close the socket abruptly after this many body bytes."""
    stall_after: int | None = None
    """Send nothing after this many body bytes and hold the connection open."""


@dataclass
class Received:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class SseServer:
    """Serves queued replies on an ephemeral 127.0.0.1 port."""

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self.disconnected = asyncio.Event()
        self._replies: deque[Reply] = deque()
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def reply(self, reply: Reply) -> None:
        self._replies.append(reply)

    def sse(self, api: str, name: str, **options: Any) -> bytes:
        """Queue a recording as a 200 event stream and return its bytes."""
        body = recording(api, name)
        self.reply(Reply(body=body, **options))
        return body

    def error(self, status: int, body: bytes | str, **headers: str) -> None:
        """Queue an error reply (JSON unless a content-type header is given)."""
        raw = body.encode() if isinstance(body, str) else body
        all_headers = {"content-type": "application/json", **headers}
        self.reply(Reply(status=status, body=raw, headers=all_headers))

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._handlers):
            task.cancel()
        for task in list(self._handlers):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._server is not None:
            await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            await self._serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            self.disconnected.set()
        finally:
            self._handlers.discard(task)
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request_line = (await reader.readline()).decode("latin-1").strip()
        if not request_line:
            return
        method, path, _ = request_line.split(" ", 2)
        headers: dict[str, str] = {}
        while True:
            line = (await reader.readline()).decode("latin-1")
            if line in ("\r\n", "\n", ""):
                break
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        self.requests.append(Received(method, path, headers, body))
        reply = self._replies.popleft() if self._replies else Reply(500, b"no reply queued", {})
        head = [f"HTTP/1.1 {reply.status} X"]
        head += [f"{name}: {value}" for name, value in reply.headers.items()]
        head += ["transfer-encoding: chunked", "connection: close", "", ""]
        writer.write("\r\n".join(head).encode("latin-1"))
        limit = len(reply.body)
        for cut in (reply.drop_after, reply.stall_after):
            if cut is not None:
                limit = min(limit, cut)
        sizes = itertools.cycle(reply.chunks or (max(limit, 1),))
        sent = 0
        while sent < limit:
            piece = reply.body[sent : min(limit, sent + next(sizes))]
            writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            await writer.drain()
            await asyncio.sleep(0)  # let the client read this piece on its own
            sent += len(piece)
        if reply.drop_after is not None:
            writer.transport.abort()
            return
        if reply.stall_after is not None:
            while await reader.read(1024):
                pass
            self.disconnected.set()
            return
        writer.write(b"0\r\n\r\n")
        await writer.drain()
