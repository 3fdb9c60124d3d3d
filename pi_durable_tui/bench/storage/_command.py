"""The storage benchmark's command: what it measures, its options, and how to read it.

``python -m pi_durable_tui.bench storage [--quick] [--json] [--dir PATH]
[--database URL | --no-postgres | --only-postgres]`` (also ``python -m
pi_durable_tui.bench.storage``)

What it measures, through the public ``Storage`` protocol only, for each backend
(``memory``; ``sqlite``: ``synchronous=NORMAL``; ``jsonl``: ``fsync=False``; and,
for writes only, ``sqlite_full`` and ``jsonl_fsync``), in temporary directories
under ``--dir`` (default: the system's temporary directory, which should be an
ordinary disk, not tmpfs; the header says which filesystem it is):

- writes (``commit_1_entry``, ``commit_100_entries``, ``commit_mixed``: an
  entry, a new task, a new submission and a document delta in one batch), on a
  store seeded like the reference's timing scale (1,000 entries, 300 tasks, 300
  documents, delta-tail and history documents, a fork chain 8 deep);
- reads on that store (``read_entry``, ``scan_entries_100``,
  ``scan_tasks_filtered``, ``find_document``, ``doc_tail_<n>_current`` and
  ``_historical`` for tails of 0/16/128/1,024 deltas, ``doc_history_ancient``
  and ``_recent`` around a newer base, ``fork_scan_100``,
  ``fork_head_lookup``), each checking its answer;
- ``sustained_commit_1_entry`` (SQLite only): 5,000 one-entry commits on a
  growing store, with p50, p99, ``p99_over_p50`` and ``wal_frames_per_commit``,
  beside raw sqlite3 and aiosqlite doing the same (``_sustained``);
- ``reopen_<scale>`` at 1k, 10k and 100k entries (tasks and documents at a
  fifth each, seeded in batches of 100): a cold open of the existing files by
  a new backend object in this process, plus ``conversation(1)``; closing is
  not timed, and the sizes run back to back; for SQLite, alternating with the
  floor ``baseline.aiosqlite.open_and_read_<scale>`` (aiosqlite opens the same
  file and reads that row);
- ``commit_1_entry_at_<scale>``: a one-entry commit on stores seeded to 1k and
  to the largest scale, interleaved;
- ``memory_10k``: memory while seeding and holding 10k entries, one child
  process per backend (``_memory``);
- ``session_commit_1_entry``: a one-entry commit through ``Session.commit``
  (mutation line, storage, publication), on a fresh store of each backend;
- the PostgreSQL rows (``_postgres``, which says what each means): one-entry
  commits beside raw asyncpg, reopen at the smallest and largest scale, and a
  tool round on SQLite and on PostgreSQL with the commits each makes, on the
  server at ``--database URL`` or a throwaway one the run starts (``fsync``
  on); ``--no-postgres`` leaves them out.

Baselines, in the same run and interleaved with the commits they divide:
``baseline.raw_sqlite3.*`` (sqlite3 on the calling thread, WAL, one transaction
per commit: the physical floor) and ``baseline.aiosqlite.*`` (the same
transaction as three awaited statements: the floor for keeping SQLite off the
event loop), for 1 and 100 rows, with ``synchronous=NORMAL`` and (``_full``)
``FULL``.

Reading the output: every timed figure is a per-call latency in milliseconds,
``p50_ms`` and ``p99_ms`` over ``n`` timed calls (warm-up excluded; slow reads
get fewer calls, see ``_timing``). ``ratio`` is a commit's p50 divided by
the aiosqlite floor's p50 with the same row count (one row for the one-entry,
mixed and Session commits; the FULL floors for ``sqlite_full`` and
``jsonl_fsync``), ``ratio_raw`` the same against raw sqlite3; ``ratio_vs_1k``
divides a reopen or a commit at scale by the same workload at the smallest
scale, and a reopen's ``ratio`` divides it by the open-and-read floor at its
scale. Memory entries carry ``rss_held_mib``, ``tracemalloc_held_mib`` and
``tracemalloc_peak_mib`` instead. An entry whose answers were wrong carries
``wrong`` (the first bad answer) and the table lists it. The issue's targets
are printed with ``pass`` or ``MISS`` and recorded in the entries they judge
(``"targets": {metric: {"limit", "pass"}}``), never asserted. ``--json`` prints
one object whose keys are the workloads (``"sqlite.commit_1_entry"``);
progress goes to stderr. The hidden ``--smoke`` flag runs a tiny version for
the test suite (200 entries, a handful of calls; key labels follow its scales).

How long, on 2 cores: the full run takes 1.5 to 2.5 minutes (seeding the 100k
stores and reopening JSONL at 100k take most of it; on a busy disk, removing the
JSONL store's 20,000 files at the end has taken another 30 s); ``--quick``
(fewer calls, no 100k scale, so the scale targets compare 10k with 1k) 15 to 25
seconds; ``--smoke`` about 3 seconds. Figures are never asserted by tests
(DESIGN.md section 6).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
import threading
import time

from pi_durable_tui.bench.storage._report import add_ratios, evaluate_targets, render
from pi_durable_tui.bench.storage._run import PROFILES, label, run


def filesystem(path: str) -> str:
    """Return the type of the filesystem holding ``path`` (``unknown`` without /proc)."""
    target = os.path.realpath(path)
    best, kind = "", "unknown"
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            for line in mounts:
                fields = line.split()
                point = fields[1]
                inside = target == point or target.startswith(point.rstrip("/") + "/")
                if inside and len(point) >= len(best):
                    best, kind = point, fields[2]
    except OSError:
        pass
    return kind


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    """Run the benchmark and print a table, or one JSON object with ``--json``.

    Args:
        argv: Command-line arguments after ``storage``.

    Returns:
        The exit status (0).
    """
    parser = argparse.ArgumentParser(prog="python -m pi_durable_tui.bench storage")
    parser.add_argument("--quick", action="store_true", help="fewer calls, no 100k scale")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="where to make the stores")
    parser.add_argument(
        "--database", default=None, help="a PostgreSQL URL (default: start a throwaway server)"
    )
    parser.add_argument("--no-postgres", action="store_true", help="leave out the PostgreSQL rows")
    parser.add_argument(
        "--only-postgres", action="store_true", help="run the PostgreSQL rows alone"
    )
    parser.add_argument("--smoke", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    profile = PROFILES["smoke" if args.smoke else "quick" if args.quick else "full"]
    fs = filesystem(args.dir)

    started = time.perf_counter()

    def say(line: str) -> None:
        sys.stderr.write(f"[storage bench {time.perf_counter() - started:6.1f} s] {line}\n")
        sys.stderr.flush()

    load = os.getloadavg()[0]
    say(f"{profile.name} run in {args.dir} ({fs}); load average {load:.1f} at start")
    if fs == "tmpfs":
        say(f"warning: {args.dir} is tmpfs; pass --dir on an ordinary disk for real figures")
    # SIGTERM ends the run as Ctrl-C does: the stores and any server it started are
    # removed on the way out (the default action would leave a PostgreSQL running).
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _stop) if main_thread else None
    try:
        results = asyncio.run(
            run(
                profile,
                args.dir,
                say,
                postgres=not args.no_postgres,
                database=args.database,
                only_postgres=args.only_postgres,
            )
        )
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
    elapsed = time.perf_counter() - started
    add_ratios(results, label(profile.scales[0]))
    targets = evaluate_targets(results, label(profile.scales[-1]), label(profile.scales[0]))
    if args.only_postgres:  # the other targets' workloads were not asked for
        targets = [target for target in targets if target.key in results]
    say(f"done in {elapsed:.1f} s; load average {os.getloadavg()[0]:.1f} at the end")
    if args.json:
        sys.stdout.write(json.dumps(results) + "\n")
        return 0
    header = (
        f"{profile.name} run in {args.dir} ({fs}), {elapsed:.1f} s, load average "
        f"{load:.1f} at start and {os.getloadavg()[0]:.1f} at the end (other processes "
        "inflate p99 first)"
    )
    sys.stdout.write(render(results, targets, header))
    return 0
