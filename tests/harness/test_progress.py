"""The progress throttle: due at once, spaced from a commit's end, one in flight (R85, R103)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_durable_tui.harness._progress import ProgressThrottle, ThrottledCommitter
from pi_durable_tui.kernel import TaskGateClosed

WINDOW = 51200
CHUNK = 256 * 1024


def test_the_first_change_after_an_idle_period_is_due_at_once_r103() -> None:
    throttle = ProgressThrottle()
    assert throttle.changed(1000.0) == 1000.0
    throttle.begin(1000.0)
    assert throttle.end(1005.0, 10) is None
    assert throttle.changed(5000.0) == 5000.0


def test_a_held_start_counts_as_a_commit_so_the_first_change_waits_an_interval_r85() -> None:
    throttle = ProgressThrottle(min_interval_ms=100)
    throttle.hold(1000.0)
    assert throttle.changed(1020.0) == 1100.0
    assert throttle.changed(1200.0) == 1200.0


def test_a_commit_delays_the_next_by_the_minimum_interval_r103() -> None:
    throttle = ProgressThrottle(min_interval_ms=100)
    throttle.begin(0.0)
    throttle.end(3.0, 10)
    assert throttle.changed(20.0) == 103.0  # counted from the commit's end
    assert throttle.changed(150.0) == 150.0


def test_a_commit_delays_the_next_by_its_written_bytes_over_the_budget_r103() -> None:
    throttle = ProgressThrottle(min_interval_ms=100, bytes_per_second=102400)
    throttle.begin(0.0)
    throttle.end(2.0, 51200)  # half a second of budget
    assert throttle.changed(10.0) == 502.0


def test_changes_during_a_commit_coalesce_and_end_says_when_the_next_is_due_r103() -> None:
    throttle = ProgressThrottle()
    throttle.changed(0.0)
    throttle.begin(0.0)
    assert not throttle.pending
    assert throttle.changed(40.0) is None
    assert throttle.changed(60.0) is None
    assert getattr(throttle, "pending")  # noqa: B009 - mypy keeps the narrowing of `not pending`
    assert throttle.end(250.0, 100) == 350.0  # one interval after the commit ended
    assert not throttle.in_flight


def test_only_one_commit_may_be_in_flight_and_end_needs_a_begin() -> None:
    throttle = ProgressThrottle()
    throttle.begin(0.0)
    assert throttle.in_flight
    with pytest.raises(RuntimeError, match="already in flight"):
        throttle.begin(1.0)
    throttle.end(2.0, 0)
    with pytest.raises(RuntimeError, match="no progress commit is in flight"):
        throttle.end(3.0, 0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_interval_ms": -1}, "min_interval_ms must be >= 0, got -1"),
        ({"bytes_per_second": 0}, "bytes_per_second must be > 0, got 0"),
    ],
)
def test_the_throttle_refuses_settings_it_cannot_honour(
    kwargs: dict[str, float], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        ProgressThrottle(**kwargs)


def _simulate(gap_ms: float, durations: list[float], retain: str) -> list[tuple[float, int]]:
    """Push 1 GiB of output in 256 KiB changes through a throttled committer.

    Returns each commit's start time and written bytes. A tail commit rewrites
    the window; a head commit appends until the window is full, then writes nothing.
    """
    throttle = ProgressThrottle()
    commits: list[tuple[float, int]] = []
    cost = itertools.cycle(durations)
    scheduled: float | None = None
    in_flight: tuple[float, int] | None = None  # end time, written bytes
    unwritten = 0
    head_written = 0

    def run_until(until: float) -> None:
        nonlocal scheduled, in_flight, unwritten, head_written
        while True:
            if in_flight is not None and in_flight[0] <= until:
                scheduled = throttle.end(in_flight[0], in_flight[1])
                in_flight = None
            elif in_flight is None and scheduled is not None and scheduled <= until:
                throttle.begin(scheduled)
                if retain == "tail":
                    written = min(unwritten, WINDOW)
                else:
                    written = min(unwritten, WINDOW - head_written)
                    head_written += written
                unwritten = 0
                commits.append((scheduled, written))
                in_flight = (scheduled + next(cost), written)
                scheduled = None
            else:
                return

    for index in range(1024 * 1024 * 1024 // CHUNK):
        now = index * gap_ms
        run_until(now)
        unwritten += CHUNK
        due = throttle.changed(now)
        if due is not None and scheduled is None:
            scheduled = due
    run_until(float("inf"))
    assert not throttle.pending  # everything was committed
    assert not throttle.in_flight
    return commits


@settings(max_examples=30, deadline=None)
@given(
    gap_ms=st.floats(0.01, 30.0),
    durations=st.lists(st.floats(0.0, 400.0), min_size=1, max_size=5),
    retain=st.sampled_from(["head", "tail"]),
)
def test_a_gibibyte_of_changes_commits_at_most_ten_times_a_second_within_100_kib_per_second_r103(
    gap_ms: float, durations: list[float], retain: str
) -> None:
    commits = _simulate(gap_ms, durations, retain)
    starts = [start for start, _ in commits]
    wall_s = (starts[-1] - starts[0]) / 1000.0
    slack = 1e-6  # float rounding of the simulated times
    assert starts[0] == 0.0  # the first change commits at once
    assert len(commits) <= wall_s * 10 + 1 + slack
    assert all(b - a >= 100.0 - slack for a, b in itertools.pairwise(starts))
    # Every commit's bytes are paid for by the wait before the next one starts.
    assert sum(written for _, written in commits[:-1]) <= 102400 * (wall_s + slack)


async def until(condition: Callable[[], bool]) -> None:
    """Let the loop run until ``condition`` holds (a bounded number of passes)."""
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never held")


async def test_changes_during_a_commit_coalesce_into_one_more_commit_of_the_newest_state() -> None:
    state = {"value": 0}
    committed: list[int] = []
    release = asyncio.Event()

    async def commit() -> int:
        committed.append(state["value"])
        if len(committed) == 1:
            await release.wait()
        return 0

    committer = ThrottledCommitter(commit, ProgressThrottle(min_interval_ms=0))
    committer.changed()
    await until(lambda: bool(committed))
    for value in (1, 2, 3):
        state["value"] = value
        committer.changed()
    release.set()
    await until(lambda: len(committed) == 2)
    await committer.stop()

    assert committed == [0, 3]


async def test_stop_lets_a_commit_in_flight_land_and_nothing_commits_after_it() -> None:
    committed: list[str] = []
    entered = asyncio.Event()
    release = asyncio.Event()

    async def commit() -> int:
        entered.set()
        await release.wait()
        committed.append("landed")
        return 0

    committer = ThrottledCommitter(commit, ProgressThrottle(min_interval_ms=0))
    committer.changed()
    await entered.wait()
    committer.changed()  # would be a second commit, but stop() comes first
    stopping = asyncio.ensure_future(committer.stop())
    await asyncio.sleep(0)
    assert not stopping.done()
    release.set()
    await stopping
    committer.changed()  # ignored once stopped

    assert committed == ["landed"]
    assert committer.stopped


async def test_a_closed_task_gate_ends_the_committer_quietly() -> None:
    calls = 0

    async def commit() -> int:
        nonlocal calls
        calls += 1
        raise TaskGateClosed("closing")

    committer = ThrottledCommitter(commit, ProgressThrottle(min_interval_ms=0))
    committer.changed()
    await until(lambda: calls == 1)
    committer.changed()
    await committer.stop()

    assert calls == 1
