"""SqliteStorage checkpoints its WAL off the commit path (sqlite._checkpoints, R129).

SQLite's automatic checkpoint is off; every ``EVERY_FRAMES`` WAL frames (a
one-entry commit writes two) a PASSIVE checkpoint runs beside the commits on
another connection and thread; when the WAL has taken more than
``RESTART_FRAMES`` since it last started over, one runs between two commits so
the next commit starts the WAL over; ``close`` waits for them and truncates the WAL;
``wal_autocheckpoint=N`` brings SQLite's own checkpoint back instead.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.storage.records import EntryRecord
from pi_durable_tui.storage.sqlite import SqliteStorage
from pi_durable_tui.storage.sqlite import _checkpoints as sqlite_checkpoints
from pi_durable_tui.storage.sqlite._checkpoints import Checkpoints
from pi_durable_tui.storage.sqlite._storage import run_on_worker
from pi_durable_tui.storage.writes import PutEntry
from tests.storage.sqlite_support import ROOT, checked_stores, entry, pragma


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    async with checked_stores(tmp_path) as open_store:
        yield open_store


def in_flight(checkpoints: Checkpoints) -> bool:
    """Whether a checkpoint beside the commits is running."""
    return checkpoints._beside is not None


def checkpoints_of(storage: SqliteStorage) -> Checkpoints:
    checkpoints = storage._checkpoints
    assert checkpoints is not None
    return checkpoints


async def settled(checkpoints: Checkpoints) -> None:
    """Wait until no checkpoint is in flight (each is a few milliseconds of I/O)."""
    for _ in range(500):
        if checkpoints._beside is None and checkpoints._restart is None:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("a checkpoint never finished")


def wal_frames(path: Path) -> int:
    """Frames in the WAL now, asked through a connection of its own (a harmless PASSIVE)."""
    with sqlite3.connect(path) as conn:
        return int(conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1])


async def test_sqlites_own_checkpoint_is_off_and_one_runs_beside_the_commits_every_few(
    stores: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_checkpoints, "EVERY_FRAMES", 16)
    threads: list[int] = []
    real = sqlite_checkpoints.passive_checkpoint

    def spy(conn: sqlite3.Connection) -> tuple[int, int, int]:
        threads.append(threading.get_ident())
        return real(conn)

    monkeypatch.setattr(sqlite_checkpoints, "passive_checkpoint", spy)
    storage = await stores()
    assert await pragma(storage, "wal_autocheckpoint") == 0
    worker = await run_on_worker(storage._db, lambda conn: threading.get_ident())
    checkpoints = checkpoints_of(storage)
    await storage.commit([ROOT])  # two frames: the conversation and the metadata row
    before = (tmp_path / "session.sqlite").read_bytes()
    for entry_id in range(2, 8):  # two frames each: the entry and its index
        await storage.commit([entry(entry_id)])
    await settled(checkpoints)
    assert threads == []  # fourteen frames: none yet
    await storage.commit([entry(8)])  # sixteen: one starts
    await storage.commit([entry(9)])  # and commits go on while it runs
    await settled(checkpoints)
    assert len(threads) == 1
    assert threads[0] not in (worker, threading.get_ident())  # neither commits' nor loop's
    assert checkpoints._since_restart >= 16
    # Pages copied back (the file was created whole, so it changes rather than grows).
    assert (tmp_path / "session.sqlite").read_bytes() != before
    assert await storage.entry(9) is not None


async def test_a_long_wal_is_started_over_by_one_checkpoint_between_two_commits(
    stores: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_checkpoints, "EVERY_FRAMES", 10**9)  # none beside the commits
    storage = await stores()
    await storage.commit([ROOT])
    for start in range(2, 202, 10):
        await storage.commit([entry(i) for i in range(start, start + 10)])
    assert wal_frames(tmp_path / "session.sqlite") > 20
    checkpoints = checkpoints_of(storage)
    checkpoints._since_restart = sqlite_checkpoints.RESTART_FRAMES  # as if that many
    await storage.commit([entry(300)])  # schedules the restart behind itself
    await storage.commit([entry(301)])  # waits for it, then starts the WAL over
    await settled(checkpoints)
    assert wal_frames(tmp_path / "session.sqlite") <= 4
    assert [s.entry.id for s in (await storage.scan_entries(1, limit=2)).items] == [301, 300]


async def test_close_waits_for_a_checkpoint_in_flight_and_closes_its_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_checkpoints, "EVERY_FRAMES", 1)
    release = threading.Event()
    real = sqlite_checkpoints.passive_checkpoint

    def held(conn: sqlite3.Connection) -> tuple[int, int, int]:
        release.wait(10)
        return real(conn)

    monkeypatch.setattr(sqlite_checkpoints, "passive_checkpoint", held)
    storage = await SqliteStorage.open(tmp_path / "s.sqlite")
    checkpoints = checkpoints_of(storage)
    await storage.commit([ROOT])
    assert in_flight(checkpoints)  # held until released below
    closing = asyncio.ensure_future(storage.close())
    await asyncio.sleep(0.05)
    assert not closing.done()  # close waits for the checkpoint
    release.set()
    await closing
    assert not in_flight(checkpoints)
    assert checkpoints._conn is None
    wal = tmp_path / "s.sqlite-wal"
    assert not wal.exists() or wal.stat().st_size == 0
    reopened = await SqliteStorage.open(tmp_path / "s.sqlite")
    assert await reopened.conversation(1) is not None
    await reopened.close()


async def test_a_failed_checkpoint_beside_the_commits_loses_nothing(
    stores: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_checkpoints, "EVERY_FRAMES", 2)

    def broken(conn: sqlite3.Connection) -> tuple[int, int, int]:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(sqlite_checkpoints, "passive_checkpoint", broken)
    storage = await stores()
    await storage.commit([ROOT])
    for entry_id in range(2, 8):
        await storage.commit([entry(entry_id)])
        await settled(checkpoints_of(storage))
    assert len((await storage.scan_entries(1)).items) == 6


async def test_an_explicit_wal_autocheckpoint_is_sqlites_own_and_nothing_runs_beside(
    stores: Callable[..., Any],
) -> None:
    storage = await stores(wal_autocheckpoint=64)
    assert storage._checkpoints is None
    assert await pragma(storage, "wal_autocheckpoint") == 64
    await storage.commit([ROOT])


@pytest.mark.parametrize(("entries", "text"), [(1, 2), (1, 2000), (20, 2), (100, 2), (100, 200)])
async def test_the_frames_a_commit_is_counted_for_are_near_the_frames_it_writes(
    stores: Callable[..., Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    entries: int,
    text: int,
) -> None:
    counted: list[int] = []
    monkeypatch.setattr(Checkpoints, "after_commit", lambda self, frames: counted.append(frames))

    async def never(fn: Callable[[sqlite3.Connection], Any]) -> Any:
        raise AssertionError("nothing runs on the worker here")

    storage = await stores(wal_autocheckpoint=0)  # the WAL only grows: its size counts frames
    storage._checkpoints = Checkpoints(tmp_path / "session.sqlite", "NORMAL", never)
    await storage.commit([ROOT])
    wal = tmp_path / "session.sqlite-wal"
    before = wal.stat().st_size
    next_id = 2
    for _ in range(20):
        batch = [
            PutEntry(EntryRecord(i, 1, "note", data={"text": "x" * text}))
            for i in range(next_id, next_id + entries)
        ]
        await storage.commit(batch)
        next_id += entries
    written = (wal.stat().st_size - before) / (4096 + 24)
    estimated = sum(counted[1:])
    assert written / 2 <= estimated <= written * 2, (estimated, written)
