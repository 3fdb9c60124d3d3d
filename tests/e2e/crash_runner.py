"""Parent side of the crash tests: start the workload child, SIGKILL it, start it again.

Reliability.md section 11.1 (random ``kill -9`` of a child, then verify) and
11.2 (named failpoints at commit boundaries); rows K1-K4 of section 15.

- ``launch`` starts ``python -m tests.e2e.crash_workload`` for one run of a chain,
  reads its protocol lines through the stdout pipe (lines written before a kill
  stay readable after it), and either kills it with SIGKILL a given time after
  its ``ready`` line, or lets it run (to completion, or to an armed failpoint).
- ``run_chain`` kills a store's workload again and again at random times, then
  lets the last run complete: a chain of kill trials on one store.
- ``run_failpoint_chain`` arms one failpoint occurrence per run (the child must
  die there), then restarts it to completion.
- ``run_parallel`` runs independent chains or trials on worker threads (the
  children are separate processes; the threads only wait on them);
  ``run_until_stopped`` does it for a campaign whose next chain depends on
  how the others went, and stops starting chains at the first problem.

Nothing here sleeps except ``communicate(timeout=kill_after)``, which is the
random kill delay itself.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from pi_durable_tui.storage.failpoints import ENV_VAR as FAILPOINT_ENV

REPO = Path(__file__).resolve().parents[2]
MODULE = "tests.e2e.crash_workload"
KILLED = -signal.SIGKILL
HANG_TIMEOUT = 60.0
"""Seconds a run may take before it counts as hung (a complete run takes well under 1 s)."""

Backend = Literal["sqlite", "jsonl", "postgres"]
DATABASE_ENV = "PIDURABLE_DATABASE_URL"
"""How a ``postgres`` child learns its server's URL (never on its command line: ``ps``)."""
T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Setup:
    """One store under test and how the workload runs on it.

    Attributes:
        name: The trial's name, used in every failure message.
        backend: ``sqlite``, ``jsonl`` or ``postgres``.
        directory: A fresh directory holding the store (for ``postgres``, its path
            is the store's name in the database), the ledger and stderr logs.
        seed: The workload seed (``crash_model.build_script``).
        pace_ms: Milliseconds the child sleeps between steps (0 for failpoint runs).
        durable: SQLite ``synchronous=FULL`` / JSONL ``fsync=True`` (PostgreSQL: the
            server's own setting).
        database: The PostgreSQL URL of a ``postgres`` setup.
    """

    name: str
    backend: Backend
    directory: Path
    seed: int
    pace_ms: float = 0.0
    durable: bool = False
    database: str | None = None

    @property
    def store(self) -> Path:
        return self.directory / ("store.sqlite" if self.backend == "sqlite" else "store")

    @property
    def store_name(self) -> str:
        """The ``postgres`` store's name in its database: the store path, unique per trial."""
        return str(self.store)

    @property
    def ledger(self) -> Path:
        return self.directory / "ledger.jsonl"

    def command(self, run: int) -> list[str]:
        command = [sys.executable, "-m", MODULE, "--backend", self.backend]
        command += ["--store", str(self.store), "--ledger", str(self.ledger)]
        command += ["--seed", str(self.seed), "--run", str(run), "--pace", str(self.pace_ms)]
        if self.durable and self.backend != "postgres":
            command += ["--synchronous", "FULL"] if self.backend == "sqlite" else ["--fsync"]
        return command


@dataclass(slots=True)
class Run:
    """One process of a chain and everything it printed."""

    number: int
    lines: list[tuple[str, dict[str, Any]]]
    returncode: int
    kill_after: float | None
    """Seconds after ``ready`` at which the test sent SIGKILL (``None``: it did not)."""
    failpoint: str | None
    hung: bool
    stderr: str

    @property
    def killed(self) -> bool:
        return self.returncode == KILLED

    @property
    def poisoned(self) -> bool:
        """The run ended on ``SessionFailed`` (an uncertain storage failure, R8)."""
        return self.returncode == 1 and "SessionFailed" in self.stderr

    @property
    def completed(self) -> bool:
        return any(word == "complete" for word, _ in self.lines)

    def payloads(self, word: str) -> list[dict[str, Any]]:
        return [payload for w, payload in self.lines if w == word]

    @property
    def acks(self) -> list[dict[str, Any]]:
        return self.payloads("ack")

    def describe(self) -> str:
        how = (
            f"killed {self.kill_after:.3f} s after ready"
            if self.kill_after is not None
            else f"failpoint {self.failpoint}"
            if self.failpoint
            else "not killed"
        )
        return f"run {self.number} ({how}, exit {self.returncode}, {len(self.acks)} acks)"


@dataclass(slots=True)
class Chain:
    """The runs of one store, from its first process to the one that completed."""

    setup: Setup
    chain_seed: int | None
    runs: list[Run] = field(default_factory=list)
    ambiguous: bool = False
    """An ambiguous-commit trial: a run may also end poisoned by ``SessionFailed`` (A1)."""

    @property
    def kills(self) -> list[Run]:
        """The runs that died before completing: by SIGKILL, or poisoned in an A1 trial."""
        return [
            run
            for run in self.runs
            if (run.killed or (self.ambiguous and run.poisoned)) and not run.completed
        ]

    def replay_command(self) -> str:
        """The command that replays this chain (``crash_campaign.main``)."""
        setup = self.setup
        command = f"python -m tests.e2e.crash_campaign --backend {setup.backend} "
        command += f"--workload-seed {setup.seed}"
        failpoints = [run.failpoint for run in self.runs if run.failpoint]
        if failpoints:
            command += f" --failpoints {','.join(failpoints)}"
        else:
            times = [f"{run.kill_after:.3f}" for run in self.runs if run.kill_after is not None]
            command += f" --chain-seed {self.chain_seed} --pace {setup.pace_ms}"
            command += f" --kill-times {','.join(times)}" if times else ""
        return command + (" --durable" if setup.durable else "")

    def describe(self, run: Run | None = None) -> str:
        where = (
            f"trial {self.setup.name} [{self.setup.backend}, workload seed {self.setup.seed}, "
            f"chain seed {self.chain_seed}, pace {self.setup.pace_ms} ms]"
        )
        if run is not None:
            return f"{where} {run.describe()}"
        return f"{where} runs: " + "; ".join(r.describe() for r in self.runs)


def parse_lines(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    """Parse ``word {json}`` protocol lines; a line that does not parse is kept as ``garbled``."""
    lines: list[tuple[str, dict[str, Any]]] = []
    for text in raw.decode(errors="replace").splitlines():
        word, _, rest = text.partition(" ")
        try:
            payload = json.loads(rest)
        except json.JSONDecodeError:
            lines.append(("garbled", {"text": text}))
            continue
        lines.append((word, payload))
    return lines


def launch(
    setup: Setup,
    number: int,
    *,
    kill_after: float | None = None,
    failpoint: str | None = None,
    timeout: float = HANG_TIMEOUT,
) -> Run:
    """Run one process of a chain.

    Args:
        setup: The store and workload.
        number: The run's number in its chain (the child stamps it on entries and effects).
        kill_after: Send SIGKILL this many seconds after the ``ready`` line, unless the
            child has exited by then; ``None`` lets it run.
        failpoint: A ``PIDURABLE_FAILPOINT`` value for this process only.
        timeout: Seconds after which a run that has not exited counts as hung.

    Returns:
        What the run printed and how it ended.
    """
    env = dict(os.environ)
    env.pop(FAILPOINT_ENV, None)
    env.pop(DATABASE_ENV, None)
    if setup.database is not None:
        env[DATABASE_ENV] = setup.database
    if failpoint is not None:
        env[FAILPOINT_ENV] = failpoint
    err_path = setup.directory / f"run{number}.stderr"
    with err_path.open("wb") as err:
        # bufsize=0: ``readline`` on the raw pipe reads byte by byte, so nothing after
        # the ``ready`` line sits in a Python buffer that ``communicate`` would miss.
        proc = subprocess.Popen(
            setup.command(number), cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=err, bufsize=0
        )
        assert proc.stdout is not None
        first = proc.stdout.readline()
        sent: float | None = None
        hung = False
        rest: bytes | None = None
        try:
            if first.startswith(b"ready ") and kill_after is not None:
                try:
                    rest, _ = proc.communicate(timeout=kill_after)
                except subprocess.TimeoutExpired:
                    if proc.poll() is None:
                        proc.send_signal(signal.SIGKILL)
                        sent = kill_after
            if rest is None:
                # After a TimeoutExpired, communicate() again returns everything, early
                # lines included (the subprocess documentation promises no loss).
                rest, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            hung = True
            proc.kill()
            rest, _ = proc.communicate()
    return Run(
        number=number,
        lines=parse_lines(first + rest),
        returncode=proc.returncode,
        kill_after=sent,
        failpoint=failpoint,
        hung=hung,
        stderr=err_path.read_text(errors="replace"),
    )


class KillBudget:
    """Kills shared by the chains of a campaign, so it stops near its target, not past it."""

    def __init__(self, kills: int) -> None:
        self._left = kills
        self._lock = threading.Lock()

    @property
    def left(self) -> int:
        with self._lock:
            return self._left

    def take(self) -> bool:
        """Reserve one kill; ``False`` once the budget is spent."""
        with self._lock:
            if self._left <= 0:
                return False
            self._left -= 1
            return True

    def give_back(self) -> None:
        """Return a reserved kill that did not happen (the run completed first)."""
        with self._lock:
            self._left += 1


def run_chain(
    setup: Setup,
    chain_seed: int,
    *,
    max_kills: int,
    max_delay: float,
    budget: KillBudget | None = None,
    delays: Sequence[float] | None = None,
) -> Chain:
    """Kill the workload at uniform random times after ``ready`` until it completes.

    Each run draws its delay from ``[0, max_delay]`` seconds. After ``max_kills``
    kills, or once the campaign's ``budget`` is spent, the next run is left alone
    and must complete. A run that completes before its kill time ends the chain.
    ``delays`` replays the kill times a failure message printed instead.
    """
    rng = random.Random(chain_seed)
    chain = Chain(setup, chain_seed)
    while True:
        number = len(chain.runs) + 1
        delay = rng.uniform(0.0, max_delay)
        if delays is not None:
            max_kills = len(delays)
            delay = delays[min(number, len(delays)) - 1] if delays else 0.0
        kill = len(chain.kills) < max_kills and (budget is None or budget.take())
        run = launch(setup, number, kill_after=delay if kill else None)
        chain.runs.append(run)
        if kill and budget is not None and not (run.killed and not run.completed):
            budget.give_back()  # the run completed (or failed) before its kill time
        if run.completed or run.hung or not run.killed or number > max_kills + 1:
            return chain


def run_failpoint_chain(setup: Setup, failpoints: list[str]) -> Chain:
    """Run once per armed failpoint (each must kill its run), then once to completion.

    ``failpoints[0]`` arms the first, fresh, run; later items arm the recovery runs
    (a kill during recovery, reliability.md 15 row K4). A ``:raise`` failpoint makes
    the storage call fail instead (an ambiguous commit, row A1): that run must end
    poisoned. The chain stops early when a run is neither killed nor poisoned.
    """
    chain = Chain(setup, None, ambiguous=any(spec.endswith(":raise") for spec in failpoints))
    for spec in [*failpoints, None]:
        run = launch(setup, len(chain.runs) + 1, failpoint=spec)
        chain.runs.append(run)
        if spec is None or run not in chain.kills:
            break
    return chain


def run_parallel(work: Callable[[T], R], items: Iterable[T], workers: int = 2) -> list[R]:
    """Apply ``work`` to every item on ``workers`` threads; results in item order."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(work, items))


def run_until_stopped(
    next_job: Callable[[], Callable[[], R] | None], *, workers: int, stop: Callable[[R], bool]
) -> list[R]:
    """Run jobs on up to ``workers`` threads for as long as ``next_job`` gives one.

    ``next_job`` is asked for another job whenever a thread is free; ``None``
    means none now (it is asked again when a running job ends, and the run ends
    once nothing runs). Once a result satisfies ``stop``, no new job starts and
    the running ones finish, so a failure is reported in seconds, with its
    evidence, even in a soak.

    Returns:
        Every job's result, in the order they finished.
    """
    results: list[R] = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        running: set[Future[R]] = set()
        while True:
            while len(running) < workers and not any(stop(result) for result in results):
                job = next_job()
                if job is None:
                    break
                running.add(pool.submit(job))
            if not running:
                return results
            done, running = wait(running, return_when=FIRST_COMPLETED)
            results += [future.result() for future in done]
