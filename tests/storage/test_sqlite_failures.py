"""SqliteStorage under failure: failpoints, uncertain commits, damage, process exit.

Rules cited: R8 (an uncertain failure is not a rejection), R129, DESIGN.md
sections 2 and 6 (crash tests kill at every commit boundary), reliability.md
9.7 (aiosqlite's worker thread is not a daemon) and rows K2 and A1 of section 15.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_durable_tui.storage import failpoints
from pi_durable_tui.storage.errors import StorageCorrupted, StoragePoisoned, StoreBusy
from pi_durable_tui.storage.failpoints import FailpointError
from pi_durable_tui.storage.lock import StoreLock
from pi_durable_tui.storage.records import ConversationRecord, EntryRecord
from pi_durable_tui.storage.sqlite import SqliteStorage
from pi_durable_tui.storage.writes import PutConversation, PutEntry
from tests.deadlines import WAIT

COMMIT_FIVE_TIMES = """
import asyncio, sys
from pi_durable_tui.storage.records import ConversationRecord
from pi_durable_tui.storage.sqlite import SqliteStorage
from pi_durable_tui.storage.writes import PutConversation

async def main():
    storage = await SqliteStorage.open(sys.argv[1])
    for n in range(1, 6):
        print(await storage.commit([PutConversation(ConversationRecord(n))]), flush=True)
    await storage.close()

asyncio.run(main())
"""


def run_python(
    code: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, **(env or {})},
        check=False,
    )


@pytest.fixture
def armed() -> Iterator[None]:
    """Leave the in-process failpoints unarmed after the test, whatever it armed."""
    yield
    failpoints.rearm(None)


@pytest.mark.parametrize(("point", "acknowledged", "stored"), [("before", 2, 2), ("after", 2, 3)])
def test_a_failpoint_kills_the_process_at_the_nth_commit_boundary(
    tmp_path: Path, point: str, acknowledged: int, stored: int
) -> None:
    path = tmp_path / "s.sqlite"
    spec = f"sqlite.{point}_commit:3"
    result = run_python(COMMIT_FIVE_TIMES, str(path), env={failpoints.ENV_VAR: spec})
    assert result.returncode == -signal.SIGKILL, result.stderr
    assert result.stdout.split() == [str(n) for n in range(1, acknowledged + 1)]
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("SELECT count(*) FROM conversations").fetchone() == (stored,)
        assert conn.execute("SELECT next_seq FROM durable_metadata").fetchone() == (stored + 1,)


def test_the_failpoint_variable_format_is_checked_when_read() -> None:
    assert failpoints.parse("") == {}
    assert failpoints.parse("a.b:3, c.d:1:raise") == {
        "a.b": failpoints.Arm(3, "kill"),
        "c.d": failpoints.Arm(1, "raise"),
    }
    for bad in ("a.b", "a.b:0", "a.b:x", "a.b:1:explode", ":1", "a:1,a:2"):
        with pytest.raises(ValueError, match=failpoints.ENV_VAR):
            failpoints.parse(bad)


def test_a_misspelt_failpoint_is_reported_as_undefined(armed: None) -> None:
    failpoints.rearm("sqlite.befor_commit:1")
    assert failpoints.undefined() == ["sqlite.befor_commit"]


async def test_a_raise_before_commit_rolls_back_and_leaves_the_store_usable(
    tmp_path: Path, armed: None
) -> None:
    storage = await SqliteStorage.open(tmp_path / "s.sqlite")
    try:
        await storage.commit([PutConversation(ConversationRecord(1))])
        failpoints.rearm("sqlite.before_commit:1:raise")
        with pytest.raises(FailpointError):
            await storage.commit([PutEntry(EntryRecord(2, 1, "message"))])
        assert await storage.entry(2) is None
        assert await storage.commit([PutEntry(EntryRecord(3, 1, "message"))]) == 2
    finally:
        await storage.close()


async def test_a_commit_that_fails_after_it_landed_poisons_the_store_until_reopened(
    tmp_path: Path, armed: None
) -> None:
    path = tmp_path / "s.sqlite"
    storage = await SqliteStorage.open(path)
    try:
        await storage.commit([PutConversation(ConversationRecord(1))])
        failpoints.rearm("sqlite.after_commit:1:raise")
        with pytest.raises(FailpointError):
            await storage.commit([PutEntry(EntryRecord(2, 1, "message"))])
        with pytest.raises(StoragePoisoned, match="reopen it"):
            await storage.commit([PutEntry(EntryRecord(3, 1, "message"))])
        assert await storage.entry(2) is not None  # reads still answer
    finally:
        await storage.close()
    reopened = await SqliteStorage.open(path)
    try:
        assert reopened.last_seq == 2
        assert reopened.mint_id() == 3
    finally:
        await reopened.close()


async def test_damage_found_after_open_is_reported_as_storage_corrupted(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    storage = await SqliteStorage.open(path)
    await storage.commit([PutConversation(ConversationRecord(1))])
    text = "x" * 3000
    for start in range(2, 400, 50):
        batch = [
            PutEntry(EntryRecord(i, 1, "message", data=text)) for i in range(start, start + 50)
        ]
        await storage.commit(batch)
    await storage.close()
    with sqlite3.connect(path) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        (root,) = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'entries_by_conversation'"
        ).fetchone()
    with path.open("r+b") as file:
        file.seek((root - 1) * page_size)
        file.write(b"\x00\xff" * (page_size // 2))
    # Open reads the metadata and the newest row of each table, not this index.
    storage = await SqliteStorage.open(path)
    try:
        with pytest.raises(StorageCorrupted, match=str(path)):
            await storage.scan_entries(1)
    finally:
        await storage.close()


def test_a_process_that_closes_its_store_exits_promptly(tmp_path: Path) -> None:
    result = run_python(COMMIT_FIVE_TIMES, str(tmp_path / "s.sqlite"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "2", "3", "4", "5"]


def test_a_process_whose_open_failed_does_not_hang_at_exit(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite"
    path.write_text("not a database\n" * 300)
    code = """
        import asyncio, sys
        from pi_durable_tui.storage.sqlite import SqliteStorage
        asyncio.run(SqliteStorage.open(sys.argv[1]))
    """
    result = run_python(code, str(path))  # the 30 s timeout turns a hang into a failure
    assert result.returncode == 1
    assert "StorageCorrupted" in result.stderr


async def test_an_open_cancelled_at_any_point_leaves_no_thread_and_no_lock(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.sqlite"
    for steps in range(12):
        before = set(threading.enumerate())
        opening = asyncio.ensure_future(SqliteStorage.open(path))
        for _ in range(steps):
            await asyncio.sleep(0 if steps < 8 else 0.001)
        opening.cancel()
        try:
            storage = await opening
        except asyncio.CancelledError:
            pass
        else:
            await storage.close()  # it finished before the cancellation arrived
        for thread in set(threading.enumerate()) - before:
            thread.join(timeout=WAIT)
            assert not thread.is_alive(), f"worker left running after {steps} steps"
        StoreLock.acquire(path).release()
    storage = await SqliteStorage.open(path)
    assert await storage.check_integrity() == []
    await storage.close()


@pytest.mark.parametrize("with_lock_file", [False, True], ids=["never-opened", "opened-before"])
async def test_an_empty_store_file_is_reported_and_left_as_it_is(
    tmp_path: Path, with_lock_file: bool
) -> None:
    path = tmp_path / "s.sqlite"
    path.write_bytes(b"")
    if with_lock_file:
        StoreLock.acquire(path).release()

    with pytest.raises(StorageCorrupted, match=r"is empty \(0 bytes\)"):
        await SqliteStorage.open(path)

    assert path.read_bytes() == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == (
        ["s.sqlite", "s.sqlite.lock"] if with_lock_file else ["s.sqlite"]
    )


async def test_a_new_store_is_created_whole_with_nothing_beside_it_but_its_lock(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.sqlite"

    storage = await SqliteStorage.open(path)
    await storage.close()

    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite", "s.sqlite.lock"]
    with sqlite3.connect(path) as db:
        tables = {row[0] for row in db.execute("select name from sqlite_master")}
    assert "durable_metadata" in tables


async def test_a_store_another_sqlite_client_holds_is_refused_at_open(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    await (await SqliteStorage.open(path)).close()
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreBusy, match="is locked by another SQLite client"):
            await SqliteStorage.open(path, open_timeout=0.05)
    finally:
        other.execute("ROLLBACK")
        other.close()
    storage = await SqliteStorage.open(path)  # released: it opens, lock and all
    await storage.close()
