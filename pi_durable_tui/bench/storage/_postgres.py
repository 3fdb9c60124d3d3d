"""The PostgreSQL rows of the storage benchmark, beside raw asyncpg in the same run.

``run_postgres_phase`` uses the server at ``--database URL``, or starts a
throwaway one (``bench.postgres_server``, with ``fsync`` and
``synchronous_commit`` on, as a real server runs); without a server it says why
and adds no rows. What it measures:

- ``postgres.commit_1_entry``: a one-entry ``PostgresStorage.commit``,
  interleaved with its floors: ``baseline.asyncpg.commit_1_row`` (raw asyncpg,
  ``async with conn.transaction()`` around one ``INSERT`` of the same entry
  text: BEGIN, INSERT, COMMIT) and ``baseline.asyncpg.insert_1_row`` (one
  ``INSERT`` in its own implicit transaction: a single round trip, the least a
  durable write to a server costs). ``ratio`` divides by the first (the issue's
  target: at most 1.5), ``ratio_insert`` by the second.
- ``postgres.reopen_<scale>`` at the smallest and the largest scale (100k in a
  full run): ``PostgresStorage.open`` of a seeded store plus
  ``conversation(1)``, closing not timed, beside
  ``baseline.asyncpg.connect_and_read``: a raw connection and one query (the
  floor of any open); ``ratio_vs_1k`` divides by the smallest scale's reopen.
- ``<backend>.tool_round`` for ``sqlite`` and ``postgres``: the ``turn``
  benchmark's tool round (a user input, a faux model asking for ``read`` of a
  small file, the tool, the final answer) on a harness over each store, with
  the commits a round makes; ``commits_vs_sqlite`` must be 1.0 (the same
  rounds make the same commits on both).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg

from pi_durable_tui.ai import Context, ModelRef, StreamOptions, faux_response, faux_tool_call
from pi_durable_tui.bench._agent_kit import open_agent, percentile
from pi_durable_tui.bench.postgres_server import PostgresServer, ServerUnavailable
from pi_durable_tui.bench.storage._baselines import BODY
from pi_durable_tui.bench.storage._seed import seed_scale_store
from pi_durable_tui.bench.storage._timing import Candidate, Rounds, Samples, interleave, summary
from pi_durable_tui.bench.storage._workloads import one_entry_candidate
from pi_durable_tui.harness import AgentChange, Input
from pi_durable_tui.storage import PostgresStorage, SqliteStorage, StorageError
from pi_durable_tui.storage.protocol import Storage

Say = Callable[[str], None]
Results = dict[str, dict[str, Any]]

COMMIT = "postgres.commit_1_entry"
TX_FLOOR = "baseline.asyncpg.commit_1_row"
INSERT_FLOOR = "baseline.asyncpg.insert_1_row"
OPEN_FLOOR = "baseline.asyncpg.connect_and_read"
TOOL_ROUNDS = ("sqlite.tool_round", "postgres.tool_round")
_TABLE = "pidurable_bench_rows"


def keys(scales: tuple[int, ...], label: Callable[[int], str]) -> list[str]:
    """Return the keys this phase reports, in report order."""
    ends = (scales[0], scales[-1])
    return [
        TX_FLOOR,
        INSERT_FLOOR,
        COMMIT,
        OPEN_FLOOR,
        *(f"postgres.reopen_{label(scale)}" for scale in ends),
        *TOOL_ROUNDS,
    ]


class _Floor:
    """Raw asyncpg writing the same rows into a table of its own."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn
        self._next = 1

    @classmethod
    async def open(cls, url: str) -> _Floor:
        conn = await asyncpg.connect(url)
        await conn.execute(f"DROP TABLE IF EXISTS {_TABLE}")
        await conn.execute(f"CREATE TABLE {_TABLE} (id bigint PRIMARY KEY, body text NOT NULL)")
        return cls(conn)

    def _id(self) -> int:
        self._next += 1
        return self._next

    async def transaction(self, n: int) -> None:
        async with self.conn.transaction():
            await self.conn.execute(f"INSERT INTO {_TABLE} VALUES ($1, $2)", self._id(), BODY)

    async def insert(self, n: int) -> None:
        await self.conn.execute(f"INSERT INTO {_TABLE} VALUES ($1, $2)", self._id(), BODY)

    async def close(self) -> None:
        with contextlib.suppress(asyncpg.PostgresError):
            await self.conn.execute(f"DROP TABLE IF EXISTS {_TABLE}")
        await self.conn.close()


async def _timed(work: Callable[[], Awaitable[Any]], reps: int) -> list[int]:
    taken = []
    for _ in range(reps):
        started = time.perf_counter_ns()
        await work()
        taken.append(time.perf_counter_ns() - started)
    return taken


async def run_postgres_phase(
    *,
    url: str | None,
    scales: tuple[int, ...],
    label: Callable[[int], str],
    writes: Rounds,
    reopen_reps: int,
    rounds: int,
    directory: Path,
    results: Results,
    say: Say,
) -> None:
    """Measure the PostgreSQL rows (module docstring) into ``results``.

    Args:
        url: A server to use; ``None`` starts a throwaway one.
        scales: The scales of the run (the smallest and the largest are used).
        label: Names a scale (``1k``).
        writes: The plan of the commit group.
        reopen_reps: Timed reopens per scale.
        rounds: Tool rounds per backend.
        directory: A temporary directory (the SQLite store and the tool's file).
        results: Receives the figures.
        say: Receives progress lines.
    """
    with contextlib.ExitStack() as stack:
        if url is None:
            say("postgres: starting a throwaway server (fsync on)")
            try:
                url = stack.enter_context(PostgresServer.start(durable=True)).url
            except ServerUnavailable as error:
                say(f"postgres: no rows, {error}")
                return
        run = uuid.uuid4().hex[:8]
        try:
            await _commits(url, run, writes, results, say)
            await _reopens(url, run, scales, label, reopen_reps, results, say)
            await _tool_rounds(url, run, rounds, directory, results, say)
        except (StorageError, OSError, asyncpg.PostgresError) as error:
            say(f"postgres: stopped early, {error}")


async def _commits(url: str, run: str, plan: Rounds, results: Results, say: Say) -> None:
    say("postgres: one-entry commits beside raw asyncpg")
    floor = await _Floor.open(url)
    storage = await PostgresStorage.open(url, f"bench/{run}/commits")
    try:
        await seed_scale_store(storage, 100)
        group = [
            Candidate(TX_FLOOR, run=floor.transaction),
            Candidate(INSERT_FLOOR, run=floor.insert),
            one_entry_candidate(COMMIT, storage),
        ]
        for key, taken in (await interleave(group, plan)).items():
            results[key] = summary(taken)
    finally:
        await storage.close()
        await floor.close()
    entry = results[COMMIT]
    entry["ratio"] = entry["p50_ms"] / results[TX_FLOOR]["p50_ms"]
    entry["ratio_insert"] = entry["p50_ms"] / results[INSERT_FLOOR]["p50_ms"]


async def _reopens(
    url: str,
    run: str,
    scales: tuple[int, ...],
    label: Callable[[int], str],
    reps: int,
    results: Results,
    say: Say,
) -> None:
    names: dict[str, str] = {}
    for scale in (scales[0], scales[-1]):
        name = f"bench/{run}/scale-{label(scale)}"
        say(f"postgres: seeding {label(scale)} entries")
        storage = await PostgresStorage.open(url, name)
        try:
            await seed_scale_store(storage, scale)
        finally:
            await storage.close()
        names[label(scale)] = name

    async def connect_and_read() -> None:
        conn = await asyncpg.connect(url)
        await conn.fetchval("SELECT 1")
        await conn.close()

    say("postgres: reopen")
    floor: list[int] = []
    for scale_label, name in names.items():
        taken: list[int] = []
        for rep in range(reps + 1):
            floor += await _timed(connect_and_read, 1)
            started = time.perf_counter_ns()
            storage = await PostgresStorage.open(url, name)
            await storage.conversation(1)
            elapsed = time.perf_counter_ns() - started
            await storage.close()
            if rep:  # the first is a warm-up
                taken.append(elapsed)
        results[f"postgres.reopen_{scale_label}"] = summary(_samples(taken))
    results[OPEN_FLOOR] = summary(_samples(floor))
    small, large = (results[f"postgres.reopen_{label(s)}"] for s in (scales[0], scales[-1]))
    large["ratio_vs_1k"] = large["p50_ms"] / small["p50_ms"]
    for entry in (small, large):
        entry["ratio"] = entry["p50_ms"] / results[OPEN_FLOOR]["p50_ms"]


def _samples(ns: list[int]) -> Samples:
    return Samples(ns=ns)


def _answer(context: Context, _options: StreamOptions, _index: int) -> Any:
    """The faux model of a tool round: read the file, then answer (as ``bench turn``)."""
    last = context.messages[-1] if context.messages else None
    if last is not None and last.role == "toolResult":
        return faux_response("The file says hello.")
    return faux_response(faux_tool_call("read", {"path": "small.txt"}))


async def _tool_rounds(
    url: str, run: str, rounds: int, directory: Path, results: Results, say: Say
) -> None:
    say(f"tool rounds: {rounds} on SQLite and on PostgreSQL")
    where = directory / "tool-rounds"
    where.mkdir(exist_ok=True)
    (where / "small.txt").write_text("hello\n" * 20)
    openers: dict[str, Callable[[], Awaitable[Storage]]] = {
        "sqlite": lambda: SqliteStorage.open(where / "session.sqlite"),
        "postgres": lambda: PostgresStorage.open(url, f"bench/{run}/tool-rounds"),
    }
    for backend, opener in openers.items():
        kit = await open_agent(where, factory=_answer, storage=await opener())
        times: list[float] = []
        commits: list[int] = []
        try:
            for index in range(rounds + 3):
                agent = AgentChange(model=ModelRef("faux", "faux-1"), cwd=str(where))
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
        results[f"{backend}.tool_round"] = {
            "p50_ms": round(percentile(times, 0.5), 3),
            "p99_ms": round(percentile(times, 0.99), 3),
            "n": len(times),
            "commits": sum(commits) / len(commits),
        }
    sqlite, postgres = (results[key] for key in TOOL_ROUNDS)
    postgres["commits_vs_sqlite"] = postgres["commits"] / sqlite["commits"]
    postgres["ratio_vs_sqlite"] = postgres["p50_ms"] / sqlite["p50_ms"]
