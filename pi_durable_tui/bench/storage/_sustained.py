"""Sustained commits and reopen beside their SQLite floors (the issue's two SQLite costs).

``sustained`` times ``count`` one-entry commits (5,000 in the full run) on
growing stores, interleaved in blocks so a slow moment of the machine falls on
all of them alike:

- ``sqlite.sustained_commit_1_entry``: ``SqliteStorage`` as the product opens
  it, checkpoints off the commit path (``storage.sqlite._checkpoints``);
- ``baseline.raw_sqlite3.sustained_commit_1_row``: raw sqlite3 on the calling
  thread with SQLite's own automatic checkpoint (the physical floor, with the
  checkpoints SQLite runs inside some commits);
- ``baseline.aiosqlite.sustained_commit_1_row``: the same through aiosqlite,
  one hop to its thread and back per statement. Its p99 is the scheduling noise
  of that hop on this machine, which no design that keeps SQLite off the event
  loop can go below.

Each reports ``p50_ms``, ``p99_ms``, ``p99_over_p50`` and
``wal_frames_per_commit``. Frames are counted in a separate pass of ``frames``
commits on a fresh store with every checkpoint off: the WAL then only grows, by
one frame (a page and its 24-byte header) per page a commit writes.

``reopen_with_floor`` times reopening a store (``<backend>.reopen_<scale>``)
and, for SQLite, beside it the floor of opening the same file with aiosqlite
and reading one row (``baseline.aiosqlite.open_and_read_<scale>``): connect,
``SELECT`` the root conversation, no pragma, no lock, no schema check. The two
alternate call by call, after their own warm-up.
"""

from __future__ import annotations

import gc
import time
from pathlib import Path

import aiosqlite

from pi_durable_tui.bench.storage._baselines import AioFloor, RawFloor
from pi_durable_tui.bench.storage._seed import ROOT, note, seed_root
from pi_durable_tui.bench.storage._timing import Candidate, Rounds, Samples, interleave
from pi_durable_tui.bench.storage._workloads import Backend, one_entry_candidate
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.sqlite import SqliteStorage
from pi_durable_tui.storage.writes import PutEntry

SUSTAINED = "sqlite.sustained_commit_1_entry"
RAW = "baseline.raw_sqlite3.sustained_commit_1_row"
AIO = "baseline.aiosqlite.sustained_commit_1_row"
FLOOR = "baseline.aiosqlite.open_and_read_{scale}"
_WAL_HEADER = 32
_FRAME_HEADER = 24


def _wal_bytes(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


def _frame_bytes(path: Path) -> int:
    """Return the size of one WAL frame, from the page size in the WAL's header."""
    with path.with_name(path.name + "-wal").open("rb") as wal:
        header = wal.read(_WAL_HEADER)
    return int.from_bytes(header[8:12], "big") + _FRAME_HEADER


async def store_frames_per_commit(directory: Path, commits: int) -> float:
    """Count the WAL frames of one-entry commits to a ``SqliteStorage``, checkpoints off."""
    path = directory / "frames-store.sqlite"
    storage = await SqliteStorage.open(path, wal_autocheckpoint=0)
    try:
        await seed_root(storage)
        before = _wal_bytes(path)
        for n in range(commits):
            await storage.commit([PutEntry(note(storage.mint_id(), ROOT, n))])
        grown = _wal_bytes(path) - before
        return grown / _frame_bytes(path) / commits
    finally:
        await storage.close()


def raw_frames_per_commit(directory: Path, commits: int) -> float:
    """Count the WAL frames of one-row commits with raw sqlite3, checkpoints off."""
    path = directory / "frames-raw.sqlite"
    floor = RawFloor(path, "NORMAL", wal_autocheckpoint=0)
    try:
        floor.commit(1)
        before = _wal_bytes(path)
        for _ in range(commits):
            floor.commit(1)
        return (_wal_bytes(path) - before) / _frame_bytes(path) / commits
    finally:
        floor.close()


async def sustained(
    directory: Path, count: int, block: int, frames: int
) -> tuple[dict[str, Samples], dict[str, float]]:
    """Time ``count`` one-entry commits on each growing store, and count their frames.

    Args:
        directory: Where to make the stores.
        count: Timed commits per candidate (a multiple of ``block``).
        block: Commits in a row before the next candidate's turn.
        frames: Commits of the frame-counting passes.

    Returns:
        The samples by key, and the WAL frames per commit by key.
    """
    storage: Storage = await SqliteStorage.open(directory / "sustained.sqlite")
    raw = RawFloor(directory / "sustained-raw.sqlite", "NORMAL")
    aio = await AioFloor.open(directory / "sustained-aio.sqlite", "NORMAL")
    try:
        await seed_root(storage)

        def raw_commit(n: int) -> None:
            raw.commit(1)

        async def aio_commit(n: int) -> None:
            await aio.commit(1)

        group = [
            Candidate(RAW, run_sync=raw_commit),
            Candidate(AIO, run=aio_commit),
            one_entry_candidate(SUSTAINED, storage),
        ]
        plan = Rounds(warmup=0, rounds=max(1, count // block), block=block)
        samples = await interleave(group, plan)
    finally:
        await storage.close()
        raw.close()
        await aio.close()
    counted = {
        SUSTAINED: await store_frames_per_commit(directory, frames),
        RAW: raw_frames_per_commit(directory, frames),
    }
    counted[AIO] = counted[RAW]  # the same statements as raw sqlite3, through another thread
    return samples, counted


async def _open_and_read(path: Path) -> int:
    """Open ``path`` with aiosqlite, read the root conversation; return the ns (close untimed)."""
    gc.collect()
    began = time.perf_counter_ns()
    db = await aiosqlite.connect(path, isolation_level=None)
    cursor = await db.execute("SELECT record FROM conversations WHERE id = ?", (ROOT,))
    await cursor.fetchone()
    elapsed = time.perf_counter_ns() - began
    await db.close()
    return elapsed


async def _reopen(backend: Backend, path: Path, taken: Samples) -> int:
    """Open the store at ``path``, read the root conversation, close; return the open's ns."""
    gc.collect()
    began = time.perf_counter_ns()
    storage = await backend.open(path)
    root = await storage.conversation(ROOT)
    elapsed = time.perf_counter_ns() - began
    await storage.close()
    if root is None and taken.wrong is None:
        taken.wrong = f"reopened {path} has no root conversation"
    return elapsed


MIN_REOPENS = 5


async def reopen_with_floor(
    backend: Backend, paths: dict[str, Path], warmup: int, reps: int, budget_s: float = 0.0
) -> dict[str, dict[str, Samples]]:
    """Time cold opens of seeded stores, one size after another, with the SQLite floor.

    Each open makes a new backend object on the existing files and reads the
    root conversation; closing is not timed. The sizes run back to back, each
    with its own warm-up, rather than interleaved: right after a JSONL store of
    100k entries is opened and closed, opening the 1k store took 3 to 6 times
    its usual time in this process, which would understate every ratio. For a
    SQLite store the aiosqlite open-and-read floor alternates with the reopen.

    Args:
        backend: A persistent backend.
        paths: Store paths by scale label, smallest first.
        warmup: Untimed opens of each store first (at least one).
        reps: Timed opens of each store.
        budget_s: When positive, a size whose warm-up opens say that ``reps``
            opens would take longer gets fewer (never fewer than ``MIN_REOPENS``).

    Returns:
        By scale label, the samples by key (``reopen`` and, for SQLite, ``floor``).
    """
    result: dict[str, dict[str, Samples]] = {}
    with_floor = backend.kind == "sqlite"
    for label, path in paths.items():
        taken = Samples()
        floor = Samples()
        result[label] = {"reopen": taken, **({"floor": floor} if with_floor else {})}
        warm: list[int] = []
        for _ in range(max(1, warmup)):
            warm.append(await _reopen(backend, path, taken))
            if with_floor:
                await _open_and_read(path)
        count = reps
        if budget_s > 0:
            count = max(MIN_REOPENS, min(reps, int(budget_s * 1e9 * len(warm) / sum(warm))))
        for _ in range(count):
            taken.ns.append(await _reopen(backend, path, taken))
            if with_floor:
                floor.ns.append(await _open_and_read(path))
    return result
