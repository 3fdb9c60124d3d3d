"""Benchmark: the tool output buffer against counting the same bytes, in the same process.

``python -m pi_durable_tui.bench output [--mib N] [--chunk KIB] [--repeat N] [--json]``

It generates ``--mib`` MiB (default 1024: 1 GiB) of command-like output lines
(numbered, 20 to 140 bytes, a few with non-ASCII text), cut into ``--chunk`` KiB
chunks (default 256) at arbitrary byte positions as a pipe delivers them, and
pushes them, for each workload and in the same process:

- ``baseline``: a loop that only adds up each chunk's length and newline count
  (the least any consumer of the stream does);
- ``head`` and ``tail``: ``ToolOutputBuffer`` with the default limits (50 KiB,
  2,000 lines) and that retention, reading ``changes_since`` whenever the R103
  ``ProgressThrottle`` lets a progress commit start (the commit itself takes no
  time here), then ``finish()`` and the final text.

The chunks are generated once before timing (a pool of distinct chunks, cycled)
and workloads are interleaved over ``--repeat`` runs; the best run counts.
Reported per workload: ``seconds``, ``mib_per_s``, ``ratio`` (seconds divided
by the baseline's) and, from one more run under ``tracemalloc``,
``peak_kib``: the most memory the buffer allocated at once (the chunks
themselves are not counted: they exist before the run); ``progress_reads``
counts the throttled reads of the best run. A buffer whose counts
disagree with the baseline's carries ``wrong``. ``--json`` prints one object
keyed by workload. Figures are printed, never asserted (DESIGN.md section 6).
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

from pi_durable_tui.harness import OutputLimits, ProgressThrottle, ToolOutputBuffer

WORDS = ("compiling", "module", "ok", "tests/unit", "warning:", "passed", "🙂", "Größe", "--")
POOL = 16


def generate_chunks(chunk_size: int, count: int, seed: int = 7) -> list[bytes]:
    """Return ``count`` distinct chunks of ``chunk_size`` bytes of numbered output lines.

    Args:
        chunk_size: Bytes per chunk.
        count: How many chunks.
        seed: Seed of the line generator.

    Returns:
        The chunks, each cut at an arbitrary byte (so lines and characters span them).
    """
    rng = random.Random(seed)
    lines: list[bytes] = []
    size = 0
    number = itertools.count()
    while size < chunk_size * count:
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 18)))
        line = f"{next(number):09d} {text}\n".encode()
        lines.append(line)
        size += len(line)
    data = b"".join(lines)
    return [data[i * chunk_size : (i + 1) * chunk_size] for i in range(count)]


def _stream(pool: list[bytes], chunks: int) -> Iterator[bytes]:
    return itertools.islice(itertools.cycle(pool), chunks)


def _baseline(pool: list[bytes], chunks: int) -> tuple[int, int]:
    total = 0
    newlines = 0
    last = b"\n"
    for chunk in _stream(pool, chunks):
        total += len(chunk)
        newlines += chunk.count(b"\n")
        last = chunk
    # An unterminated final line counts as a line, as the buffer counts it.
    return total, newlines + (not last.endswith(b"\n"))


def _buffered(pool: list[bytes], chunks: int, limits: OutputLimits) -> tuple[ToolOutputBuffer, int]:
    buffer = ToolOutputBuffer(limits)
    throttle = ProgressThrottle()
    committed = ""
    commits = 0
    for chunk in _stream(pool, chunks):
        buffer.write(chunk)
        now = time.perf_counter() * 1000.0
        due = throttle.changed(now)
        if due is not None and due <= now:
            # An instant progress commit: what the committer reads and would write.
            throttle.begin(now)
            change = buffer.changes_since(committed)
            committed = change.window
            throttle.end(now, len(change.text.encode()))
            commits += 1
    buffer.finish()
    _ = buffer.text
    return buffer, commits


def _timed(run: Any) -> tuple[float, Any]:
    began = time.perf_counter()
    result = run()
    return time.perf_counter() - began, result


def measure(mib: int, chunk_kib: int, repeat: int) -> dict[str, dict[str, Any]]:
    """Run every workload and return the report keyed by workload.

    Args:
        mib: MiB of output per run.
        chunk_kib: KiB per chunk.
        repeat: Runs per workload (the best counts).

    Returns:
        ``{"baseline": {...}, "head": {...}, "tail": {...}}``.
    """
    chunk_size = chunk_kib * 1024
    chunks = max(1, mib * 1024 // chunk_kib)
    pool = generate_chunks(chunk_size, min(POOL, chunks))
    retentions = {"head": OutputLimits(), "tail": OutputLimits(retain="tail")}
    best = {"baseline": float("inf"), **{name: float("inf") for name in retentions}}
    counts: tuple[int, int] = (0, 0)
    buffers: dict[str, tuple[ToolOutputBuffer, int]] = {}
    for _ in range(repeat):
        seconds, counts = _timed(lambda: _baseline(pool, chunks))
        best["baseline"] = min(best["baseline"], seconds)
        for name, limits in retentions.items():
            seconds, result = _timed(lambda limits=limits: _buffered(pool, chunks, limits))
            if seconds < best[name]:
                best[name], buffers[name] = seconds, result
    total, lines = counts
    mebibytes = total / (1024 * 1024)
    report: dict[str, dict[str, Any]] = {
        "baseline": {
            "bytes": total,
            "lines": lines,
            "seconds": best["baseline"],
            "mib_per_s": mebibytes / best["baseline"],
        }
    }
    for name, limits in retentions.items():
        tracemalloc.start()
        try:
            _buffered(pool, chunks, limits)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        buffer, reads = buffers[name]
        entry: dict[str, Any] = {
            "seconds": best[name],
            "mib_per_s": mebibytes / best[name],
            "ratio": best[name] / best["baseline"],
            "peak_kib": peak / 1024,
            "kept_bytes": total - buffer.dropped_bytes,
            "dropped_lines": buffer.dropped_lines,
            "progress_reads": reads,
        }
        if (buffer.total_bytes, buffer.total_lines) != (total, lines):
            entry["wrong"] = (
                f"counted {buffer.total_bytes} bytes and {buffer.total_lines} lines, "
                f"expected {total} and {lines}"
            )
        report[name] = entry
    return report


def main(argv: list[str]) -> int:
    """Run the benchmark.

    Args:
        argv: Command-line arguments after ``output``.

    Returns:
        The exit status (0).
    """
    parser = argparse.ArgumentParser(prog="python -m pi_durable_tui.bench output")
    parser.add_argument("--mib", type=int, default=1024, help="MiB of output per run")
    parser.add_argument("--chunk", type=int, default=256, help="KiB per chunk")
    parser.add_argument("--repeat", type=int, default=5, help="runs per workload (best counts)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.mib < 1 or args.chunk < 1 or args.repeat < 1:
        parser.error("--mib, --chunk and --repeat must be at least 1")
    report = measure(args.mib, args.chunk, args.repeat)
    if args.json:
        sys.stdout.write(json.dumps(report) + "\n")
        return 0
    sys.stdout.write(
        f"Tool output buffer, {args.mib} MiB in {args.chunk} KiB chunks, best of "
        f"{args.repeat}, against counting bytes and newlines of the same chunks\n"
        f"{'workload':<10}{'seconds':>9}{'MiB/s':>9}{'x baseline':>12}{'peak KiB':>10}\n"
    )
    for name, row in report.items():
        ratio = f"{row['ratio']:.2f}" if "ratio" in row else "1"
        peak = f"{row['peak_kib']:.0f}" if "peak_kib" in row else "-"
        sys.stdout.write(
            f"{name:<10}{row['seconds']:>9.3f}{row['mib_per_s']:>9.0f}{ratio:>12}{peak:>10}"
            + (f"  WRONG: {row['wrong']}" if "wrong" in row else "")
            + "\n"
        )
    return 0
