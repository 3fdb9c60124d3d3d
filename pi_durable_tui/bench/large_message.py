"""Benchmark: large streamed messages through print mode, at two sizes, text and tool argument.

``python -m pi_durable_tui.bench large-message [--sizes 1,4] [--repeat N] [--json]``

Each workload is one print-mode run (``run_headless``, what ``pidurable -p``
does after startup) of a new session on SQLite with a faux model: ``text`` is
an answer of N MB streamed in the faux provider's usual 12-20 character
deltas; ``tool`` is a ``write`` call whose ``content`` argument is N MB (the
tool writes the file, then the model answers ``done``). Partials are committed
every 100 ms as in a real run. A small run of each kind comes first, so the
process's one-time costs (imports, loading the tokenizer) are not counted in
either size.

Reported per workload: wall seconds (the best of ``--repeat`` runs, default 2:
a shared machine's load only ever adds time) and MB/s; then the ratios that say whether
cost grows linearly (issue 12): ``text`` and ``tool`` at the largest size over
the smallest (target at most 5 for 4 MB over 1 MB) and ``tool`` over ``text``
at each size (target at most 2). The faux model declares a context window of
ten million tokens, so compaction (a different cost) never starts.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pi_durable_tui.app import AgentApp, AppOptions, run_headless
from pi_durable_tui.bench._agent_kit import pidurable_home

MB = 1_000_000
KINDS = ("text", "tool")
WARM_UP_BYTES = 20_000
SIZE_TARGET = 5.0
"""The most 4 MB may cost over 1 MB (scaled by size for other pairs)."""
TOOL_TARGET = 2.0
"""The most a tool argument may cost over a text answer of the same size."""
MODEL = {"id": "big", "context_window": 10_000_000, "max_tokens": 10_000_000}


def payload(size: int) -> str:
    """``size`` characters of prose-like ASCII text with newlines."""
    line = "durable commit stream agent token screen kill resume\n"
    return (line * (size // len(line) + 1))[:size]


def script(kind: str, size: int) -> dict[str, Any]:
    """The faux script of one workload."""
    text = payload(size)
    if kind == "text":
        responses: list[dict[str, Any]] = [{"content": [{"type": "text", "text": text}]}]
    else:
        call = {
            "type": "tool_call",
            "name": "write",
            "arguments": {"path": "big.txt", "content": text},
        }
        responses = [{"content": [call]}, {"content": [{"type": "text", "text": "done"}]}]
    return {"models": [MODEL], "responses": responses}


async def _print_mode(directory: Path, kind: str, size: int) -> dict[str, Any]:
    project = directory / "project"
    project.mkdir()
    script_path = directory / "script.json"
    script_path.write_text(json.dumps(script(kind, size)), "utf-8")
    out, err = io.StringIO(), io.StringIO()
    with pidurable_home(directory / "home"):
        started = time.perf_counter()
        app = await AgentApp.open(
            AppOptions(cwd=str(project), model="faux/big", faux_script=str(script_path))
        )
        try:
            status = await run_headless(app, "go", out, err)
        finally:
            await app.close()
        seconds = time.perf_counter() - started
    expected = "done\n" if kind == "tool" else payload(size) + "\n"
    correct = status == 0 and out.getvalue() == expected
    if kind == "tool":
        correct = correct and (project / "big.txt").read_text("utf-8") == payload(size)
    return {"seconds": seconds, "correct": correct, "stderr": err.getvalue()[:200]}


async def _run(kind: str, size: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="pidurable-bench-") as name:
        return await _print_mode(Path(name), kind, size)


def measure(sizes_mb: list[float], repeat: int = 2) -> dict[str, Any]:
    """Run every workload ``repeat`` times; return the best of each, then the ratios."""
    for kind in KINDS:
        asyncio.run(_run(kind, WARM_UP_BYTES))
    report: dict[str, Any] = {}
    for size_mb in sizes_mb:
        for kind in KINDS:
            runs = [asyncio.run(_run(kind, int(size_mb * MB))) for _ in range(max(1, repeat))]
            result = min(runs, key=lambda run: float(run["seconds"]))
            result["correct"] = all(run["correct"] for run in runs)
            entry: dict[str, Any] = {
                "mb": size_mb,
                "seconds": round(result["seconds"], 3),
                "mb_per_s": round(size_mb / result["seconds"], 2),
            }
            if not result["correct"]:
                entry["wrong"] = result["stderr"] or "the answer or the written file differs"
            report[f"{kind}.{size_mb:g}mb"] = entry
    small, large = min(sizes_mb), max(sizes_mb)
    ratios: dict[str, Any] = {}
    if large > small:
        scale = large / small
        for kind in KINDS:
            ratio = (
                report[f"{kind}.{large:g}mb"]["seconds"] / report[f"{kind}.{small:g}mb"]["seconds"]
            )
            ratios[f"{kind}.{large:g}mb_over_{small:g}mb"] = {
                "ratio": round(ratio, 2),
                "target": round(SIZE_TARGET * scale / 4, 2),
                "linear": round(scale, 2),
            }
    for size_mb in sizes_mb:
        ratio = report[f"tool.{size_mb:g}mb"]["seconds"] / report[f"text.{size_mb:g}mb"]["seconds"]
        ratios[f"tool_over_text.{size_mb:g}mb"] = {"ratio": round(ratio, 2), "target": TOOL_TARGET}
    report["ratios"] = ratios
    return report


def parse_sizes(text: str) -> list[float]:
    """Parse ``--sizes`` (megabytes, comma-separated, each above zero)."""
    try:
        sizes = sorted({float(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes wants numbers like 1,4, got {text!r}") from None
    if not sizes or sizes[0] <= 0:
        raise argparse.ArgumentTypeError(f"--sizes wants sizes above zero, got {text!r}")
    return sizes


def main(argv: list[str]) -> int:
    """Run the benchmark; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m pi_durable_tui.bench large-message")
    parser.add_argument("--sizes", type=parse_sizes, default=[1.0, 4.0], help="MB, like 1,4")
    parser.add_argument("--repeat", type=int, default=2, help="runs per workload; the best counts")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    report = measure(args.sizes, args.repeat)
    if args.json:
        sys.stdout.write(json.dumps(report) + "\n")
        return 0
    lines = ["Large streamed messages through print mode (faux model, SQLite)"]
    for key, entry in report.items():
        if key == "ratios":
            continue
        wrong = f"  WRONG: {entry['wrong']}" if "wrong" in entry else ""
        lines.append(f"  {key:<14} {entry['seconds']:8.3f} s  {entry['mb_per_s']:7.2f} MB/s{wrong}")
    for key, entry in report["ratios"].items():
        linear = f", linear {entry['linear']}" if "linear" in entry else ""
        lines.append(
            f"  {key:<26} ratio {entry['ratio']:5.2f} (target <= {entry['target']}{linear})"
        )
    sys.stdout.write("\n".join(lines) + "\n")
    return 0
