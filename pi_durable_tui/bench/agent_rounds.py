"""Benchmark: 200 tool rounds in one conversation, on SQLite and in memory, against a commit floor.

``python -m pi_durable_tui.bench rounds [--rounds N] [--json]``

The workload is the one the durable peers are compared on: one user input, then a
faux model that answers every request at once with a ``read`` of a small file
until ``--rounds`` tool rounds have run, then a final answer. A round is the time
from one model call to the next (the response, its tool task, the tool, the result,
the next generation's start). It runs on ``SqliteStorage`` (the product's backend)
and on ``MemoryStorage`` (the same agent with nothing persisted).

The floor, measured in the same run, is one aiosqlite transaction of one row
(``BEGIN IMMEDIATE``, ``INSERT``, ``COMMIT`` in WAL mode): the least a durable step
on aiosqlite costs. Reported per backend:

- round p50/p99 ``early`` (rounds 2-51) and ``late`` (the last 50), in ms and as a
  ratio against the floor p50 (target: a round at most 4x the floor);
- per round: write transactions (``commits``), document-op JSON bytes, bytes the
  process passed to ``write(2)`` (``/proc/self/io`` ``wchar``, where there is one),
  storage reads, hops to aiosqlite's worker thread, asyncio tasks created,
  ``asyncio.shield`` calls and event-loop iterations.

Then ``resume``: a child process runs the SQLite workload and kills itself
(``SIGKILL``) in the model call of the last round; this process reopens copies of
the store it left and times reopen -> the next model call (p50 of five), in ms and
as a ratio against the floor (target: at most 15 ms). ``--json`` prints one object.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiosqlite

from pi_durable_tui.ai import Context, StreamOptions, faux_response, faux_tool_call
from pi_durable_tui.bench._agent_kit import open_agent, percentile
from pi_durable_tui.harness import Input
from pi_durable_tui.storage import MemoryStorage, SqliteStorage, Storage

# Every read of the Storage protocol: its public members but the writes and close.
_READS = tuple(
    name
    for name in dir(Storage)
    if not name.startswith("_") and name not in ("close", "commit", "last_seq", "mint_id")
)
_RESUME_SAMPLES = 5
_WINDOW = 50


@dataclass
class Counts:
    """What the instrumentation counted while a workload ran."""

    reads: int = 0
    hops: int = 0
    tasks: int = 0
    shields: int = 0
    iterations: int = 0
    per_read: dict[str, int] = field(default_factory=dict)


def _wchar() -> int:
    """Bytes this process passed to write(2) so far (0 where /proc has no io file)."""
    try:
        for line in Path("/proc/self/io").read_text().splitlines():
            if line.startswith("wchar:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


@contextlib.contextmanager
def _instrumented(storage: Storage, counts: Counts) -> Iterator[None]:
    """Count reads of ``storage``, aiosqlite hops, tasks, shields and loop iterations."""
    loop = asyncio.get_running_loop()
    originals: dict[str, Any] = {}
    for name in _READS:
        method = getattr(storage, name, None)
        if method is None:
            continue
        originals[name] = method

        def counted(*args: Any, _m: Any = method, _n: str = name, **kwargs: Any) -> Any:
            counts.reads += 1
            counts.per_read[_n] = counts.per_read.get(_n, 0) + 1
            return _m(*args, **kwargs)

        setattr(storage, name, counted)
    execute = aiosqlite.Connection._execute
    shield = asyncio.shield
    run_once = loop._run_once  # type: ignore[attr-defined]
    factory = loop.get_task_factory()

    async def hop(self: aiosqlite.Connection, fn: Any, *args: Any, **kwargs: Any) -> Any:
        counts.hops += 1
        return await execute(self, fn, *args, **kwargs)  # type: ignore[no-untyped-call]

    def shielded(awaitable: Any) -> Any:
        counts.shields += 1
        return shield(awaitable)

    def once() -> None:
        counts.iterations += 1
        run_once()

    def task(loop_: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> Any:
        counts.tasks += 1
        if factory is not None:
            return factory(loop_, coro, **kwargs)
        return asyncio.Task(coro, loop=loop_, **kwargs)

    aiosqlite.Connection._execute = hop  # type: ignore[method-assign]
    asyncio.shield = shielded  # type: ignore[assignment]
    loop._run_once = once  # type: ignore[attr-defined]
    loop.set_task_factory(task)
    try:
        yield
    finally:
        aiosqlite.Connection._execute = execute  # type: ignore[method-assign]
        asyncio.shield = shield
        loop._run_once = run_once  # type: ignore[attr-defined]
        loop.set_task_factory(factory)
        for name in originals:
            with contextlib.suppress(AttributeError):
                delattr(storage, name)


def _script(rounds: int, calls: list[float], kill_at: int | None = None) -> Callable[..., Any]:
    """The faux model: ``read`` for the first ``rounds`` requests, then an answer."""

    def answer(_context: Context, _options: StreamOptions, _index: int) -> Any:
        calls.append(time.perf_counter())
        if kill_at is not None and len(calls) == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        if len(calls) <= rounds:
            return faux_response(faux_tool_call("read", {"path": "small.txt"}))
        return faux_response("The file says hello.")

    return answer


async def _floor(directory: Path, commits: int) -> list[float]:
    """One-row aiosqlite transactions in WAL mode, the store's synchronous level."""
    db = await aiosqlite.connect(directory / "floor.sqlite", isolation_level=None)
    try:
        await db.execute("PRAGMA journal_mode = WAL")
        await db.execute("PRAGMA synchronous = NORMAL")
        await db.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT)")
        times: list[float] = []
        for index in range(commits):
            started = time.perf_counter()
            await db.execute("BEGIN IMMEDIATE")
            await db.execute("INSERT INTO rows VALUES (?, ?)", (index, "x" * 64))
            await db.execute("COMMIT")
            times.append((time.perf_counter() - started) * 1000)
        return times
    finally:
        await db.close()


async def _rounds(directory: Path, rounds: int, memory: bool) -> dict[str, Any]:
    """Run the workload once; the round times and the per-round counts."""
    calls: list[float] = []
    storage: Storage = (
        MemoryStorage() if memory else await SqliteStorage.open(directory / "session.sqlite")
    )
    counts = Counts()
    kit = await open_agent(directory, factory=_script(rounds, calls), storage=storage)
    try:
        kit.counter.reset()
        written = _wchar()
        with _instrumented(storage, counts):
            record = await (await kit.root.submit(Input("read small.txt again and again"))).wait()
        written = _wchar() - written
        if record.status != "done":
            raise RuntimeError(f"the workload ended {record.status}: {record.detail}")
        commits, op_bytes = kit.counter.commits, kit.counter.op_bytes
    finally:
        await kit.close()
    times = [(b - a) * 1000 for a, b in itertools.pairwise(calls)][:rounds]
    window = max(1, min(_WINDOW, (rounds - 1) // 2))
    early, late = times[1 : 1 + window], times[-window:]
    return {
        "early_p50_ms": round(percentile(early, 0.5), 3),
        "early_p99_ms": round(percentile(early, 0.99), 3),
        "late_p50_ms": round(percentile(late, 0.5), 3),
        "late_p99_ms": round(percentile(late, 0.99), 3),
        "per_round": {
            "commits": round(commits / rounds, 2),
            "op_bytes": round(op_bytes / rounds),
            "write_bytes": round(written / rounds),
            "reads": round(counts.reads / rounds, 2),
            "hops": round(counts.hops / rounds, 2),
            "tasks": round(counts.tasks / rounds, 2),
            "shields": round(counts.shields / rounds, 2),
            "loop_iterations": round(counts.iterations / rounds, 1),
        },
        "reads_by_kind": {k: round(v / rounds, 2) for k, v in sorted(counts.per_read.items())},
        "rounds": rounds,
    }


def _killed_store(directory: Path, rounds: int) -> Path:
    """A child runs the SQLite workload and SIGKILLs itself in the last round's model call."""
    child = directory / "killed"
    child.mkdir()
    (child / "small.txt").write_text("hello\n" * 20)
    command = [sys.executable, "-m", "pi_durable_tui.bench", "rounds", "--child", str(child)]
    command += ["--rounds", str(rounds)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != -signal.SIGKILL:
        raise RuntimeError(f"the child ended {done.returncode}, not killed: {done.stderr[-400:]}")
    return child


async def _resume(killed: Path, sample: int) -> float:
    """Reopen a copy of the killed store; ms from opening to the next model call."""
    target = killed.parent / f"resume-{sample}"
    target.mkdir()
    for path in killed.iterdir():
        shutil.copy2(path, target / path.name)
    calls: list[float] = []
    called = asyncio.Event()
    script = _script(0, calls)

    def answer(context: Context, options: StreamOptions, index: int) -> Any:
        called.set()
        return script(context, options, index)

    started = time.perf_counter()
    kit = await open_agent(target, factory=answer)
    try:
        await asyncio.wait_for(called.wait(), 60)
        return (calls[0] - started) * 1000
    finally:
        await kit.close()


async def measure(rounds: int) -> dict[str, Any]:
    """Run the workloads; return the report keyed by workload."""
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="pidurable-bench-rounds-") as name:
        directory = Path(name)
        floor = await _floor(directory, 400)
        floor_p50 = percentile(floor, 0.5)
        report["floor"] = {
            "p50_ms": round(floor_p50, 3),
            "p99_ms": round(percentile(floor, 0.99), 3),
        }
        for backend, memory in (("sqlite", False), ("memory", True)):
            (directory / backend).mkdir()
            (directory / backend / "small.txt").write_text("hello\n" * 20)
            row = await _rounds(directory / backend, rounds, memory)
            row["early_ratio"] = round(row["early_p50_ms"] / floor_p50, 2)
            row["late_ratio"] = round(row["late_p50_ms"] / floor_p50, 2)
            report[backend] = row
        killed = _killed_store(directory, rounds)
        samples = [await _resume(killed, sample) for sample in range(_RESUME_SAMPLES)]
        resume = percentile(samples, 0.5)
        report["resume"] = {
            "p50_ms": round(resume, 3),
            "max_ms": round(max(samples), 3),
            "ratio": round(resume / floor_p50, 2),
            "at_round": rounds,
        }
    return report


async def _child(directory: Path, rounds: int) -> None:
    calls: list[float] = []
    kit = await open_agent(directory, factory=_script(rounds, calls, kill_at=rounds))
    await (await kit.root.submit(Input("read small.txt again and again"))).wait()
    raise RuntimeError("the child was to be killed in its last round")


def _render(report: dict[str, Any]) -> str:
    floor = report["floor"]
    lines = [
        f"{report['sqlite']['rounds']} tool rounds (read of a small file, faux model at once)",
        f"  aiosqlite one-row commit floor: p50 {floor['p50_ms']:.3f} ms"
        f"  p99 {floor['p99_ms']:.3f} ms",
    ]
    for backend in ("sqlite", "memory"):
        row = report[backend]
        per = row["per_round"]
        lines.append(
            f"  {backend:<7} early p50 {row['early_p50_ms']:.3f} p99 {row['early_p99_ms']:.3f}"
            f"  late p50 {row['late_p50_ms']:.3f} p99 {row['late_p99_ms']:.3f} ms"
            f"  ratio early {row['early_ratio']} late {row['late_ratio']} (target <= 4)"
        )
        lines.append(
            f"          per round: {per['commits']} commits, {per['op_bytes']} op bytes,"
            f" {per['write_bytes']} bytes written, {per['reads']} reads, {per['hops']} hops,"
            f" {per['tasks']} tasks, {per['shields']} shields,"
            f" {per['loop_iterations']} loop iterations"
        )
    resume = report["resume"]
    lines.append(
        f"  resume after kill at round {resume['at_round']}: p50 {resume['p50_ms']:.3f} ms"
        f"  max {resume['max_ms']:.3f} ms  ratio {resume['ratio']} (target <= 15 ms)"
    )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    """Run the benchmark; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m pi_durable_tui.bench rounds")
    parser.add_argument("--rounds", type=int, default=200, help="tool rounds to run")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    rounds = max(3, args.rounds)
    if args.child is not None:
        asyncio.run(_child(args.child, rounds))
        return 1
    report = asyncio.run(measure(rounds))
    sys.stdout.write(json.dumps(report) + "\n" if args.json else _render(report))
    return 0
