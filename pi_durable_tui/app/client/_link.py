"""``HostLink``: one client's connection to a session's host (issue 15).

It says ``hello``, then reads the host's messages in one task: each ``reply``
resolves the ``call`` that asked for it; everything else (``welcome``,
``snapshot``, ``commit``, ``tasks``, ``clients``, ``error``, ``bye``) waits in
order for ``receive()``. The end of the stream without a ``bye`` means the host
died (``kill -9``): ``receive()`` then raises ``HostGone``, and so does every
call still waiting, so a client can say so and offer to take over (open the
store, which is what ``--continue`` does).
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from pi_durable_tui.app._socket import connect_socket
from pi_durable_tui.app._wire import MAX_HOST_MESSAGE, PROTOCOL, decode, encode


class HostGone(ConnectionError):
    """The host ended the connection: ``reason`` says how (``host closing``, ``gone``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"The session's host is gone ({reason})")
        self.reason = reason


class HostRefused(Exception):
    """The host refused a call; the message is the host's words."""


class HostLink:
    """A connection to a host (use ``connect``)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._inbox: asyncio.Queue[dict[str, Any] | HostGone] = asyncio.Queue()
        self._replies: dict[int, asyncio.Future[Any]] = {}
        self._next = 1
        self._gone: HostGone | None = None
        self._task = asyncio.ensure_future(self._read())

    @classmethod
    async def connect(
        cls,
        path: Path,
        *,
        name: str = "terminal",
        conversation: int | None = None,
        since: int | None = None,
        window: int | None = None,
    ) -> HostLink:
        """Connect to the host at ``path`` and say ``hello``.

        Raises:
            OSError: Nobody serves there (a dead host's socket refuses).
        """
        sock = connect_socket(path)
        reader, writer = await asyncio.open_unix_connection(sock=sock, limit=MAX_HOST_MESSAGE + 2)
        link = cls(reader, writer)
        hello: dict[str, Any] = {"t": "hello", "v": PROTOCOL, "name": name}
        for key, value in (("conversation", conversation), ("since", since), ("window", window)):
            if value is not None:
                hello[key] = value
        link.send(hello)
        return link

    def send(self, message: dict[str, Any]) -> None:
        """Send one message as it is (``call`` is the usual way)."""
        self._writer.write(encode(message))

    def send_raw(self, data: bytes) -> None:
        """Send bytes as they are (protocol tests send what no client should)."""
        self._writer.write(data)

    async def receive(self) -> dict[str, Any]:
        """The next message that is not a reply.

        Raises:
            HostGone: The connection ended.
        """
        item = await self._inbox.get()
        if isinstance(item, HostGone):
            self._inbox.put_nowait(item)  # every later receive says the same
            raise item
        return item

    async def call(self, method: str, **args: Any) -> Any:
        """Run an intent on the host; returns its value.

        Raises:
            HostRefused: The host refused it.
            HostGone: The connection ended first.
        """
        if self._gone is not None:
            raise self._gone
        call_id, self._next = self._next, self._next + 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._replies[call_id] = future
        self.send({"t": "call", "id": call_id, "method": method, "args": args})
        await self._writer.drain()
        return await future

    async def _read(self) -> None:
        reason = "gone"
        try:
            while True:
                line = await self._reader.readline()
                if not line:
                    break
                message = decode(line, MAX_HOST_MESSAGE)  # a broken host ends the link
                if message["t"] == "reply":
                    future = self._replies.pop(int(message.get("id", 0)), None)
                    if future is not None and not future.done():
                        if message.get("ok"):
                            future.set_result(message.get("value"))
                        else:
                            future.set_exception(HostRefused(str(message.get("error"))))
                    continue
                if message["t"] == "bye":
                    reason = str(message.get("reason") or "bye")
                self._inbox.put_nowait(message)
        except (ConnectionError, OSError, ValueError):  # WireError is a ValueError
            pass
        finally:
            self._gone = HostGone(reason)
            for future in self._replies.values():
                if not future.done():
                    future.set_exception(self._gone)
            self._replies.clear()
            self._inbox.put_nowait(self._gone)

    async def close(self) -> None:
        """Say ``bye`` and close; safe to call twice."""
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            if not self._writer.is_closing():
                self.send({"t": "bye"})
                await self._writer.drain()
        self._writer.close()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
