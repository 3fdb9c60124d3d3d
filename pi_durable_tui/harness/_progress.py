"""Throttled progress commits: one mechanism for streamed partials and tool output (R85, R103).

Two things grow while a task runs and are shown through commits: a model's
streamed partial (``pi.live.generation.message``, R85) and a running tool's
output slot (R103). Both are committed by a ``ThrottledCommitter``: the caller
says ``changed()`` after each change, and the committer runs the caller's
commit, which reads the newest state when it runs (so changes made meanwhile
coalesce), with at most one commit in flight; ``stop()`` ends it and awaits a
commit in flight, so no stale progress lands after the task's terminal commit.

``ProgressThrottle`` decides when the next commit may start; it does no I/O and
reads no clock: every call takes the current time in milliseconds, so it is
tested without waiting. The rule:

- the first change after an idle period is due at once (``hold`` makes a start
  count as a commit instead: a response that completes within one interval
  commits no partial, R85);
- a commit that ended at ``t`` and wrote ``w`` bytes delays the next one until
  ``t + max(min_interval_ms, w / bytes_per_second)``: commits are at least
  ``min_interval_ms`` apart, and every commit's bytes are paid for by the wait
  after it, so the bytes of all commits but the last never exceed
  ``bytes_per_second`` times the time between the first and last start;
- changes made during a commit coalesce into the next one, which ``end``
  schedules.

Counting from a commit's end, not its start, satisfies both rules at once: R85
asks for partials "at most every" interval, R103 for each commit to delay the
next "by at least" the interval and its bytes' share of the budget. Partials
have no byte budget (their commit reports 0 bytes).

The committer's time is real (``time.monotonic``), not the harness clock: it
bounds the commit rate of a real process (a test's manual clock never moves by
itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

from pi_durable_tui.kernel import TaskGateClosed

DEFAULT_MIN_INTERVAL_MS = 100.0
"""R103's ``progress.outputIntervalMs`` default."""
DEFAULT_BYTES_PER_SECOND = 102400
"""R103's write budget: 100 KiB of committed bytes per second."""


class ProgressThrottle:
    """When progress commits may start (R85, R103); times are milliseconds.

    Args:
        min_interval_ms: The least time from a commit's end to the next's start.
        bytes_per_second: The write budget each commit's bytes are paid from.

    Raises:
        ValueError: ``min_interval_ms`` is negative or ``bytes_per_second`` is
            not positive.
    """

    def __init__(
        self,
        min_interval_ms: float = DEFAULT_MIN_INTERVAL_MS,
        bytes_per_second: float = DEFAULT_BYTES_PER_SECOND,
    ) -> None:
        if not min_interval_ms >= 0:
            raise ValueError(f"min_interval_ms must be >= 0, got {min_interval_ms!r}")
        if not bytes_per_second > 0:
            raise ValueError(f"bytes_per_second must be > 0, got {bytes_per_second!r}")
        self.min_interval_ms = float(min_interval_ms)
        self.bytes_per_second = float(bytes_per_second)
        self._next_at = float("-inf")
        self._started_at: float | None = None
        self._pending = False

    @property
    def in_flight(self) -> bool:
        """Whether a commit has begun and not ended."""
        return self._started_at is not None

    @property
    def pending(self) -> bool:
        """Whether changes were made since the latest commit began."""
        return self._pending

    def hold(self, now: float) -> None:
        """Count ``now`` as the end of a commit: the next is due an interval later.

        Args:
            now: The current time (ms).
        """
        self._next_at = max(self._next_at, now + self.min_interval_ms)

    def changed(self, now: float) -> float | None:
        """Record a change to the progress.

        Args:
            now: The current time (ms).

        Returns:
            When the next commit is due (``now`` after an idle period), or
            ``None`` while a commit is in flight: ``end`` will say.
        """
        self._pending = True
        if self._started_at is not None:
            return None
        return max(now, self._next_at)

    def begin(self, now: float) -> None:
        """Start a commit; it carries every change made so far.

        Args:
            now: The current time (ms).

        Raises:
            RuntimeError: A commit is already in flight.
        """
        if self._started_at is not None:
            raise RuntimeError("a progress commit is already in flight; end it first")
        self._started_at = now
        self._pending = False

    def end(self, now: float, written_bytes: int) -> float | None:
        """Finish the commit in flight.

        Args:
            now: The current time (ms).
            written_bytes: How many bytes the commit wrote.

        Returns:
            When the next commit is due if changes were made meanwhile, else ``None``.

        Raises:
            RuntimeError: No commit is in flight.
        """
        if self._started_at is None:
            raise RuntimeError("no progress commit is in flight; begin one first")
        self._started_at = None
        delay = max(self.min_interval_ms, written_bytes * 1000.0 / self.bytes_per_second)
        self._next_at = now + delay
        return self._next_at if self._pending else None


def now_ms() -> float:
    """The committers' clock: real monotonic time in milliseconds."""
    return time.monotonic() * 1000


class ThrottledCommitter:
    """Runs ``commit`` after changes, as ``throttle`` allows, one at a time (R85, R103).

    Args:
        commit: Commits the newest state; returns the bytes it wrote (for the
            budget). It runs in a task of its own; ``TaskGateClosed`` (the task
            is being aborted, the harness closes) ends the committer quietly.
        throttle: When commits may start.
    """

    def __init__(self, commit: Callable[[], Awaitable[int]], throttle: ProgressThrottle) -> None:
        self._commit = commit
        self._throttle = throttle
        self._dirty = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None
        self._in_commit = False
        self._stopped = False

    @property
    def stopped(self) -> bool:
        """Whether ``stop()`` was called."""
        return self._stopped

    def changed(self) -> None:
        """Say the state changed: a commit follows when the throttle allows."""
        if self._stopped:
            return
        self._dirty.set()
        if self._loop is None:
            self._loop = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        throttle = self._throttle
        try:
            while not self._stopped:
                await self._dirty.wait()
                due = throttle.changed(now_ms())
                if due is not None and due > now_ms():
                    await asyncio.sleep((due - now_ms()) / 1000)
                if self.stopped:  # stop() may have run during the sleep
                    return
                self._dirty.clear()
                throttle.begin(now_ms())
                written = 0
                self._in_commit = True
                try:
                    written = await self._commit()
                finally:
                    self._in_commit = False
                    throttle.end(now_ms(), written)
        except TaskGateClosed:
            return  # nothing more to show

    async def stop(self) -> None:
        """Stop committing; a commit in flight lands first, a waiting loop is cancelled."""
        self._stopped = True
        loop, self._loop = self._loop, None
        if loop is None:
            return
        if self._in_commit:
            self._dirty.set()
        else:
            loop.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await loop
