"""Time for the kernel: an injectable clock, so tests never sleep for real.

Times are milliseconds since the epoch, as floats. ``SystemClock`` reads the wall
clock and sleeps with asyncio; ``ManualClock`` only moves when a test calls
``advance``, waking every sleeper whose deadline passed (R41 rechecks the clock
after each timer, which ``ManualClock`` honours too).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from typing import Protocol


class Clock(Protocol):
    """The source of time for sessions, retries, deadlines and throttles."""

    def now(self) -> float:
        """Return the current time in milliseconds since the epoch."""
        ...

    async def sleep_until(self, deadline: float) -> None:
        """Return once ``now() >= deadline``; cancellable."""
        ...


# asyncio's timers overflow near 2**31 seconds on some platforms; chunk long sleeps (R41).
_MAX_TIMER_S = 24 * 3600.0


class SystemClock:
    """The wall clock, with asyncio sleeps."""

    def now(self) -> float:
        """Return the wall-clock time in milliseconds."""
        return time.time() * 1000.0

    async def sleep_until(self, deadline: float) -> None:
        """Sleep until the wall clock reaches ``deadline`` (ms)."""
        while (remaining := deadline - self.now()) > 0:
            await asyncio.sleep(min(remaining / 1000.0, _MAX_TIMER_S))


class ManualClock:
    """A clock that moves only when told to; for tests.

    Args:
        start: The initial time in milliseconds.
    """

    def __init__(self, start: float = 1_700_000_000_000.0) -> None:
        self._now = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def now(self) -> float:
        """Return the current manual time in milliseconds."""
        return self._now

    async def sleep_until(self, deadline: float) -> None:
        """Wait until ``advance`` moves the clock to ``deadline`` or past it."""
        while self._now < deadline:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            heapq.heappush(self._sleepers, (deadline, next(self._order), future))
            await future

    @property
    def sleepers(self) -> int:
        """How many sleeps are waiting for the clock to move."""
        return sum(1 for _, _, future in self._sleepers if not future.done())

    def next_deadline(self) -> float | None:
        """Return the earliest deadline a sleeper waits for, or ``None``."""
        for deadline, _, future in sorted(self._sleepers):
            if not future.done():
                return deadline
        return None

    def advance(self, milliseconds: float) -> None:
        """Move the clock forward and wake every sleeper whose deadline passed."""
        self.set(self._now + milliseconds)

    def set(self, now: float) -> None:
        """Move the clock to ``now`` (never backwards) and wake due sleepers."""
        self._now = max(self._now, now)
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)
