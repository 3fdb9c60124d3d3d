"""Timing primitives of the storage benchmark: interleaved rounds and percentiles.

A *group* is a set of candidates measured together so their ratios are fair:
each candidate first runs its warm-up calls, then the group runs ``rounds``
rounds; in each round every candidate runs a block of ``block`` timed calls,
and the order of the candidates rotates from round to round. So a slow minute
of the machine (another process, a WAL checkpoint, a disk flush) falls on all
candidates alike instead of on whichever ran at that time.

Each call is timed alone with ``time.perf_counter_ns``; a synchronous candidate
is timed without any coroutine around it. A candidate's ``check`` (if any) runs
after the clock stops, on every result, and the first failure is kept.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

Check = Callable[[int, Any], str | None]


@dataclass(slots=True)
class Candidate:
    """One thing to time: an async or a sync call.

    Exactly one of ``run`` and ``run_sync`` is set. Each call gets a counter that
    starts at 0 and rises by one per call, warm-up included (so calls can make
    unique IDs), or, when ``prepare`` is set, what ``prepare(counter)`` returned:
    preparing (building a batch, minting its IDs) is not timed.
    """

    name: str
    run: Callable[[Any], Awaitable[Any]] | None = None
    run_sync: Callable[[Any], Any] | None = None
    prepare: Callable[[int], Any] | None = None
    check: Check | None = None


@dataclass(slots=True)
class Samples:
    """The durations of one candidate's timed calls, and the first wrong answer."""

    ns: list[int] = field(default_factory=list)
    wrong: str | None = None


@dataclass(frozen=True, slots=True)
class Rounds:
    """How much a group runs: warm-up calls, then rounds of blocks of calls.

    With a ``budget_s``, the warm-up calls estimate what a round costs and the
    group runs fewer rounds (never fewer than ``MIN_ROUNDS``) when all of them
    would take longer than the budget: slow reads get fewer samples rather than
    minutes of run time.
    """

    warmup: int
    rounds: int
    block: int
    budget_s: float = 0.0

    def scaled(self, factor: float) -> Rounds:
        """Return the same plan with ``factor`` times the rounds (at least one)."""
        return Rounds(self.warmup, max(1, round(self.rounds * factor)), self.block, self.budget_s)


MIN_ROUNDS = 2


async def _call(candidate: Candidate, counter: int) -> tuple[int, Any]:
    argument = counter if candidate.prepare is None else candidate.prepare(counter)
    if candidate.run_sync is not None:
        began = time.perf_counter_ns()
        result = candidate.run_sync(argument)
        return time.perf_counter_ns() - began, result
    assert candidate.run is not None
    began = time.perf_counter_ns()
    result = await candidate.run(argument)
    return time.perf_counter_ns() - began, result


async def interleave(candidates: list[Candidate], plan: Rounds) -> dict[str, Samples]:
    """Time candidates in rotating rounds (see the module docstring).

    Args:
        candidates: What to time; names must be unique.
        plan: Warm-up calls, rounds and calls per block.

    Returns:
        The samples of each candidate, by name.
    """
    samples = {candidate.name: Samples() for candidate in candidates}
    counters = dict.fromkeys(samples, 0)
    warm_ns = 0

    async def one(candidate: Candidate, keep: bool) -> None:
        nonlocal warm_ns
        counter = counters[candidate.name]
        counters[candidate.name] = counter + 1
        elapsed, result = await _call(candidate, counter)
        taken = samples[candidate.name]
        if keep:
            taken.ns.append(elapsed)
        else:
            warm_ns += elapsed
        if candidate.check is not None and taken.wrong is None:
            taken.wrong = candidate.check(counter, result)

    for candidate in candidates:
        for _ in range(plan.warmup):
            await one(candidate, keep=False)
    rounds = plan.rounds
    if plan.budget_s > 0 and plan.warmup > 0:
        round_ns = warm_ns / plan.warmup * plan.block
        rounds = max(MIN_ROUNDS, min(rounds, int(plan.budget_s * 1e9 / max(round_ns, 1.0))))
    gc.collect()
    for number in range(rounds):
        shift = number % len(candidates)
        for candidate in candidates[shift:] + candidates[:shift]:
            for _ in range(plan.block):
                await one(candidate, keep=True)
    return samples


def percentile(values: list[int], fraction: float) -> float:
    """Return the nearest-rank percentile of ``values`` (``fraction`` in 0..1)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return float(ordered[rank - 1])


def summary(samples: Samples) -> dict[str, Any]:
    """Return ``p50_ms``, ``p99_ms`` and ``n`` of a candidate, and ``wrong`` if it erred."""
    result: dict[str, Any] = {
        "p50_ms": percentile(samples.ns, 0.5) / 1e6,
        "p99_ms": percentile(samples.ns, 0.99) / 1e6,
        "n": len(samples.ns),
    }
    if samples.wrong is not None:
        result["wrong"] = samples.wrong
    return result
