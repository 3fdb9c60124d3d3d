"""Ratios, targets and the printed table of the storage benchmark.

``add_ratios`` gives every commit workload ``ratio`` (p50 over the aiosqlite
floor's p50 with the same row count and ``synchronous`` level) and
``ratio_raw`` (over raw sqlite3's), every reopen and commit at scale
``ratio_vs_1k`` (p50 over the same workload's p50 at the smallest scale), every
reopen ``ratio`` (p50 over the aiosqlite open-and-read floor's at that scale),
and every sustained workload ``p99_over_p50``.
``evaluate_targets`` marks the issue's targets in the entries they judge
(``"targets": {metric: {"limit", "pass"}}``) and returns them for printing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pi_durable_tui.bench.storage._postgres import COMMIT
from pi_durable_tui.bench.storage._sustained import FLOOR, SUSTAINED
from pi_durable_tui.bench.storage._workloads import DURABLE, PRIMARY

Results = dict[str, dict[str, Any]]
_DURABLE_NAMES = {backend.name for backend in DURABLE}


def _rows(workload: str) -> int | None:
    """Return the floor's row count a commit workload divides by, or ``None``."""
    if workload == "commit_100_entries":
        return 100
    one_row = ("commit_1_entry", "commit_mixed", "session_commit_1_entry")
    if workload in one_row or workload.startswith("commit_1_entry_at_"):
        return 1
    return None


def add_ratios(results: Results, smallest: str) -> None:
    """Add ``ratio``, ``ratio_raw`` and ``ratio_vs_1k`` where they apply (see the module).

    Args:
        results: Figures by workload key; changed in place.
        smallest: The label of the smallest scale (``1k``).
    """
    for key, entry in results.items():
        if "p50_ms" not in entry:
            continue
        if ".sustained_" in key:
            entry["p99_over_p50"] = entry["p99_ms"] / entry["p50_ms"]
        if key.startswith("baseline."):
            continue
        backend, workload = key.split(".", 1)
        if backend == "postgres":
            continue  # its ratios divide by asyncpg's floors (``_postgres``)
        rows = _rows(workload)
        if rows is not None:
            suffix = "_full" if backend in _DURABLE_NAMES else ""
            name = "commit_1_row" if rows == 1 else f"commit_{rows}_rows"
            aio = results.get(f"baseline.aiosqlite{suffix}.{name}")
            raw = results.get(f"baseline.raw_sqlite3{suffix}.{name}")
            if aio is not None and raw is not None:
                entry["ratio"] = entry["p50_ms"] / aio["p50_ms"]
                entry["ratio_raw"] = entry["p50_ms"] / raw["p50_ms"]
        for prefix in ("reopen_", "commit_1_entry_at_"):
            if workload.startswith(prefix):
                base = results.get(f"{backend}.{prefix}{smallest}")
                if base is not None:
                    entry["ratio_vs_1k"] = entry["p50_ms"] / base["p50_ms"]
        if workload.startswith("reopen_"):
            floor = results.get(FLOOR.format(scale=workload.removeprefix("reopen_")))
            if floor is not None:
                entry["ratio"] = entry["p50_ms"] / floor["p50_ms"]


@dataclass(frozen=True, slots=True)
class Target:
    """One of the issue's targets and how the run did against it."""

    text: str
    key: str
    metric: str
    limit: float
    value: float | None
    """``None`` when the workload did not run."""

    @property
    def passed(self) -> bool:
        """Whether the value is within the limit."""
        return self.value is not None and self.value <= self.limit


def evaluate_targets(results: Results, largest: str, smallest: str) -> list[Target]:
    """Judge the issue's targets and mark them in the entries they concern.

    Args:
        results: Figures with ratios; changed in place.
        largest: The label of the largest scale (``100k``, or ``10k`` with ``--quick``).
        smallest: The label of the smallest scale (``1k``).

    Returns:
        The targets in printing order.
    """
    wanted = [
        (
            "SqliteStorage one-entry commit, p50 vs aiosqlite floor",
            "sqlite.commit_1_entry",
            "ratio",
            1.5,
        ),
        (
            "Session one-entry commit on SQLite, p50 vs aiosqlite floor",
            "sqlite.session_commit_1_entry",
            "ratio",
            3.0,
        ),
        (
            "SqliteStorage sustained one-entry commits, p99 vs their p50",
            SUSTAINED,
            "p99_over_p50",
            3.0,
        ),
        (
            f"SqliteStorage reopen at {largest}, p50 vs aiosqlite open-and-read floor",
            f"sqlite.reopen_{largest}",
            "ratio",
            2.0,
        ),
    ]
    for backend in PRIMARY:
        wanted.append(
            (
                f"{backend.name} one-entry commit at {largest} vs at {smallest}",
                f"{backend.name}.commit_1_entry_at_{largest}",
                "ratio_vs_1k",
                1.2,
            )
        )
    for backend in PRIMARY:
        if backend.persistent:
            wanted.append(
                (
                    f"{backend.name} reopen at {largest} vs at {smallest}",
                    f"{backend.name}.reopen_{largest}",
                    "ratio_vs_1k",
                    2.0,
                )
            )
    if COMMIT in results:
        wanted += [
            (
                "PostgresStorage one-entry commit, p50 vs raw asyncpg transaction",
                COMMIT,
                "ratio",
                1.5,
            ),
            (
                f"PostgresStorage reopen at {largest} vs at {smallest}",
                f"postgres.reopen_{largest}",
                "ratio_vs_1k",
                2.0,
            ),
            (
                "Tool round on PostgreSQL, commits vs on SQLite",
                "postgres.tool_round",
                "commits_vs_sqlite",
                1.0,
            ),
        ]
    targets = []
    for text, key, metric, limit in wanted:
        entry = results.get(key, {})
        value = entry.get(metric)
        target = Target(text, key, metric, limit, value)
        if key in results:
            entry.setdefault("targets", {})[metric] = {"limit": limit, "pass": target.passed}
        targets.append(target)
    return targets


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if value < 100 else f"{value:.0f}"


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


_HEADERS = {
    "p99_over_p50": "p99/p50",
    "wal_frames": "WAL frames",
    "ratio_insert": "vs INSERT",
    "commits_vs_sqlite": "vs SQLite",
}


def _table(results: Results, keys: list[str], columns: list[str]) -> list[str]:
    headers = [_HEADERS.get(column, column) for column in columns]
    lines = [f"  {'workload':<44}" + "".join(f"{header:>12}" for header in headers)]
    for key in keys:
        entry = results[key]
        cells = []
        for column in columns:
            if column == "wal_frames":
                cells.append(f"{entry['wal_frames_per_commit']:.2f}")
                continue
            value = entry.get(column)
            if column == "commits":
                cells.append("-" if value is None else f"{value:.1f}")
                continue
            ratio = column.startswith(("ratio", "p99_over", "commits_vs"))
            cells.append(_x(value) if ratio else _ms(value))
        lines.append(f"  {key:<44}" + "".join(f"{cell:>12}" for cell in cells))
    return lines


def render(results: Results, targets: list[Target], header: str) -> str:
    """Return the readable report: one table per kind of workload, then the targets.

    Args:
        results: Figures with ratios and targets.
        targets: The judged targets.
        header: The first line (mode, directory, duration).

    Returns:
        The text to print.
    """
    postgres = [key for key in results if ".asyncpg." in key or key.split(".")[0] == "postgres"]
    postgres += [key for key in results if key.endswith(".tool_round") and key not in postgres]
    timed = [key for key in results if "p50_ms" in results[key] and key not in postgres]
    sustained = [key for key in timed if ".sustained_" in key]
    scale = [key for key in timed if "ratio_vs_1k" in results[key] or ".open_and_read_" in key]
    commits = [key for key in timed if "ratio" in results[key] or key.startswith("baseline.")]
    commits = [key for key in commits if key not in scale and key not in sustained]
    reads = [key for key in timed if key not in commits and key not in scale + sustained]
    memory = [key for key in results if "tracemalloc_peak_mib" in results[key]]
    sections = [
        (
            "Commits, ms per call (ratio: p50 / aiosqlite floor; ratio_raw: / raw sqlite3)",
            commits,
            ["p50_ms", "p99_ms", "ratio", "ratio_raw"],
        ),
        (
            "Sustained one-entry commits on growing SQLite stores, ms (WAL frames per commit "
            "counted with checkpoints off)",
            sustained,
            ["p50_ms", "p99_ms", "p99_over_p50", "wal_frames"],
        ),
        ("Reads, ms per call", reads, ["p50_ms", "p99_ms"]),
        (
            "Reopen and commits at scale, ms (ratio_vs_1k: p50 / the smallest scale's; a "
            "reopen's ratio: p50 / aiosqlite open-and-read at that scale)",
            scale,
            ["p50_ms", "p99_ms", "ratio_vs_1k", "ratio"],
        ),
    ]
    if postgres:
        sections.append(
            (
                "PostgreSQL, ms (ratio: p50 / raw asyncpg transaction, or / connect-and-read for "
                "a reopen; ratio_insert: / one autocommit INSERT; a tool round's commits per "
                "round, and their ratio to SQLite's)",
                postgres,
                [
                    "p50_ms",
                    "p99_ms",
                    "ratio",
                    "ratio_insert",
                    "ratio_vs_1k",
                    "commits",
                    "commits_vs_sqlite",
                ],
            )
        )
    lines = [header]
    for title, keys, columns in sections:
        lines += ["", title, *_table(results, keys, columns)]
    lines += ["", "Memory, MiB (RSS held open after seeding; tracemalloc held and peak)"]
    for key in memory:
        entry = results[key]
        lines.append(
            f"  {key:<44}{entry['rss_held_mib']:>12.1f}"
            f"{entry['tracemalloc_held_mib']:>12.1f}{entry['tracemalloc_peak_mib']:>12.1f}"
        )
    wrong = [f"  {key}: {entry['wrong']}" for key, entry in results.items() if "wrong" in entry]
    if wrong:
        lines += ["", "WRONG ANSWERS", *wrong]
    lines += ["", "Targets (printed, never asserted)"]
    for target in targets:
        mark = "pass" if target.passed else "MISS"
        value = "not run" if target.value is None else f"{target.value:.2f}x"
        lines.append(f"  [{mark}] {target.text}: {value} (limit {target.limit:g}x)")
    return "\n".join(lines) + "\n"
