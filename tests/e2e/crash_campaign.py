"""Campaigns of crash trials and the figures they add up to (reliability.md 15, rows K1-K4).

- ``kill_campaign`` runs random-kill chains (``crash_runner.run_chain``) on
  several worker threads until the wanted number of kills is reached, checking
  each chain as soon as it ends (``crash_verify.check_chain``).
- ``Figures`` sums the chain reports into the numbers the reliability plan
  asks for: kills, lost acknowledged commits, the committed-but-unacknowledged
  and committed-but-unpublished distributions, duplicate unsafe effects,
  interrupted effects, replayed safe effects, integrity failures.

Chain ``i`` of a campaign always uses chain seed ``base_seed + i`` and workload
seed ``1 + i % 8``. A failing chain is replayed from its failure message::

    python -m tests.e2e.crash_campaign --backend sqlite --workload-seed 3 \\
        --chain-seed 20261132 --kill-times 0.121,0.034 [--durable] [--pace 30]
    python -m tests.e2e.crash_campaign --backend jsonl --workload-seed 7 \\
        --failpoints jsonl.after_marker:19

which runs the chain in a fresh temporary directory (kept and printed) and
prints every problem ``check_chain`` finds. ``--backend postgres`` replays on the
server at ``$PIDURABLE_DATABASE_URL``, or on a throwaway one it starts.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pi_durable_tui.bench.postgres_server import PostgresServer
from tests.e2e.crash_runner import (
    DATABASE_ENV,
    Backend,
    KillBudget,
    Setup,
    run_chain,
    run_failpoint_chain,
    run_until_stopped,
)
from tests.e2e.crash_verify import ChainReport, check_chain

WORKLOAD_SEEDS = 8


@dataclass(frozen=True, slots=True)
class KillPlan:
    """How a random-kill campaign kills.

    Attributes:
        target_kills: The campaign's kill budget: chains stop killing (their next
            run completes) and no chain starts once this many kills happened.
        base_seed: Chain ``i`` uses ``base_seed + i``.
        pace_ms: Sleep between workload steps, so a run's work lasts a few
            hundred ms and the kill delays land inside it.
        max_delay: Kill delays are uniform in ``[0, max_delay]`` seconds after ``ready``.
        max_kills_per_chain: After this many kills the next run must complete.
        workers: Chains run at the same time (they mostly wait on their child).
        max_chains: A bound on chains, in case kills stop landing.
    """

    target_kills: int
    base_seed: int
    pace_ms: float = 30.0
    max_delay: float = 0.2
    max_kills_per_chain: int = 6
    workers: int = 4
    max_chains: int = 1000


def chain_setup(
    backend: Backend, root: Path, plan: KillPlan, index: int, database: str | None = None
) -> Setup:
    """Return chain ``index``'s store and workload; every third chain syncs every commit."""
    directory = root / f"{backend}-chain{index:04d}"
    directory.mkdir(parents=True)
    return Setup(
        name=f"{backend}-chain{index:04d}",
        backend=backend,
        directory=directory,
        seed=1 + index % WORKLOAD_SEEDS,
        pace_ms=plan.pace_ms,
        durable=index % 3 == 2,
        database=database,
    )


def kill_campaign(
    backend: Backend, root: Path, plan: KillPlan, database: str | None = None
) -> list[ChainReport]:
    """Run random-kill chains until ``plan.target_kills`` kills; return every chain's report.

    Once a chain shows a problem no new chain starts (the running ones finish), so
    a failure is reported in seconds, with its evidence, even in a soak.
    """

    budget = KillBudget(plan.target_kills)

    def one(index: int) -> ChainReport:
        setup = chain_setup(backend, root, plan, index, database)
        chain = run_chain(
            setup,
            plan.base_seed + index,
            max_kills=plan.max_kills_per_chain,
            max_delay=plan.max_delay,
            budget=budget,
        )
        return check_chain(chain)

    started = 0

    def next_chain() -> Callable[[], ChainReport] | None:
        nonlocal started
        if budget.left <= 0 or started >= plan.max_chains:
            return None
        started += 1
        return functools.partial(one, started - 1)

    reports = run_until_stopped(
        next_chain, workers=plan.workers, stop=lambda report: bool(report.problems)
    )
    reports.sort(key=lambda r: r.chain.setup.name)
    return reports


@dataclass(slots=True)
class Figures:
    """Totals over chain reports; ``summary()`` is what the tests print."""

    chains: int = 0
    kills: int = 0
    mid_work_kills: int = 0
    recovery_kills: int = 0
    problems: list[str] = field(default_factory=list)
    lost_acknowledged: int = 0
    duplicate_unsafe: int = 0
    integrity_failures: int = 0
    unacked: Counter[int] = field(default_factory=Counter)
    unpublished: Counter[int] = field(default_factory=Counter)
    interrupted: int = 0
    safe_repeats: int = 0
    repaired_opens: int = 0
    resume_steps: Counter[int] = field(default_factory=Counter)

    @classmethod
    def of(cls, reports: list[ChainReport]) -> Figures:
        figures = cls()
        for report in reports:
            figures.chains += 1
            figures.kills += len(report.chain.kills)
            figures.mid_work_kills += report.mid_work_kills
            figures.recovery_kills += report.recovery_kills
            figures.problems += report.problems
            figures.lost_acknowledged += sum("LOST" in p for p in report.problems)
            figures.duplicate_unsafe += sum("DUPLICATE" in p for p in report.problems)
            figures.integrity_failures += sum(
                "integrity_check" in p
                or "check_integrity" in p
                or "foreign_key_check" in p
                or "does not reopen" in p
                for p in report.problems
            )
            figures.unacked.update(report.unacked_per_kill)
            figures.unpublished.update(report.unpublished_per_kill)
            figures.interrupted += len(report.interrupted)
            figures.safe_repeats += report.safe_repeats
            figures.repaired_opens += report.repaired_opens
            figures.resume_steps.update(report.resume_steps)
        return figures

    def summary(self, title: str) -> str:
        return (
            f"{title}: {self.chains} chains, {self.kills} kills "
            f"({self.mid_work_kills} mid-work, {self.recovery_kills} before the run's first ack); "
            f"lost acknowledged commits {self.lost_acknowledged}; "
            f"duplicate unsafe effects {self.duplicate_unsafe}; "
            f"integrity failures {self.integrity_failures}; "
            f"committed-but-unacknowledged entries per kill {dict(sorted(self.unacked.items()))}; "
            f"committed-but-unpublished commits per kill {dict(sorted(self.unpublished.items()))}; "
            f"interrupted unsafe effects {self.interrupted}; replayed safe effects "
            f"{self.safe_repeats}; JSONL opens that repaired a torn tail {self.repaired_opens}; "
            f"restarts by driver step {dict(sorted(self.resume_steps.items()))}; "
            f"problems {len(self.problems)}"
        )


def main(argv: list[str] | None = None) -> int:
    """Replay one chain (see the module docstring); exit 1 when it shows problems."""
    parser = argparse.ArgumentParser(prog="python -m tests.e2e.crash_campaign")
    parser.add_argument("--backend", choices=["sqlite", "jsonl", "postgres"], required=True)
    parser.add_argument("--workload-seed", type=int, required=True)
    parser.add_argument("--chain-seed", type=int, default=0)
    parser.add_argument("--kill-times", default=None, help="comma-separated seconds")
    parser.add_argument("--failpoints", default=None, help="comma-separated, one per run")
    parser.add_argument("--pace", type=float, default=None, help="ms between steps")
    parser.add_argument("--durable", action="store_true")
    args = parser.parse_args(argv)
    directory = Path(tempfile.mkdtemp(prefix="crash-replay-"))
    backend: Backend = args.backend
    with contextlib.ExitStack() as stack:
        database = None
        if backend == "postgres":
            database = (
                os.environ.get(DATABASE_ENV) or stack.enter_context(PostgresServer.start()).url
            )
        if args.failpoints:
            setup = Setup(
                "replay", backend, directory, args.workload_seed, 0.0, args.durable, database
            )
            chain = run_failpoint_chain(setup, args.failpoints.split(","))
        else:
            pace = KillPlan(0, 0).pace_ms if args.pace is None else args.pace
            setup = Setup(
                "replay", backend, directory, args.workload_seed, pace, args.durable, database
            )
            delays = [float(t) for t in args.kill_times.split(",")] if args.kill_times else None
            max_delay = KillPlan(0, 0).max_delay
            chain = run_chain(
                setup, args.chain_seed, max_kills=6, max_delay=max_delay, delays=delays
            )
        report = check_chain(chain)
    print(f"directory: {directory}")
    print(chain.describe())
    print(Figures.of([report]).summary("replay"))
    for problem in report.problems:
        print(problem)
    return 1 if report.problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
