"""The adaptive throttle of a running tool's progress commits (R103).

``ProgressThrottle`` decides when the next progress commit may start; it does
no I/O and reads no clock: every call takes the current time in milliseconds
(the kernel ``Clock``'s unit), so it is tested without waiting. The rule:

- the first change after an idle period is due at once;
- a commit that started at ``t`` and wrote ``w`` bytes delays the next one
  until ``t + max(min_interval_ms, w / bytes_per_second)``: commits start at
  least ``min_interval_ms`` apart, and every commit's bytes are paid for by the
  wait after it, so the bytes of all commits but the last never exceed
  ``bytes_per_second`` times the time between the first and last start;
- at most one commit is in flight (``begin`` .. ``end``); changes made
  meanwhile coalesce into the next commit, which ``end`` schedules.

The committer's loop: ``due = changed(now)`` after every change; when ``due``
is not ``None`` and no commit is scheduled, schedule one at ``due``; run it
between ``begin(now)`` and ``end(now, written_bytes)``, and schedule again at
the time ``end`` returns, if any.
"""

from __future__ import annotations

DEFAULT_MIN_INTERVAL_MS = 100.0
"""R103's ``progress.outputIntervalMs`` default."""
DEFAULT_BYTES_PER_SECOND = 102400
"""R103's write budget: 100 KiB of committed bytes per second."""


class ProgressThrottle:
    """When progress commits may start (R103); times are milliseconds.

    Args:
        min_interval_ms: The least time between the starts of two commits.
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
        started = self._started_at
        if started is None:
            raise RuntimeError("no progress commit is in flight; begin one first")
        self._started_at = None
        delay = max(self.min_interval_ms, written_bytes * 1000.0 / self.bytes_per_second)
        self._next_at = started + delay
        return max(now, self._next_at) if self._pending else None
