"""The phases of the storage benchmark: modes, seeding the stores, and timing groups.

``run(profile, parent, say)`` measures memory first (child processes, while
this process is idle), then the *timing phase* (reads, then writes, on stores
seeded like the reference's timing scale, with the floors and the Session rows
interleaved into the commit groups), then the *sustained phase* (thousands of
one-entry commits on growing SQLite stores beside their floors, ``_sustained``),
then the *scale phase* (reopen at each scale, the sizes back to back, SQLite
beside its open-and-read floor, then one-entry commits on the smallest and the
largest store, interleaved), then the *PostgreSQL phase* (``_postgres``: its
commits beside raw asyncpg, reopen, a tool round against SQLite's), unless the
caller turns it off. It returns raw figures by workload key;
``_report`` adds ratios and targets. ``_command`` documents the keys.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pi_durable_tui.bench.storage._baselines import AioFloor, RawFloor, Synchronous
from pi_durable_tui.bench.storage._memory import measure_memory
from pi_durable_tui.bench.storage._postgres import keys as postgres_keys
from pi_durable_tui.bench.storage._postgres import run_postgres_phase
from pi_durable_tui.bench.storage._seed import (
    TAIL_LENGTHS,
    TimingStore,
    seed_scale_store,
    seed_timing_store,
)
from pi_durable_tui.bench.storage._sustained import (
    AIO,
    FLOOR,
    RAW,
    SUSTAINED,
    reopen_with_floor,
    sustained,
)
from pi_durable_tui.bench.storage._timing import Candidate, Rounds, Samples, interleave, summary
from pi_durable_tui.bench.storage._workloads import (
    DURABLE,
    PRIMARY,
    Backend,
    one_entry_candidate,
    open_session,
    read_candidates,
    session_candidate,
    write_candidates,
)
from pi_durable_tui.kernel import Session
from pi_durable_tui.storage.protocol import Storage

Say = Callable[[str], None]
Results = dict[str, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Profile:
    """How much one mode of the benchmark runs."""

    name: str
    timing_entries: int
    timing_tasks: int
    timing_documents: int
    writes: Rounds
    writes_100: Rounds
    durable: Rounds
    reads: Rounds
    scales: tuple[int, ...]
    reopen_warmup: int
    reopen_reps: int
    reopen_budget_s: float
    scale_commits: Rounds
    memory_entries: int
    sustained: int
    """One-entry commits per candidate in the sustained phase."""
    sustained_block: int
    frames: int
    """Commits of the passes that count WAL frames."""
    tool_rounds: int = 20
    """Tool rounds per backend in the PostgreSQL phase."""


PROFILES = {
    "full": Profile(
        name="full",
        timing_entries=1000,
        timing_tasks=300,
        timing_documents=300,
        writes=Rounds(warmup=50, rounds=40, block=50),
        writes_100=Rounds(warmup=10, rounds=30, block=10),
        durable=Rounds(warmup=20, rounds=20, block=25),
        reads=Rounds(warmup=20, rounds=20, block=50, budget_s=4.0),
        scales=(1000, 10_000, 100_000),
        reopen_warmup=2,
        reopen_reps=20,
        reopen_budget_s=15.0,
        scale_commits=Rounds(warmup=50, rounds=20, block=50),
        memory_entries=10_000,
        sustained=5000,
        sustained_block=100,
        frames=1000,
    ),
    "quick": Profile(
        name="quick",
        timing_entries=1000,
        timing_tasks=300,
        timing_documents=300,
        writes=Rounds(warmup=10, rounds=10, block=20),
        writes_100=Rounds(warmup=3, rounds=10, block=5),
        durable=Rounds(warmup=5, rounds=5, block=20),
        reads=Rounds(warmup=3, rounds=10, block=10, budget_s=0.25),
        scales=(1000, 10_000),
        reopen_warmup=2,
        reopen_reps=10,
        reopen_budget_s=1.5,
        scale_commits=Rounds(warmup=10, rounds=10, block=20),
        memory_entries=10_000,
        sustained=1000,
        sustained_block=50,
        frames=500,
    ),
    "smoke": Profile(
        name="smoke",
        timing_entries=200,
        timing_tasks=60,
        timing_documents=60,
        writes=Rounds(warmup=1, rounds=2, block=2),
        writes_100=Rounds(warmup=1, rounds=2, block=2),
        durable=Rounds(warmup=1, rounds=2, block=2),
        reads=Rounds(warmup=1, rounds=2, block=2),
        scales=(100, 200),
        reopen_warmup=1,
        reopen_reps=2,
        reopen_budget_s=0.0,
        scale_commits=Rounds(warmup=1, rounds=2, block=2),
        memory_entries=200,
        sustained=20,
        sustained_block=5,
        frames=10,
        tool_rounds=2,
    ),
}


def label(entries: int) -> str:
    """Return the scale label of an entry count: ``1k``, ``100k``, ``200``."""
    return f"{entries // 1000}k" if entries >= 1000 and entries % 1000 == 0 else str(entries)


READS = (
    "read_entry",
    "scan_entries_100",
    "scan_tasks_filtered",
    "find_document",
    *(f"doc_tail_{n}_{when}" for n in TAIL_LENGTHS for when in ("current", "historical")),
    "doc_history_ancient",
    "doc_history_recent",
    "fork_scan_100",
    "fork_head_lookup",
)
WRITES = ("commit_1_entry", "commit_100_entries", "commit_mixed")
FLOORS = ("raw_sqlite3", "aiosqlite", "raw_sqlite3_full", "aiosqlite_full")
PRIMARY_NAMES = tuple(backend.name for backend in PRIMARY)
DURABLE_NAMES = tuple(backend.name for backend in DURABLE)
PERSISTENT_NAMES = tuple(backend.name for backend in PRIMARY if backend.persistent)


def workload_keys(profile: Profile, postgres: bool = True) -> list[str]:
    """Return every key the benchmark reports in a mode, in report order.

    ``postgres=False``: without the PostgreSQL phase's keys.
    """
    keys = [
        f"baseline.{floor}.{rows}"
        for floor in FLOORS
        for rows in ("commit_1_row", "commit_100_rows")
    ]
    keys += [RAW, AIO]
    keys += [FLOOR.format(scale=label(scale)) for scale in profile.scales]
    keys += [f"{name}.{write}" for write in WRITES for name in (*PRIMARY_NAMES, *DURABLE_NAMES)]
    keys += [f"{name}.session_commit_1_entry" for name in PRIMARY_NAMES]
    keys += [SUSTAINED]
    keys += [f"{name}.{read}" for read in READS for name in PRIMARY_NAMES]
    keys += [
        f"{name}.reopen_{label(scale)}" for name in PERSISTENT_NAMES for scale in profile.scales
    ]
    ends = (profile.scales[0], profile.scales[-1])
    keys += [f"{name}.commit_1_entry_at_{label(n)}" for name in PRIMARY_NAMES for n in ends]
    keys += [f"{name}.memory_{label(profile.memory_entries)}" for name in PRIMARY_NAMES]
    if postgres:
        keys += postgres_keys(profile.scales, label)
    return keys


async def run(
    profile: Profile,
    parent: str,
    say: Callable[[str], None],
    *,
    postgres: bool = True,
    database: str | None = None,
    only_postgres: bool = False,
) -> dict[str, dict[str, Any]]:
    """Run every phase of the benchmark and return the raw figures by workload key.

    Args:
        profile: How much to run.
        parent: Where to make the temporary directory.
        say: Receives progress lines.
        postgres: Whether to run the PostgreSQL phase.
        database: The server it uses; ``None`` starts a throwaway one.
        only_postgres: Run the PostgreSQL phase alone.

    Returns:
        The figures, before ratios and targets are added.
    """
    results: dict[str, dict[str, Any]] = {}
    if not only_postgres:
        say(f"memory at {label(profile.memory_entries)}, one child process per backend")
        memory = await measure_memory(list(PRIMARY_NAMES), profile.memory_entries, parent)
        for name, figures in memory.items():
            results[f"{name}.memory_{label(profile.memory_entries)}"] = figures
    with tempfile.TemporaryDirectory(prefix="pidurable-bench-", dir=parent) as directory:
        if not only_postgres:
            await run_timing_phase(profile, Path(directory), results, say)
            await run_sustained_phase(profile, Path(directory), results, say)
            await run_scale_phase(profile, Path(directory), results, say)
        if postgres or only_postgres:
            await run_postgres_phase(
                url=database,
                scales=profile.scales,
                label=label,
                writes=profile.writes,
                reopen_reps=profile.reopen_reps,
                rounds=profile.tool_rounds,
                directory=Path(directory),
                results=results,
                say=say,
            )
        say("removing the stores")
    return {key: results[key] for key in workload_keys(profile) if key in results}


def _record(results: Results, samples: dict[str, Samples]) -> None:
    for key, taken in samples.items():
        results[key] = summary(taken)


async def _open_store(backend: Backend, directory: Path) -> Storage:
    directory.mkdir(parents=True, exist_ok=True)
    return await backend.open(backend.path(directory))


class _Floors:
    """The raw and aiosqlite floors at one ``synchronous`` level."""

    def __init__(self, raw: RawFloor, aio: AioFloor, suffix: str) -> None:
        self.raw = raw
        self.aio = aio
        self.suffix = suffix

    @classmethod
    async def open(cls, directory: Path, synchronous: Synchronous) -> _Floors:
        suffix = "_full" if synchronous == "FULL" else ""
        raw = RawFloor(directory / f"raw{suffix}.sqlite", synchronous)
        aio = await AioFloor.open(directory / f"aio{suffix}.sqlite", synchronous)
        return cls(raw, aio, suffix)

    def candidates(self, rows: int) -> list[Candidate]:
        name = "commit_1_row" if rows == 1 else f"commit_{rows}_rows"

        def raw(n: int) -> None:
            self.raw.commit(rows)

        async def aio(n: int) -> None:
            await self.aio.commit(rows)

        return [
            Candidate(f"baseline.raw_sqlite3{self.suffix}.{name}", run_sync=raw),
            Candidate(f"baseline.aiosqlite{self.suffix}.{name}", run=aio),
        ]

    async def close(self) -> None:
        self.raw.close()
        await self.aio.close()


async def run_timing_phase(profile: Profile, directory: Path, results: Results, say: Say) -> None:
    """Seed the timing stores and run the read and write groups.

    Args:
        profile: How much to run.
        directory: A temporary directory for every store.
        results: Receives the figures.
        say: Receives progress lines.
    """
    stores: dict[str, TimingStore] = {}
    sessions: list[tuple[str, Session, int]] = []
    floors: list[_Floors] = []
    try:
        for backend in (*PRIMARY, *DURABLE):
            say(f"seeding the timing store of {backend.name}")
            storage = await _open_store(backend, directory / f"timing-{backend.name}")
            stores[backend.name] = await seed_timing_store(
                storage,
                profile.timing_entries,
                profile.timing_tasks,
                profile.timing_documents,
                for_reads=not backend.durable,
            )
        for backend in PRIMARY:
            storage = await _open_store(backend, directory / f"session-{backend.name}")
            session, conversation = await open_session(storage)
            sessions.append((backend.name, session, conversation))
        floors = [
            await _Floors.open(directory, "NORMAL"),
            await _Floors.open(directory, "FULL"),
        ]
        normal, full = floors
        reads = {
            backend.name: read_candidates(backend.name, stores[backend.name]) for backend in PRIMARY
        }
        for workload in READS:
            say(f"reads: {workload}")
            group = [reads[backend.name][workload] for backend in PRIMARY]
            _record(results, await interleave(group, profile.reads))
        writes = {name: write_candidates(name, store) for name, store in stores.items()}
        for backends, level, plan in (
            (PRIMARY, normal, profile.writes),
            (DURABLE, full, profile.durable),
        ):
            say(f"writes: {', '.join(backend.name for backend in backends)}")
            one = [writes[backend.name]["commit_1_entry"] for backend in backends]
            if level is normal:
                one += [session_candidate(*row) for row in sessions]
            _record(results, await interleave([*level.candidates(1), *one], plan))
            hundred = [writes[backend.name]["commit_100_entries"] for backend in backends]
            hundred_plan = profile.writes_100 if level is normal else profile.writes_100.scaled(0.5)
            _record(results, await interleave([*level.candidates(100), *hundred], hundred_plan))
            mixed = [writes[backend.name]["commit_mixed"] for backend in backends]
            _record(results, await interleave(mixed, plan))
    finally:
        for _, session, _ in sessions:
            await session.close()
        for store in stores.values():
            await store.storage.close()
        for level in floors:
            await level.close()


async def run_sustained_phase(
    profile: Profile, directory: Path, results: Results, say: Say
) -> None:
    """Time sustained one-entry commits on growing SQLite stores beside their floors.

    Args:
        profile: How much to run.
        directory: A temporary directory for every store.
        results: Receives the figures.
        say: Receives progress lines.
    """
    say(f"sustained: {profile.sustained} one-entry commits on growing SQLite stores")
    where = directory / "sustained"
    where.mkdir()
    samples, frames = await sustained(
        where, profile.sustained, profile.sustained_block, profile.frames
    )
    for key, taken in samples.items():
        results[key] = {**summary(taken), "wal_frames_per_commit": frames[key]}


async def run_scale_phase(profile: Profile, directory: Path, results: Results, say: Say) -> None:
    """Seed stores at every scale, time reopening them, then commits at the ends.

    Args:
        profile: How much to run.
        directory: A temporary directory for every store.
        results: Receives the figures.
        say: Receives progress lines.
    """
    small, large = profile.scales[0], profile.scales[-1]
    paths: dict[tuple[str, int], Path] = {}
    for backend in PRIMARY:
        if not backend.persistent:
            continue
        for scale in profile.scales:
            say(f"seeding {backend.name} to {label(scale)} entries")
            where = directory / f"scale-{backend.name}-{label(scale)}"
            storage = await _open_store(backend, where)
            try:
                await seed_scale_store(storage, scale)
            finally:
                await storage.close()
            paths[backend.name, scale] = backend.path(where)
        say(f"reopen: {backend.name}")
        by_label = {label(scale): paths[backend.name, scale] for scale in profile.scales}
        samples = await reopen_with_floor(
            backend, by_label, profile.reopen_warmup, profile.reopen_reps, profile.reopen_budget_s
        )
        for scale_label, taken in samples.items():
            results[f"{backend.name}.reopen_{scale_label}"] = summary(taken["reopen"])
            if "floor" in taken:
                results[FLOOR.format(scale=scale_label)] = summary(taken["floor"])
    opened: list[Storage] = []
    try:
        group: list[Candidate] = []
        for backend in PRIMARY:
            for scale in (small, large):
                if backend.persistent:
                    storage = await backend.open(paths[backend.name, scale])
                else:
                    say(f"seeding {backend.name} to {label(scale)} entries")
                    storage = await backend.open(directory)
                    await seed_scale_store(storage, scale)
                opened.append(storage)
                key = f"{backend.name}.commit_1_entry_at_{label(scale)}"
                group.append(one_entry_candidate(key, storage))
        say(f"commits at {label(small)} and {label(large)} entries")
        _record(results, await interleave(group, profile.scale_commits))
    finally:
        for storage in opened:
            await storage.close()
