"""Benchmark: a gigabyte of ``bash`` output through the harness, against ``cat > /dev/null``.

``python -m pi_durable_tui.bench tool-output [--mib N] [--json] [--dir PATH]``

It writes a text file of ``--mib`` MiB (default 1024) and, for each retention,
runs a real harness on SQLite in a child process of its own (so its peak RSS is
its own) where the faux model calls ``bash`` with ``cat FILE``:

- ``tail``: the built-in ``bash`` tool (keeps the last 50 KiB / 2,000 lines; the
  environment skips output that cannot reach the kept tail, R105);
- ``head``: the same command through a ``bash`` variant that keeps the first
  50 KiB (every byte is delivered to the output buffer).

The floor is ``cat FILE > /dev/null`` in the same run. Reported per workload:
``wall_ms`` and ``ratio`` to the floor, ``mib_per_s``, ``peak_rss_mib`` (target
under 100 whatever the size), ``commits`` and ``commits_per_s`` during the call,
``store_kib`` (the SQLite files after the run) and ``dropped_bytes`` (what the
result says it dropped, checked against the file size). ``--json`` prints one
object keyed by workload. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pi_durable_tui.bench.exec_output import write_file

WORKLOADS = ("tail", "head")


async def _child(workload: str, path: str, directory: str) -> dict[str, Any]:
    from pi_durable_tui.ai import faux_response, faux_tool_call
    from pi_durable_tui.bench._agent_kit import open_agent
    from pi_durable_tui.harness import Input, OutputLimits, define_extension
    from pi_durable_tui.tools import create_bash_tool

    extension = None
    if workload == "head":
        tail_bash = create_bash_tool()
        head_bash = type(tail_bash)(**{**tail_bash.__dict__, "output": OutputLimits()})
        extension = define_extension("head-bash", tools=[head_bash])
    else:
        extension = define_extension("tail-bash", tools=[create_bash_tool()])
    responses = iter(
        [
            faux_response(faux_tool_call("bash", {"command": f"cat {shlex.quote(path)}"})),
            faux_response("done"),
        ]
    )
    kit = await open_agent(
        Path(directory), factory=lambda *_: next(responses), extensions=(extension,)
    )
    try:
        started = time.perf_counter()
        record = await (await kit.root.submit(Input("go"))).wait()
        wall = time.perf_counter() - started
        commits = kit.counter.commits
        entries = await kit.root.entries(limit=10)
        result = next(e for e in entries if e.kind == "pi.tool-result")
    finally:
        await kit.close()
    store = sum(f.stat().st_size for f in Path(directory).glob("session.sqlite*"))
    data = result.data if isinstance(result.data, dict) else {}
    diagnostics = data.get("diagnostics", [])
    return {
        "wall_ms": round(wall * 1000, 1),
        "status": record.status,
        "commits": commits,
        "commits_per_s": round(commits / wall, 1),
        "store_kib": round(store / 1024, 1),
        "diagnostics": [d.get("message") for d in diagnostics],
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def _run_child(workload: str, path: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="pidurable-bench-") as directory:
        output = subprocess.run(
            [
                sys.executable,
                "-m",
                "pi_durable_tui.bench.agent_tool_output",
                "--child",
                workload,
                path,
                directory,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
    row: dict[str, Any] = json.loads(output.stdout.strip().splitlines()[-1])
    return row


def measure(mib: int, directory: str | None) -> dict[str, Any]:
    """Run the floor and both workloads; return the report keyed by workload."""
    with tempfile.TemporaryDirectory(prefix="pidurable-bench-", dir=directory) as name:
        path = os.path.join(name, "output.txt")
        size, _lines = write_file(path, mib)
        started = time.perf_counter()
        subprocess.run(["bash", "-c", f"cat {shlex.quote(path)} > /dev/null"], check=True)
        floor = (time.perf_counter() - started) * 1000
        report: dict[str, Any] = {"floor": {"wall_ms": round(floor, 1), "mib": mib}}
        for workload in WORKLOADS:
            row = _run_child(workload, path)
            row["ratio"] = round(row["wall_ms"] / floor, 2)
            row["mib_per_s"] = round(size / (1 << 20) / (row["wall_ms"] / 1000), 1)
            report[workload] = row
    return report


def main(argv: list[str]) -> int:
    """Run the benchmark; returns the exit status."""
    if argv[:1] == ["--child"]:
        workload, path, directory = argv[1:4]
        sys.stdout.write(json.dumps(asyncio.run(_child(workload, path, directory))) + "\n")
        return 0
    parser = argparse.ArgumentParser(prog="python -m pi_durable_tui.bench tool-output")
    parser.add_argument("--mib", type=int, default=1024, help="MiB of output")
    parser.add_argument("--dir", help="where to write the file (default: the temp directory)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    report = measure(max(1, args.mib), args.dir)
    if args.json:
        sys.stdout.write(json.dumps(report) + "\n")
        return 0
    sys.stdout.write(
        f"{args.mib} MiB of output through bash in a harness, against cat > /dev/null "
        f"({report['floor']['wall_ms']:.0f} ms)\n"
    )
    for name in WORKLOADS:
        row = report[name]
        sys.stdout.write(
            f"  {name:<5} {row['wall_ms']:>9.0f} ms  ratio {row['ratio']:>6}  "
            f"{row['mib_per_s']:>7} MiB/s  peak RSS {row['peak_rss_mib']} MiB  "
            f"{row['commits']} commits ({row['commits_per_s']}/s)  store {row['store_kib']} KiB\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
