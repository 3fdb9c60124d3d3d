"""One attached client, as its host sees it: a bounded outbox and one writer (issue 15; R124).

Commits never wait for a client (R124: commits never wait for listeners). The
host's commit listener only puts an already-encoded frame into each
follower's outbox and wakes its writer; the writer sends at the pace the
client reads. A client that falls more than ``MAX_PENDING`` frames behind
loses its undelivered frames and is marked ``stale``: frames are dropped until
its writer has put one fresh snapshot (read on the line) in the outbox, after
which frames follow normally. So a stuck client costs the host a bounded
outbox, never a stalled session, and catches up with the current state, not
with a backlog.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from pi_durable_tui.app._wire import MAX_PENDING, encode
from pi_durable_tui.app.host._transport import Transport


class Connection:
    """One client: who it is, what it follows, and its outbox.

    Args:
        client_id: Unique in this host.
        name: What the client calls itself (``terminal``, ``web``, ``acp``).
        transport: The connection to it (a Unix socket, a WebSocket).
        resnapshot: Puts a fresh snapshot in the outbox, on the line.
    """

    def __init__(
        self,
        client_id: int,
        name: str,
        transport: Transport,
        resnapshot: Callable[[Connection], Awaitable[None]],
    ) -> None:
        self.client_id = client_id
        self.name = name
        self.conversation: int | None = None
        """The followed conversation; set on the line with the snapshot that starts it."""
        self.window = 0
        self.stale = False
        self.collapsed = 0
        """How many times a backlog became a snapshot (for tests and ``/clients``)."""
        self._transport = transport
        self._pending: deque[tuple[bool, bytes]] = deque()  # (is a frame, encoded)
        self._frames = 0
        self._wake = asyncio.Event()
        self._resnapshot = resnapshot
        self._closed = False
        self._task = asyncio.ensure_future(self._write_loop())

    def describe(self) -> dict[str, Any]:
        """The client as ``clients`` messages list it."""
        return {"id": self.client_id, "name": self.name, **self._transport.describe()}

    def deliver(self, data: bytes) -> None:
        """Queue an encoded frame (from the commit listener: never blocks, never raises)."""
        if self.stale or self._closed:
            return
        if self._frames >= MAX_PENDING:
            self._drop_frames()
            self.stale = True
            self.collapsed += 1
        else:
            self._pending.append((True, data))
            self._frames += 1
        self._wake.set()

    def _drop_frames(self) -> None:
        """Forget undelivered frames; replies and presence stay (they are never stale)."""
        self._pending = deque(item for item in self._pending if not item[0])
        self._frames = 0

    def restart(self, messages: list[bytes]) -> None:
        """Put ``messages`` (a snapshot, or replayed frames) in place of the queued frames."""
        self._drop_frames()
        self._pending.extend((True, data) for data in messages)
        self._frames = len(messages)
        self.stale = False
        self._wake.set()

    def send(self, message: dict[str, Any]) -> None:
        """Queue a control message (a reply, ``clients``); it is never dropped for lag."""
        if not self._closed:
            self._pending.append((False, encode(message)))
            self._wake.set()

    async def _write_loop(self) -> None:
        transport = self._transport
        with contextlib.suppress(ConnectionError, OSError, asyncio.CancelledError):
            while True:
                await self._wake.wait()
                self._wake.clear()
                if self.stale:
                    await self._resnapshot(self)
                while self._pending and not self.stale:
                    frame, data = self._pending.popleft()
                    self._frames -= frame
                    await transport.send(data)
                if self._closed and not self._pending:
                    return

    async def close(self, last: dict[str, Any] | None = None) -> None:
        """Send ``last`` after what is queued (bounded by a second), then close the stream."""
        if self._closed:
            return
        if last is not None:
            self._pending.append((False, encode(last)))
        self._closed = True
        self._wake.set()
        with contextlib.suppress(asyncio.TimeoutError, Exception):
            await asyncio.wait_for(asyncio.shield(self._task), 1.0)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
        with contextlib.suppress(Exception):
            await self._transport.close()
