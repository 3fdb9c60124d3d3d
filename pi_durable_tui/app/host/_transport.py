"""How the host reaches one client: a ``Transport``, one per connection (issue 15).

The host speaks one message family (``app._wire``) over every transport; only
framing and who the peer is differ, so ``SessionHost.serve_client`` is the one
code path for all of them:

- ``StreamTransport``: the Unix socket beside the store, one message per line;
  the peer is who the kernel says (``SO_PEERCRED``);
- the web page's WebSocket (``app.web``): one message per text frame; the peer
  is an address, and the access token checked before the upgrade is what
  admitted it.

``receive`` returns one message's bytes (``b""`` at the end of the stream) and
raises ``WireError("oversized")`` for a message past ``MAX_MESSAGE``, after
which the transport cannot frame what follows and the host closes it.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Protocol

from pi_durable_tui.app._socket import Peer
from pi_durable_tui.app._wire import MAX_MESSAGE, WireError


class Transport(Protocol):
    """One client's connection, as the host uses it."""

    def describe(self) -> dict[str, Any]:
        """Who the peer is, for ``clients`` (``pid`` or ``address``)."""
        ...

    async def receive(self) -> bytes:
        """The next message's bytes, ``b""`` at the end.

        Raises:
            WireError: ``oversized``: a message past ``MAX_MESSAGE``.
        """
        ...

    async def send(self, data: bytes) -> None:
        """Send one encoded message (a line of ``_wire.encode``)."""
        ...

    async def close(self) -> None:
        """Close the connection; safe to call twice."""
        ...


class StreamTransport:
    """A Unix socket client: newline-delimited JSON.

    Args:
        reader: Its stream, with a limit of ``MAX_MESSAGE`` plus the newline.
        writer: Its stream.
        peer: Its kernel-given credentials.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Peer):
        self.peer = peer
        self._reader = reader
        self._writer = writer

    def describe(self) -> dict[str, Any]:
        """The peer's process ID."""
        return {"pid": self.peer.pid}

    async def receive(self) -> bytes:
        """One line (``b""`` at the end)."""
        try:
            return await self._reader.readline()
        except ValueError:  # asyncio's LimitOverrunError, re-raised by readline
            raise WireError("oversized", f"Message longer than {MAX_MESSAGE} bytes") from None

    async def send(self, data: bytes) -> None:
        """Write a line and wait for the socket to take it."""
        self._writer.write(data)
        await self._writer.drain()

    async def close(self) -> None:
        """Close the stream."""
        self._writer.close()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()
