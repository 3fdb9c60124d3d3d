"""Memory of the storage backends at a scale, each measured in a child process of its own.

``measure_memory(backends, entries)`` starts one child per backend, all at once
(nothing is timed meanwhile), and each child runs
``python -m pi_durable_tui.bench.storage._memory BACKEND ENTRIES [PARENT]``: it
imports everything, starts ``tracemalloc``, opens a store in a temporary
directory (under ``PARENT`` when given), seeds
it to ``ENTRIES`` entries (with tasks and documents at a fifth each, in batches
of 100), and, while still holding the store open, prints one JSON line:

- ``rss_held_mib``: resident memory after seeding minus before opening (after a
  full garbage collection), less what ``tracemalloc`` itself grew by. It counts
  what Python allocates and what C code does (SQLite's page cache,
  aiosqlite's thread), so it is the figure a user sees;
- ``tracemalloc_held_mib``: Python allocations alive while holding the store;
- ``tracemalloc_peak_mib``: the most Python memory allocated at once while seeding.

A child of its own gives each backend a clean heap: in one process, memory freed
by one backend would be reused by the next and hide its growth.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

from pi_durable_tui.bench.storage._seed import seed_scale_store
from pi_durable_tui.storage.jsonl import JsonlStorage
from pi_durable_tui.storage.memory import MemoryStorage
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.sqlite import SqliteStorage

MIB = 1024 * 1024
BACKENDS = ("memory", "sqlite", "jsonl")


def resident_bytes() -> int:
    """Return this process's resident set size in bytes (0 where ``/proc`` is missing)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            pages = int(statm.read().split()[1])
    except OSError:
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


async def _open(backend: str, directory: Path) -> Storage:
    if backend == "memory":
        return MemoryStorage()
    if backend == "sqlite":
        return await SqliteStorage.open(directory / "store.sqlite")
    if backend == "jsonl":
        return await JsonlStorage.open(directory / "store")
    raise ValueError(f"unknown backend {backend!r}")


async def measure_here(backend: str, entries: int, parent: str | None = None) -> dict[str, float]:
    """Seed one backend in this process and measure its memory (see the module docstring).

    Args:
        backend: ``memory``, ``sqlite`` or ``jsonl``.
        entries: Entries to seed.
        parent: Where to make the temporary directory (the system's default if ``None``).

    Returns:
        The figures in MiB, and ``entries``.
    """
    with tempfile.TemporaryDirectory(prefix="pidurable-bench-", dir=parent) as name:
        gc.collect()
        own_before = tracemalloc.get_tracemalloc_memory()
        resident_before = resident_bytes()
        tracemalloc.start()
        storage = await _open(backend, Path(name))
        try:
            await seed_scale_store(storage, entries)
            gc.collect()
            held, peak = tracemalloc.get_traced_memory()
            own = tracemalloc.get_tracemalloc_memory() - own_before
            resident = resident_bytes() - resident_before - own
        finally:
            tracemalloc.stop()
            await storage.close()
    return {
        "rss_held_mib": resident / MIB,
        "tracemalloc_held_mib": held / MIB,
        "tracemalloc_peak_mib": peak / MIB,
        "entries": entries,
    }


async def _child(backend: str, entries: int, parent: str) -> dict[str, Any]:
    # The child must import this very checkout, installed or not.
    checkout = str(Path(__file__).resolve().parents[3])
    path = os.pathsep.join(p for p in (checkout, os.environ.get("PYTHONPATH")) if p)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pi_durable_tui.bench.storage._memory",
        backend,
        str(entries),
        parent,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": path},
    )
    out, err = await process.communicate()
    if process.returncode != 0:
        tail = err.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        return {"wrong": f"memory child for {backend} failed: {tail[0]}"}
    figures: dict[str, Any] = json.loads(out)
    return figures


async def measure_memory(
    backends: list[str], entries: int, parent: str
) -> dict[str, dict[str, Any]]:
    """Measure every backend at once, one child process each.

    Args:
        backends: Backend names among ``BACKENDS``.
        entries: Entries to seed.
        parent: Where the children make their temporary directories.

    Returns:
        Each backend's figures (or ``{"wrong": message}`` if its child failed).
    """
    results = await asyncio.gather(*(_child(backend, entries, parent) for backend in backends))
    return dict(zip(backends, results, strict=True))


def main(argv: list[str]) -> int:
    """Measure one backend and print its figures as one JSON line.

    Args:
        argv: ``[BACKEND, ENTRIES]`` or ``[BACKEND, ENTRIES, PARENT]``.

    Returns:
        The exit status (0).
    """
    parent = argv[2] if len(argv) > 2 else None
    figures = asyncio.run(measure_here(argv[0], int(argv[1]), parent))
    sys.stdout.write(json.dumps(figures) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
