"""Backing off from scheduler writes that keep failing (R45).

A scheduler-written outcome (``faulted``, ``orphaned``) runs the harness's
cleanup hook in the commit that makes it final. A hook that raises makes that
commit land nothing: the task stays as it was and the scheduler tries again
later (R45: a step whose fault write is rejected ends the invocation, and the task
runs again at the next reservation). A hook that *always* raises must not turn
that into a tight loop, so every failed scheduler write about a task puts the
task in backoff:

- it is not tried again before ``retry_at``, which moves away exponentially
  (``BASE_DELAY_MS`` doubling per failure, at most ``MAX_DELAY_MS``), measured
  on the Session's clock, so a ``ManualClock`` drives it in tests;
- the first failure of a task is reported once (later ones are not, until the
  task ends);
- everything else keeps running: other tasks, commits, the scheduler loop.

The scheduler wakes itself at the earliest ``retry_at`` (``next_retry``), and
forgets a task once it ends.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from pi_durable_tui.kernel._clock import Clock
from pi_durable_tui.kernel._errors import SessionClosed, SessionFailed
from pi_durable_tui.kernel._hooks import Report

T = TypeVar("T")

BASE_DELAY_MS = 1000.0
"""The wait after a task's first failed scheduler write."""

MAX_DELAY_MS = 60_000.0
"""The longest wait between two attempts, however many failed."""


@dataclass(slots=True)
class _Attempts:
    failures: int
    retry_at: float


class WriteBackoff:
    """Tasks whose scheduler writes failed, and when each may be tried again.

    Args:
        clock: The Session's clock.
        report: Receives the first failure of each task.
    """

    def __init__(self, clock: Clock, report: Callable[[Report], None]) -> None:
        self._clock = clock
        self._report = report
        self._tasks: dict[int, _Attempts] = {}

    def failed(self, task_id: int, error: BaseException, code: str) -> None:
        """Note a failed scheduler write about a task; report it if it is the first."""
        attempts = self._tasks.get(task_id)
        failures = 1 if attempts is None else attempts.failures + 1
        delay = min(BASE_DELAY_MS * 2 ** (failures - 1), MAX_DELAY_MS)
        self._tasks[task_id] = _Attempts(failures, self._clock.now() + delay)
        if attempts is None:
            self._report(Report(code, str(error) or type(error).__name__, error, task_id))

    async def guard(
        self, task_id: int, write: Awaitable[T], code: str = "scheduler_error"
    ) -> T | None:
        """Await a scheduler write about a task; ``None`` when it failed.

        A failure (the cleanup hook raised, or storage refused the batch) puts the
        task in backoff and is reported under ``code`` the first time; it does not
        reach the caller. A closing or failed Session still raises.
        """
        try:
            return await write
        except (SessionClosed, SessionFailed):
            raise
        except Exception as error:
            self.failed(task_id, error, code)
            return None

    def due(self, task_id: int) -> bool:
        """Whether a task may be tried now (it is not in backoff, or its wait is over)."""
        attempts = self._tasks.get(task_id)
        return attempts is None or self._clock.now() >= attempts.retry_at

    def next_retry(self) -> float | None:
        """Return the earliest time a task in backoff may be tried again, or ``None``."""
        now = self._clock.now()
        waiting = [a.retry_at for a in self._tasks.values() if a.retry_at > now]
        return min(waiting) if waiting else None

    def forget(self, task_id: int) -> None:
        """Drop a task that ended."""
        self._tasks.pop(task_id, None)
