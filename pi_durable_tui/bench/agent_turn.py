"""Benchmark: what one tool round costs, against one Session commit, in the same run.

``python -m pi_durable_tui.bench turn [--rounds N] [--json]``

A turn is a user input, a faux model answering at once with a ``read`` of a small
file, the tool call, and the model's final answer: two requests, one tool task,
one generation successor, their commits. It runs ``--rounds`` times on a real
SQLite store (the product's backend), twice: ``turn``, each in a fresh
conversation (the cost of the round itself), and ``turn_long``, all in one
conversation, timed over the last tenth (the context then holds four messages
per earlier round, which every request derives again). The floor, measured in the
same process on another SQLite store, is a Session commit of one entry (the least
any durable step costs). Reported: p50 and p99 in ms, commits per turn, and
``ratio`` = turn p50 / floor p50 (target: at most 15, a round is a handful of
commits and the rest must be cheap). ``--json`` prints one object keyed by workload.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pi_durable_tui.ai import Context, ModelRef, StreamOptions, faux_response, faux_tool_call
from pi_durable_tui.bench._agent_kit import open_agent, percentile
from pi_durable_tui.harness import AgentChange, Input
from pi_durable_tui.kernel import Ownerless, Session, Tx
from pi_durable_tui.storage import SqliteStorage


def _answer(context: Context, _options: StreamOptions, _index: int) -> Any:
    last = context.messages[-1] if context.messages else None
    if last is not None and last.role == "toolResult":
        return faux_response("The file says hello.")
    return faux_response(faux_tool_call("read", {"path": "small.txt"}))


def _appender(conversation_id: int, index: int) -> Callable[[Tx], Any]:
    return lambda tx: tx.append(conversation_id, "bench", data={"i": index})


async def _floor(directory: Path, rounds: int) -> list[float]:
    storage = await SqliteStorage.open(directory / "floor.sqlite")
    session = await Session.open(storage)
    try:
        conversation = await session.commit(lambda tx: tx.create_conversation(Ownerless()))
        times: list[float] = []
        for index in range(rounds):
            started = time.perf_counter()
            await session.commit(_appender(conversation.id, index))
            times.append((time.perf_counter() - started) * 1000)
        return times
    finally:
        await session.close()


async def _turns(directory: Path, rounds: int, fresh: bool) -> tuple[list[float], list[int]]:
    kit = await open_agent(directory, factory=_answer)
    times: list[float] = []
    commits: list[int] = []
    try:
        for index in range(rounds + 3):
            conversation = kit.root
            if fresh:
                agent = AgentChange(model=ModelRef("faux", "faux-1"), cwd=str(directory))
                conversation = await kit.harness.create_conversation(agent=agent)
            kit.counter.reset()
            started = time.perf_counter()
            record = await (await conversation.submit(Input(f"turn {index}"))).wait()
            elapsed = (time.perf_counter() - started) * 1000
            if record.status != "done":
                raise RuntimeError(f"turn {index} ended {record.status}: {record.detail}")
            if index >= 3:  # the first turns warm caches
                times.append(elapsed)
                commits.append(kit.counter.commits)
    finally:
        await kit.close()
    return times, commits


async def measure(rounds: int) -> dict[str, Any]:
    """Run the workloads; return the report keyed by workload."""
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="pidurable-bench-") as name:
        directory = Path(name)
        (directory / "small.txt").write_text("hello\n" * 20)
        floor = await _floor(directory, max(200, rounds * 10))
        floor_p50 = percentile(floor, 0.5)
        report["floor"] = {
            "p50_ms": round(floor_p50, 3),
            "p99_ms": round(percentile(floor, 0.99), 3),
        }
        for workload, fresh in (("turn", True), ("turn_long", False)):
            (directory / workload).mkdir()
            (directory / workload / "small.txt").write_text("hello\n" * 20)
            times, commits = await _turns(directory / workload, rounds, fresh)
            if not fresh:
                tenth = max(1, len(times) // 10)
                times, commits = times[-tenth:], commits[-tenth:]
            p50 = percentile(times, 0.5)
            report[workload] = {
                "p50_ms": round(p50, 3),
                "p99_ms": round(percentile(times, 0.99), 3),
                "commits": round(sum(commits) / len(commits), 1),
                "ratio": round(p50 / floor_p50, 2),
                "rounds": rounds,
            }
    return report


def main(argv: list[str]) -> int:
    """Run the benchmark; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m pi_durable_tui.bench turn")
    parser.add_argument("--rounds", type=int, default=100, help="turns to time")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    report = asyncio.run(measure(max(1, args.rounds)))
    if args.json:
        sys.stdout.write(json.dumps(report) + "\n")
        return 0
    floor = report["floor"]
    sys.stdout.write(
        "One tool round (read of a small file, faux model answering at once) on SQLite\n"
        f"  Session one-entry commit:  p50 {floor['p50_ms']:.3f} ms  p99 {floor['p99_ms']:.3f} ms\n"
    )
    for name, label in (("turn", "fresh conversation"), ("turn_long", "long conversation")):
        row = report[name]
        sys.stdout.write(
            f"  {label:<19} p50 {row['p50_ms']:.3f} ms  p99 {row['p99_ms']:.3f} ms  "
            f"{row['commits']} commits  ratio {row['ratio']} (target <= 15)\n"
        )
    return 0
