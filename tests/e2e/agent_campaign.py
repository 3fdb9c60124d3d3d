"""Campaigns of agent crash chains and the figures they add up to (reliability.md 15).

- ``agent_campaign`` runs, on worker threads, random-kill chains (K1, K4: each
  process is killed at a uniform random time after its spawn, up to
  ``max_kills_per_chain`` times, until the campaign's kill budget is spent) and
  effect-window chains (K3: each process is killed right after the effect of
  one chosen tool call, targets taken in script order so that each lands in a
  later round). Every other chain resends the prompt on every restart (S1).
  Each chain is checked as soon as it ends (``agent_verify``); once one shows a
  problem, no new chain starts.
- ``AgentFigures`` sums the reports into the figures the tests print.

A failing chain is replayed from its failure message::

    python -m tests.e2e.agent_campaign --kills +2.113,bash-07,0.412 [--resubmit]

(numbers are kill times in seconds after the spawn, or after the first line
with ``+``; names are effect-window targets), in a fresh temporary directory
that is kept and printed.
"""

from __future__ import annotations

import argparse
import functools
import random
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.agent_runner import AgentChain, Kill, KillPlanner, Trial, run_chain
from tests.e2e.agent_scenario import Scenario, build_scenario
from tests.e2e.agent_verify import AgentReport, check_agent_chain
from tests.e2e.crash_runner import KillBudget, run_until_stopped


@dataclass(frozen=True, slots=True)
class AgentPlan:
    """What an agent campaign does.

    Attributes:
        random_kills: Kills at random times (the budget the random chains share).
        window_targets: Call IDs to kill inside their effect windows, one kill each.
        base_seed: Random chain ``i`` draws its kill times from ``base_seed + i``.
        max_delay: Most kill times are uniform in ``[0, max_delay]`` seconds after
            the process's first line (a whole session takes about 11 s).
        early_share: The share of kills timed from the spawn instead, uniform in
            ``[0, max_early_delay]`` s: they land in start-up, reopening and
            recovery (K4).
        max_kills_per_chain: After this many kills the next process must complete.
        commit_kills: The first random chains' first processes die right after
            these COMMITs (``sqlite.after_commit`` failpoint): a fresh session's
            first commits, so one of them lands between the prompt's admission
            commit and its acknowledgement (S1), and the restart sends it again.
        stream_kills: The next random chains' first processes are killed right
            after their N-th streamed ``commit`` line: mid-stream, with a partial
            committed (R92), however fast or loaded the machine.
        workers: The most chains at the same time.
    """

    random_kills: int
    window_targets: tuple[str, ...]
    base_seed: int
    max_delay: float = 6.0
    early_share: float = 0.25
    max_early_delay: float = 1.5
    max_kills_per_chain: int = 4
    commit_kills: tuple[int, ...] = (1, 2, 3, 4)
    stream_kills: tuple[int, ...] = (1, 2, 3)
    workers: int = 24


def window_chains(scenario: Scenario, targets: Sequence[str], per_chain: int) -> list[list[str]]:
    """Deal targets to chains so that each chain's targets run in strictly later rounds."""
    ordered = sorted(targets, key=lambda c: (scenario.call(c).root_turn, c))
    count = max(1, -(-len(ordered) // per_chain))
    return [ordered[i::count] for i in range(count)]


def _random_planner(
    seed: int, budget: KillBudget, plan: AgentPlan, first: Kill | None = None
) -> Callable[[AgentChain], Kill | None]:
    rng = random.Random(seed)

    def planner(chain: AgentChain) -> Kill | None:
        if first is not None and not chain.runs:
            return first
        early = rng.random() < plan.early_share
        delay = rng.uniform(0.0, plan.max_early_delay if early else plan.max_delay)
        if len(chain.kills) >= plan.max_kills_per_chain or not budget.take():
            return None
        return Kill(after=delay, from_first_line=not early)

    return planner


def replay_planner(kills: Sequence[str]) -> KillPlanner:
    def planner(chain: AgentChain) -> Kill | None:
        index = len(chain.runs)
        if index >= len(kills):
            return None
        return Kill.parse(kills[index])

    return planner


def agent_campaign(root: Path, plan: AgentPlan, scenario: Scenario) -> list[AgentReport]:
    """Run the plan's chains (see the module docstring); return every chain's report."""
    budget = KillBudget(plan.random_kills)
    windows = window_chains(scenario, plan.window_targets, plan.max_kills_per_chain)
    lock = threading.Lock()
    started = Counter[str]()
    running_random = 0

    def one(name: str, seed: int | None, planner: KillPlanner, resubmit: bool) -> AgentReport:
        nonlocal running_random
        trial = Trial(name, root / name, resubmit=resubmit)
        chain = run_chain(trial, scenario, planner, seed)
        if seed is not None:
            timed = [run for run in chain.runs if run.kill and run.kill.after is not None]
            for _ in range(sum(1 for run in timed if not run.killed)):
                budget.give_back()  # the process ended before its kill time
            with lock:
                running_random -= 1
        return check_agent_chain(chain, scenario)

    def next_chain() -> Callable[[], AgentReport] | None:
        # Random chains start while the budget holds more kills than the running ones
        # are expected to take (``max_kills_per_chain - 1`` each: the last planned kill
        # often comes after the session ended), so the whole campaign runs at once and
        # takes about as long as its longest chain: the processes mostly wait on the
        # faux pacing. A chain that missed kills leaves them to a later one.
        nonlocal running_random
        index = started.total()
        resubmit = index % 2 == 1
        if started["window"] < len(windows):
            targets = windows[started["window"]]
            started["window"] += 1
            return functools.partial(
                one, f"window{index:02d}", None, replay_planner(targets), resubmit
            )
        with lock:
            if budget.left <= max(1, plan.max_kills_per_chain - 1) * running_random:
                return None
            running_random += 1
        first = None
        firsts = [
            *(Kill(failpoint=f"sqlite.after_commit:{n}") for n in plan.commit_kills),
            *(Kill(updates=n) for n in plan.stream_kills),
        ]
        if started["random"] < len(firsts):
            first = firsts[started["random"]]
        started["random"] += 1
        seed = plan.base_seed + index
        planner = _random_planner(seed, budget, plan, first)
        return functools.partial(one, f"random{index:03d}", seed, planner, resubmit)

    reports = run_until_stopped(
        next_chain, workers=plan.workers, stop=lambda report: bool(report.problems)
    )
    reports.sort(key=lambda r: r.chain.trial.name)
    return reports


@dataclass(slots=True)
class AgentFigures:
    """Totals over chain reports; ``summary()`` is what the tests print."""

    chains: int = 0
    kills: int = 0
    random_kills: int = 0
    commit_kills: int = 0
    stream_kills: int = 0
    recovery_kills: int = 0
    """Kills of a process that had acknowledged nothing yet (start-up, reopen, recovery)."""
    window_kills: Counter[str] = field(default_factory=Counter)
    window_landed: Counter[str] = field(default_factory=Counter)
    lost_acked: int = 0
    unacked: Counter[int] = field(default_factory=Counter)
    """Chains by their number of committed-but-unacknowledged root entries."""
    repeated_unsafe: int = 0
    duplicate_prompts: int = 0
    resubmissions: int = 0
    admission_kills: int = 0
    """Chains killed between the prompt's admission commit and its acknowledgement (S1)."""
    safe_reruns: int = 0
    interrupted: int = 0
    partials: int = 0
    max_restarts: int = 0
    integrity_failures: int = 0
    sequential_rounds: int = 0
    parallel_rounds: int = 0
    canary_files: Counter[str] = field(default_factory=Counter)
    """Files holding the canary by place: ``home`` (the store, its WAL, the title),
    ``tmp`` (spill files) and ``logs`` (what the processes printed)."""
    scrubbed: Counter[bool] = field(default_factory=Counter)
    redacted: Counter[bool] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @classmethod
    def of(cls, reports: list[AgentReport], seconds: float = 0.0) -> AgentFigures:
        figures = cls(seconds=seconds)
        for report in reports:
            chain = report.chain
            figures.chains += 1
            figures.kills += len(chain.kills)
            figures.random_kills += sum(
                1 for r in chain.kills if r.kill and r.kill.after is not None
            )
            figures.commit_kills += sum(1 for r in chain.kills if r.kill and r.kill.failpoint)
            figures.stream_kills += sum(1 for r in chain.kills if r.kill and r.kill.updates)
            figures.recovery_kills += sum(1 for r in chain.kills if not r.acks)
            figures.window_kills.update(report.window_kills)
            figures.window_landed.update(report.window_landed)
            figures.lost_acked += report.lost_acked
            figures.unacked[report.unacked] += 1
            figures.repeated_unsafe += report.repeated_unsafe
            figures.duplicate_prompts += report.duplicate_prompts
            figures.resubmissions += sum(1 for r in chain.runs[1:] if r.resubmitted)
            figures.admission_kills += report.admission_killed
            figures.safe_reruns += report.safe_reruns
            figures.interrupted += len(report.interrupted)
            figures.partials += report.partials
            figures.max_restarts = max(figures.max_restarts, len(chain.runs) - 1)
            figures.integrity_failures += report.integrity_failures
            figures.sequential_rounds += report.sequential_rounds
            figures.parallel_rounds += report.parallel_rounds
            for name in report.canary_files:
                place = name.split("/")[0]
                figures.canary_files["logs" if place.startswith("run") else place] += 1
            if report.scrubbed is not None:
                figures.scrubbed[report.scrubbed] += 1
            if report.redacted is not None:
                figures.redacted[report.redacted] += 1
            figures.problems += report.problems
        return figures

    def summary(self, title: str) -> str:
        windows = ", ".join(
            f"{tool} {self.window_landed[tool]}/{n}"
            for tool, n in sorted(self.window_kills.items())
        )
        parts = [
            f"{self.chains} chains in {self.seconds:.0f} s",
            f"{self.kills} kills ({self.random_kills} at random times, {self.commit_kills} at "
            f"a fresh session's first commits, {self.stream_kills} after a streamed update, "
            f"{self.recovery_kills} before the process "
            f"acknowledged anything)",
            f"effect-window kills landed/sent: {windows or 'none'}",
            f"lost acknowledged entries {self.lost_acked}",
            f"chains by committed-but-unacknowledged root entries {sorted(self.unacked.items())}",
            f"repeated unsafe effects {self.repeated_unsafe}",
            f"duplicate prompts {self.duplicate_prompts} after {self.resubmissions} resubmissions "
            f"({self.admission_kills} after a kill between admission and acknowledgement)",
            f"safe reruns {self.safe_reruns}",
            f"interrupted results {self.interrupted}",
            f"partials kept mid-stream {self.partials}",
            f"restarts per session max {self.max_restarts}",
            f"integrity failures {self.integrity_failures}",
            f"rounds sequential {self.sequential_rounds} / parallel {self.parallel_rounds}",
            f"env scrubbed in {self.scrubbed[True]} of {sum(self.scrubbed.values())}",
            f"canary redacted in {self.redacted[True]} of {sum(self.redacted.values())} results",
            f"files holding the canary {dict(self.canary_files) or 0}",
            f"problems {len(self.problems)}",
        ]
        return f"{title}: " + "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    """Replay one chain (see the module docstring); exit 1 when it shows problems."""
    parser = argparse.ArgumentParser(prog="python -m tests.e2e.agent_campaign")
    parser.add_argument(
        "--kills",
        required=True,
        help="comma-separated: seconds, +seconds, ~updates, call IDs, failpoints",
    )
    parser.add_argument("--resubmit", action="store_true")
    args = parser.parse_args(argv)
    kills = [] if args.kills == "-" else args.kills.split(",")
    directory = Path(tempfile.mkdtemp(prefix="agent-crash-replay-"))
    scenario = build_scenario()
    started = time.monotonic()
    trial = Trial("replay", directory, resubmit=args.resubmit)
    report = check_agent_chain(run_chain(trial, scenario, replay_planner(kills), None), scenario)
    print(f"directory: {directory}")
    print(report.chain.describe())
    print(AgentFigures.of([report], time.monotonic() - started).summary("replay"))
    for problem in report.problems:
        print(problem)
    return 1 if report.problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
