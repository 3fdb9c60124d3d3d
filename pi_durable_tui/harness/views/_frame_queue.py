"""The bounded delivery queue of one watch consumer, and the watch built on it (R124, R125).

Commits never wait for a consumer: a publication pushes a frame and returns. At
most ``MAX_PENDING_FRAMES`` (100) undelivered frames are kept, not counting the
one being delivered; pushing one more replaces the whole undelivered backlog
with a single frame built by ``collapse(newest)`` (a root replacement for a view
watch, a fresh ``snapshot`` for an event stream). Later frames follow normally.

A queue ends once, with the first reason given:

- ``stopped``: the consumer called ``stop()``; pending frames are discarded,
  unless it asked to drain them (a JSON printer finishing a run).
- ``session_closed``: the harness closed or failed. Frames queued before the
  seal are still delivered, then iteration ends: they were committed before
  ``close()`` began, and a JSON-mode printer must not lose the last events of a
  run because the process closed the harness right after it (R27 only forbids
  frames of commits that settle during close, which are never pushed).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Generic, Literal, TypeVar

if TYPE_CHECKING:
    from pi_durable_tui.harness.views._view_mount import ViewMount

MAX_PENDING_FRAMES = 100
"""Undelivered frames a consumer may fall behind by before its backlog collapses (R124)."""

EndReason = Literal["stopped", "session_closed"]
T = TypeVar("T")


class FrameQueue(Generic[T]):
    """Frames for one consumer, in commit order, bounded by collapsing the backlog.

    Args:
        collapse: Builds the one frame that replaces an overflowing backlog from
            the newest frame pushed.
    """

    def __init__(self, collapse: Callable[[T], T]) -> None:
        self._collapse = collapse
        self._pending: deque[T] = deque()
        self._wake = asyncio.Event()
        self._reason: EndReason | None = None

    @property
    def pending(self) -> int:
        """Frames waiting to be delivered."""
        return len(self._pending)

    @property
    def reason(self) -> EndReason | None:
        """Why the queue ended, or ``None`` while it runs."""
        return self._reason

    def push(self, frame: T) -> None:
        """Queue a frame; past the bound, collapse the backlog into one frame (R124)."""
        if self._reason is not None:
            return
        if len(self._pending) >= MAX_PENDING_FRAMES:
            self._pending.clear()
            frame = self._collapse(frame)
        self._pending.append(frame)
        self._wake.set()

    def end(self, reason: EndReason, *, discard: bool) -> None:
        """End the queue (the first reason wins), discarding pending frames or not."""
        if self._reason is None:
            self._reason = reason
        if discard:
            self._pending.clear()
        self._wake.set()

    def __aiter__(self) -> AsyncIterator[T]:
        # REMINDER: one consumer: two iterating at once would each get some frames.
        return self._frames()

    async def _frames(self) -> AsyncIterator[T]:
        while True:
            if self._pending:
                yield self._pending.popleft()
                continue
            if self._reason is not None:
                return
            self._wake.clear()
            await self._wake.wait()


class QueuedWatch(Generic[T]):
    """Frames of a mounted view waiting for one async iterator; the base of watches.

    Args:
        mount: The mount the frames come from (``stop()`` detaches it).
        collapse: Builds the frame that replaces an overflowing backlog.
    """

    def __init__(self, mount: ViewMount, collapse: Callable[[T], T]) -> None:
        self._mount = mount
        self._queue: FrameQueue[T] = FrameQueue(collapse)

    @property
    def pending(self) -> int:
        """Frames not yet handed out."""
        return self._queue.pending

    @property
    def reason(self) -> EndReason | None:
        """Why the watch ended, or ``None`` while it runs."""
        return self._queue.reason

    async def stop(self, *, drain: bool = False) -> EndReason:
        """Stop following commits (idempotent) and return the end reason.

        Args:
            drain: Keep the frames already queued for the iterator instead of
                discarding them (iteration ends after them), so a printer can
                finish what a run committed.
        """
        self._mount.detach()
        self._queue.end("stopped", discard=not drain)
        reason = self._queue.reason
        assert reason is not None
        return reason

    def ended(self) -> None:
        """The harness closed: deliver what is queued, then end (``MountObserver``)."""
        self._queue.end("session_closed", discard=False)
