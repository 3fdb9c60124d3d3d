"""Benchmark: the coding tools' text engines against stdlib floors in the same run.

``python -m pi_durable_tui.bench tool-engines [--json] [--repeat N] [--lines N]
[--megabytes N]``. Every workload is timed next to a floor computed in the same
process on the same input, and reported as the median of ``--repeat`` runs
(``p50_ms``) with its ratio to the floor's median:

- ``diff_few_edits``: the display diff and the unified patch of a ``--lines``
  file (default 10,000) after 5 one-line edits spread through it, against
  ``difflib.unified_diff`` of the same pair (what a Python tool would use).
- ``diff_rewrite``: the same file with every line changed, half of the lines
  kept in a new order, against ``difflib.unified_diff``.
- ``edit_few_edits``: ``apply_edits`` with those 5 edits against 5
  ``str.replace`` calls (no uniqueness or overlap checks).
- ``read_big_file``: the window ``read`` shows of a ``--megabytes`` file (default
  64) fed in 64 KiB chunks with no known total (so every line is counted),
  against counting its newlines with ``bytes.count``.

Figures are printed, never asserted (DESIGN.md section 6).
"""

from __future__ import annotations

import argparse
import difflib
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from pi_durable_tui.tools import (
    EditSpec,
    RawChunks,
    apply_edits,
    display_diff,
    select_lines,
    unified_patch,
)

CHUNK = 64 * 1024


def _median_ms(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _row(ours: Callable[[], object], floor: Callable[[], object], repeat: int) -> dict[str, Any]:
    floor_ms = _median_ms(floor, repeat)
    ours_ms = _median_ms(ours, repeat)
    return {
        "p50_ms": round(ours_ms, 4),
        "floor_p50_ms": round(floor_ms, 4),
        "ratio": round(ours_ms / floor_ms, 2) if floor_ms else None,
    }


def _source(lines: int) -> str:
    body = "def handler_{0}(request):\n    return respond(request, {0})\n\n"
    return "".join(body.format(n) for n in range(lines // 3))


def _difflib_patch(old: str, new: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), n=4))


def measure(lines: int, megabytes: int, repeat: int) -> dict[str, dict[str, Any]]:
    """Run every workload and return its figures, keyed by workload name.

    Args:
        lines: Lines in the edited file.
        megabytes: Size of the file read in chunks, in MiB.
        repeat: Runs per measurement (the median counts).

    Returns:
        ``{workload: {"p50_ms", "floor_p50_ms", "ratio"}}``.
    """
    old = _source(lines)
    count = old.count("\n") // 3
    picks = [count * k // 5 + 1 for k in range(5)]
    edits = [
        EditSpec(f"respond(request, {n})\n", f"respond(request, {n}, fast=True)\n") for n in picks
    ]
    new = apply_edits("bench.py", old, edits).content
    rewritten = "".join(
        f"async def handler_{n}(request):\n    return respond(request, {n})\n\n"
        for n in sorted(range(count), key=lambda n: (n % 2, n))
    )

    def ours_diff(new_text: str) -> Callable[[], object]:
        return lambda: (display_diff(old, new_text), unified_patch("bench.py", old, new_text))

    def replace_all() -> str:
        text = old
        for edit in edits:
            text = text.replace(edit.old_text, edit.new_text)
        return text

    block = (b"x" * 79 + b"\n") * (CHUNK // 80)

    def chunks() -> Iterator[bytes]:
        for _ in range(megabytes * 16):
            yield block

    return {
        "diff_few_edits": _row(ours_diff(new), lambda: _difflib_patch(old, new), repeat),
        "diff_rewrite": _row(ours_diff(rewritten), lambda: _difflib_patch(old, rewritten), repeat),
        "edit_few_edits": _row(lambda: apply_edits("bench.py", old, edits), replace_all, repeat),
        "read_big_file": _row(
            lambda: select_lines(RawChunks(chunks()), display_path="big.txt"),
            lambda: sum(chunk.count(b"\n") for chunk in chunks()),
            repeat,
        ),
    }


def main(argv: list[str]) -> int:
    """Run the benchmark.

    Args:
        argv: Command-line arguments after ``tool-engines``.

    Returns:
        The exit status (0).
    """
    parser = argparse.ArgumentParser(prog="python -m pi_durable_tui.bench tool-engines")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement (median)")
    parser.add_argument("--lines", type=int, default=10_000, help="lines in the edited file")
    parser.add_argument("--megabytes", type=int, default=64, help="MiB in the file read")
    args = parser.parse_args(argv)
    results = measure(args.lines, args.megabytes, args.repeat)
    if args.json:
        sys.stdout.write(json.dumps(results) + "\n")
        return 0
    sys.stdout.write(
        f"tool engines, median of {args.repeat}; {args.lines}-line file, "
        f"{args.megabytes} MiB read\n{'workload':<18}{'p50 ms':>10}{'floor ms':>10}{'ratio':>8}\n"
    )
    for name, row in results.items():
        sys.stdout.write(
            f"{name:<18}{row['p50_ms']:>10.2f}{row['floor_p50_ms']:>10.2f}{row['ratio']:>8.2f}\n"
        )
    return 0
