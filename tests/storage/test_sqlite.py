"""SqliteStorage: configuration, transactions, schema, reopen, cancellation, lifecycle.

Rules cited: R129 (SQLite backend), R8 (uncertain outcomes), R-1.2 (seqs),
DESIGN.md sections 2 and 4, reliability.md 9.3 and 9.7 and row L2 of section 15.
Every store a test opens is checked with ``integrity_check`` and
``foreign_key_check`` after the test (the ``stores`` fixture). Reclamation is
tested in ``test_sqlite_reclamation``, failures and failpoints in
``test_sqlite_failures``, equality with MemoryStorage in ``test_sqlite_differential``.
"""

from __future__ import annotations

import asyncio
import inspect
import sqlite3
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

from pi_durable_tui.storage.errors import StorageClosed, StorageCorrupted, StorageRejected
from pi_durable_tui.storage.records import (
    ConversationRecord,
    ConversationScope,
    EntryRecord,
    TaskRecord,
)
from pi_durable_tui.storage.sqlite import SqliteStorage
from pi_durable_tui.storage.sqlite import _schema as sqlite_schema
from pi_durable_tui.storage.sqlite._schema import Migration, UnsupportedSchema
from pi_durable_tui.storage.sqlite._storage import run_on_worker
from pi_durable_tui.storage.writes import (
    ChangeDocument,
    CreateDocument,
    PutConversation,
    PutEntry,
    PutTask,
)
from tests.deadlines import WAIT
from tests.storage.sqlite_support import ROOT, checked_stores, entry, pragma, query


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """Open stores in ``tmp_path``; afterwards close them and check every file's integrity."""
    async with checked_stores(tmp_path) as open_store:
        yield open_store


@pytest.fixture
def traced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every SQL statement run by connections opened during the test, in order."""
    statements: list[str] = []
    connect = sqlite3.connect

    def tracing_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn: sqlite3.Connection = connect(*args, **kwargs)
        conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(sqlite3, "connect", tracing_connect)
    return statements


# -- configuration ---------------------------------------------------------------------


@pytest.mark.parametrize(("level", "value"), [("NORMAL", 1), ("FULL", 2)])
async def test_open_asserts_wal_and_the_requested_synchronous_level(
    stores: Callable[..., Any], level: str, value: int
) -> None:
    storage = await stores(synchronous=level, wal_autocheckpoint=64)
    assert await pragma(storage, "journal_mode") == "wal"
    assert await pragma(storage, "synchronous") == value
    assert await pragma(storage, "wal_autocheckpoint") == 64
    assert await pragma(storage, "busy_timeout") == 10_000
    assert await pragma(storage, "foreign_keys") == 1
    assert storage.synchronous == level


async def test_an_unknown_synchronous_level_is_refused_before_anything_opens(
    tmp_path: Path,
) -> None:
    with pytest.raises(ValueError, match="NORMAL"):
        await SqliteStorage.open(tmp_path / "s.sqlite", synchronous="OFF")  # type: ignore[arg-type]
    assert not (tmp_path / "s.sqlite.lock").exists()


def test_a_connection_that_cannot_use_wal_is_refused() -> None:
    from pi_durable_tui.storage.sqlite._schema import configure

    conn = sqlite3.connect(":memory:", isolation_level=None)
    with pytest.raises(Exception, match="PRAGMA journal_mode is 'memory', not 'wal'"):
        configure(conn, Path(":memory:"), "NORMAL", None, 1000)


# -- transactions (R129, reliability.md 9.3, row L2) -------------------------------------


async def test_every_write_is_inside_one_begin_immediate_transaction_per_commit(
    stores: Callable[..., Any], traced: list[str]
) -> None:
    storage = await stores()
    traced.clear()
    assert await storage.commit([ROOT, entry(2)]) == 1
    with pytest.raises(StorageRejected):
        await storage.commit([entry(3), entry(4, conversation_id=77)])
    assert await storage.commit([entry(5)]) == 2
    assert await storage.commit([]) == 3
    begins = [s for s in traced if s.startswith("BEGIN")]
    assert begins == ["BEGIN IMMEDIATE"] * 4
    ends = [s for s in traced if s in ("COMMIT", "ROLLBACK")]
    assert ends == ["COMMIT", "ROLLBACK", "COMMIT", "COMMIT"]
    inside = False
    for statement in traced:
        if statement == "BEGIN IMMEDIATE":
            assert not inside
            inside = True
        elif statement in ("COMMIT", "ROLLBACK"):
            inside = False
        elif statement.split()[0] in ("INSERT", "UPDATE", "DELETE"):
            assert inside, f"write outside a transaction: {statement}"


async def test_a_commit_costs_one_hop_to_the_worker_thread(
    stores: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = await stores()
    await storage.commit([ROOT])
    hops = 0
    execute = aiosqlite.Connection._execute

    async def counting(self: aiosqlite.Connection, fn: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal hops
        hops += 1
        return await execute(self, fn, *args, **kwargs)  # type: ignore[no-untyped-call]

    monkeypatch.setattr(aiosqlite.Connection, "_execute", counting)
    await storage.commit([entry(2), entry(3), PutConversation(ConversationRecord(4))])
    assert hops == 1
    await storage.scan_entries(1)
    assert hops == 2


def _task(status: str) -> PutTask:
    return PutTask(TaskRecord(3, 1, "job", 1, None, {"status": status, "checkpoint": {}}))


def _step(version: int) -> ChangeDocument:
    return ChangeDocument(4, 1, ops=[{"op": "set", "path": ["n"], "value": version}])


async def test_a_step_on_what_this_store_committed_asks_the_database_nothing(
    stores: Callable[..., Any], traced: list[str]
) -> None:
    storage = await stores()
    document = CreateDocument(4, "pi.live", ConversationScope(1), 1, {"n": 0})
    await storage.commit([ROOT, _task("pending"), document])
    traced.clear()
    await storage.commit([_task("running"), _step(1)])
    # The task's conversation, the document's record and its version were learned
    # from the commits that wrote them (issue 14).
    assert [s for s in traced if s.startswith("SELECT")] == []
    await storage.close()

    reopened = await stores()
    traced.clear()
    await reopened.commit([_task("pending"), _step(2)])
    asked = " ".join(s for s in traced if s.startswith("SELECT"))
    for lookup in ("conversation_id FROM tasks", "record FROM documents", "document_revisions"):
        assert lookup in asked  # unknown to a new connection, so read from the file
    read = await reopened.document(4)
    assert read is not None
    assert read.value == {"n": 2}
    moved = TaskRecord(3, 2, "job", 1, None, {"status": "pending", "checkpoint": {}})
    with pytest.raises(StorageRejected, match="cannot move to another conversation"):
        await reopened.commit([PutConversation(ConversationRecord(2)), PutTask(moved)])


async def test_a_rejected_batch_rolls_back_and_consumes_no_seq(
    stores: Callable[..., Any],
) -> None:
    storage = await stores()
    assert await storage.commit([ROOT]) == 1
    with pytest.raises(StorageRejected, match="Conversation 9 does not exist"):
        await storage.commit([PutConversation(ConversationRecord(5)), entry(6, conversation_id=9)])
    cycle: dict[str, Any] = {}
    cycle["self"] = cycle
    with pytest.raises(StorageRejected, match="not JSON"):
        await storage.commit([PutEntry(EntryRecord(7, 1, "message", data=cycle))])
    assert await storage.conversation(5) is None
    assert await storage.commit([entry(8)]) == 2
    assert storage.last_seq == 2


async def test_a_sqlite_error_after_begin_rolls_back_and_is_not_a_rejection(
    stores: Callable[..., Any],
) -> None:
    storage = await stores()
    await storage.commit([ROOT])
    await run_on_worker(
        storage._db,
        lambda conn: conn.execute(
            "CREATE TRIGGER boom BEFORE INSERT ON entries WHEN NEW.record LIKE '%boom%'"
            " BEGIN SELECT RAISE(ABORT, 'disk says no'); END"
        ),
    )
    with pytest.raises(sqlite3.IntegrityError, match="disk says no") as caught:
        await storage.commit([PutConversation(ConversationRecord(2)), entry(3, kind="boom")])
    assert not isinstance(caught.value, StorageRejected)
    assert await storage.conversation(2) is None
    assert await storage.commit([entry(4)]) == 2  # rolled back for sure: not poisoned


# -- seqs and IDs across reopen (R-1.2, R129) ---------------------------------------------


async def test_seqs_and_the_mint_floor_survive_reopen(stores: Callable[..., Any]) -> None:
    storage = await stores()
    await storage.commit([ROOT])
    minted = [storage.mint_id() for _ in range(3)]
    await storage.commit([entry(100)])
    assert storage.mint_id() == 101
    await storage.close()
    reopened = await stores()
    assert reopened.last_seq == 2
    assert reopened.mint_id() == 101
    assert minted == [2, 3, 4]


# -- schema, metadata and damage at open ---------------------------------------------------


async def test_a_store_whose_metadata_row_is_gone_fails_to_open(
    stores: Callable[..., Any], tmp_path: Path
) -> None:
    storage = await stores()
    await storage.commit([ROOT])
    await storage.close()
    with sqlite3.connect(tmp_path / "session.sqlite") as conn:
        conn.execute("DELETE FROM durable_metadata")
    for _ in range(2):  # the failed open released its lock and its thread
        with pytest.raises(StorageCorrupted, match=r"^Durable SQLite metadata is missing$"):
            await SqliteStorage.open(tmp_path / "session.sqlite")


async def test_a_file_that_is_not_a_database_fails_to_open_naming_its_path(
    tmp_path: Path,
) -> None:
    path = tmp_path / "notes.sqlite"
    path.write_text("these are my notes, not a database\n" * 200)
    before = set(threading.enumerate())
    with pytest.raises(StorageCorrupted, match="not a SQLite database") as caught:
        await SqliteStorage.open(path)
    assert str(path) in str(caught.value)
    assert "move it aside" in str(caught.value)
    for thread in set(threading.enumerate()) - before:  # the worker of the failed open
        thread.join(timeout=WAIT)
        assert not thread.is_alive()


async def test_a_database_of_another_application_is_not_mistaken_for_a_store(
    tmp_path: Path,
) -> None:
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE bookmarks (url TEXT)")
    with pytest.raises(StorageCorrupted, match="not a pidurable store"):
        await SqliteStorage.open(path)


async def test_damage_to_the_metadata_table_fails_the_cheap_check_at_open(
    stores: Callable[..., Any], tmp_path: Path
) -> None:
    storage = await stores("damaged.sqlite")
    await storage.commit([ROOT])
    await storage.close()
    path = tmp_path / "damaged.sqlite"
    with sqlite3.connect(path) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        (root,) = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'durable_metadata'"
        ).fetchone()
    with path.open("r+b") as file:
        file.seek((root - 1) * page_size)
        file.write(b"\xff" * page_size)
    with pytest.raises(StorageCorrupted, match=str(path)):
        await SqliteStorage.open(path)
    path.unlink()  # damaged on purpose: nothing for the integrity check to look at


async def test_a_store_from_a_newer_schema_is_refused_naming_both_versions(
    stores: Callable[..., Any], tmp_path: Path
) -> None:
    storage = await stores()
    await storage.close()
    with sqlite3.connect(tmp_path / "session.sqlite") as conn:
        conn.execute("UPDATE durable_metadata SET schema_version = 99")
    current = sqlite_schema.schema_version()
    with pytest.raises(UnsupportedSchema, match=f"version 99, newer than version {current}"):
        await SqliteStorage.open(tmp_path / "session.sqlite")


async def test_an_older_store_is_migrated_in_one_transaction_and_keeps_its_data(
    stores: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, traced: list[str]
) -> None:
    storage = await stores()
    await storage.commit([ROOT, entry(2)])
    await storage.close()
    step = Migration("labels", ("CREATE TABLE labels (id INTEGER PRIMARY KEY, name TEXT)",))
    monkeypatch.setattr(sqlite_schema, "MIGRATIONS", [*sqlite_schema.MIGRATIONS, step])
    traced.clear()
    migrated = await stores()
    assert await pragma(migrated, "user_version") == 0
    version = len(sqlite_schema.MIGRATIONS)
    assert await query(migrated, "SELECT schema_version FROM durable_metadata") == version
    assert (await migrated.entry(2)) is not None
    assert await migrated.commit([entry(3)]) == 2
    start = traced.index("BEGIN IMMEDIATE")
    assert traced[start + 1].startswith("CREATE TABLE labels")
    assert traced[start + 3] == "COMMIT"


async def test_a_failing_migration_leaves_the_store_at_its_old_version(
    stores: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    storage = await stores()
    await storage.commit([ROOT])
    await storage.close()
    old = sqlite_schema.schema_version()
    broken = Migration("broken", ("CREATE TABLE fine (x)", "CREATE TABLE entries (x)"))
    monkeypatch.setattr(sqlite_schema, "MIGRATIONS", [*sqlite_schema.MIGRATIONS, broken])
    pattern = f"from schema version {old} to {old + 1} \\(broken\\) failed"
    with pytest.raises(Exception, match=pattern):
        await SqliteStorage.open(tmp_path / "session.sqlite")
    monkeypatch.undo()
    with sqlite3.connect(tmp_path / "session.sqlite") as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        assert "fine" not in tables
        assert conn.execute("SELECT schema_version FROM durable_metadata").fetchone() == (old,)


async def test_reopen_reads_the_metadata_and_never_the_history(
    stores: Callable[..., Any], traced: list[str]
) -> None:
    storage = await stores()
    await storage.commit([ROOT])
    for start in range(2, 2000, 200):
        await storage.commit([entry(i) for i in range(start, start + 200)])
    await storage.close()
    traced.clear()
    reopened = await stores()
    assert reopened.last_seq == 11
    tables = ("entries", "tasks", "submissions", "documents", "conversations")
    for statement in traced:
        if statement == sqlite_schema.NEWEST_ROWS:
            continue  # the right edge of each table's key, checked below
        words = statement.replace("(", " ").replace(")", " ").split()
        assert not any(table in words for table in tables), statement
        assert "COUNT" not in statement.upper()
    assert "PRAGMA quick_check(durable_metadata)" in traced
    assert sqlite_schema.NEWEST_ROWS in traced
    plan = await run_on_worker(
        reopened._db,
        lambda conn: conn.execute(f"EXPLAIN QUERY PLAN {sqlite_schema.NEWEST_ROWS}").fetchall(),
    )
    # One row from the top of each key: a SCAN here only reads the newest entry (LIMIT 1).
    allowed = ("SCAN entries", "SCAN CONSTANT ROW")
    assert all(
        step[3].startswith(("SEARCH", "SCALAR SUBQUERY")) or step[3] in allowed for step in plan
    ), plan


# -- cancellation (reliability.md 9.7, R8) ---------------------------------------------------


async def test_a_cancelled_commit_lands_completely_and_the_store_stays_consistent(
    stores: Callable[..., Any],
) -> None:
    storage = await stores()
    await storage.commit([ROOT])
    gate = threading.Event()
    blocker = asyncio.ensure_future(run_on_worker(storage._db, lambda conn: gate.wait(5)))
    commit = asyncio.ensure_future(storage.commit([entry(2), entry(3), entry(4)]))
    await asyncio.sleep(0.01)
    commit.cancel()
    with pytest.raises(asyncio.CancelledError):
        await commit
    gate.set()
    await blocker
    page = await storage.scan_entries(1)
    assert [stored.entry.id for stored in page.items] == [4, 3, 2]
    assert storage.last_seq == 2
    assert storage.mint_id() == 5
    assert await storage.commit([entry(5)]) == 3


async def test_a_cancelled_rejected_commit_rolls_back_and_consumes_no_seq(
    stores: Callable[..., Any],
) -> None:
    storage = await stores()
    await storage.commit([ROOT])
    gate = threading.Event()
    blocker = asyncio.ensure_future(run_on_worker(storage._db, lambda conn: gate.wait(5)))
    commit = asyncio.ensure_future(storage.commit([entry(2), entry(3, conversation_id=9)]))
    await asyncio.sleep(0.01)
    commit.cancel()
    gate.set()
    await blocker
    with pytest.raises(asyncio.CancelledError):
        await commit
    assert await storage.entry(2) is None
    assert await storage.commit([entry(2)]) == 2


async def test_close_waits_for_a_commit_whose_caller_was_cancelled(
    stores: Callable[..., Any], tmp_path: Path
) -> None:
    storage = await stores()
    await storage.commit([ROOT])
    commit = asyncio.ensure_future(storage.commit([entry(2)]))
    await asyncio.sleep(0)
    commit.cancel()
    await storage.close()
    reopened = await stores()
    assert (reopened.last_seq, await reopened.entry(2) is not None) in ((2, True), (1, False))


# -- lifecycle ---------------------------------------------------------------------------------


async def test_close_is_idempotent_truncates_the_wal_and_later_calls_raise(
    stores: Callable[..., Any], tmp_path: Path
) -> None:
    storage = await stores()
    await storage.commit([ROOT, entry(2)])
    assert (tmp_path / "session.sqlite-wal").stat().st_size > 0
    await storage.close()
    await storage.close()
    wal = tmp_path / "session.sqlite-wal"
    assert not wal.exists() or wal.stat().st_size == 0
    with pytest.raises(StorageClosed):
        await storage.commit([entry(3)])
    with pytest.raises(StorageClosed):
        await storage.entry(2)
    with pytest.raises(StorageClosed):
        storage.mint_id()


async def test_check_integrity_reports_a_sound_store_as_no_problems(
    stores: Callable[..., Any],
) -> None:
    storage = await stores()
    await storage.commit([ROOT, entry(2)])
    assert await storage.check_integrity() == []


# -- the private aiosqlite API this backend relies on -------------------------------------------


async def test_the_aiosqlite_internals_this_backend_uses_still_exist(tmp_path: Path) -> None:
    """If this fails, aiosqlite changed: fix ``run_on_worker`` before raising the pin."""
    assert aiosqlite.__version__.startswith("0.22."), aiosqlite.__version__
    execute = aiosqlite.Connection._execute
    assert inspect.iscoroutinefunction(execute)
    assert list(inspect.signature(execute).parameters) == ["self", "fn", "args", "kwargs"]
    assert isinstance(inspect.getattr_static(aiosqlite.Connection, "_conn"), property)
    async with aiosqlite.connect(tmp_path / "probe.sqlite") as db:
        main = threading.get_ident()
        worker, conn = await run_on_worker(db, lambda c: (threading.get_ident(), c))
        assert worker != main
        assert isinstance(conn, sqlite3.Connection)
        order: list[str] = []
        first = asyncio.ensure_future(run_on_worker(db, lambda c: order.append("first")))
        await db.execute("SELECT 1")
        await first
        assert order == ["first"]  # one FIFO queue with the public calls
        gate = threading.Event()
        blocker = asyncio.ensure_future(run_on_worker(db, lambda c: gate.wait(5)))
        queued = asyncio.ensure_future(run_on_worker(db, lambda c: order.append("ran")))
        await asyncio.sleep(0)
        queued.cancel()
        gate.set()
        await blocker
        await db.execute("SELECT 1")
        assert order == ["first", "ran"]  # cancelling the caller does not cancel the work


def test_a_process_that_raises_with_a_store_left_open_still_exits(tmp_path: Path) -> None:
    program = (
        "import asyncio\n"
        "from pi_durable_tui.storage import SqliteStorage\n"
        "async def main() -> None:\n"
        f"    await SqliteStorage.open({str(tmp_path / 'left-open.sqlite')!r})\n"
        "    raise RuntimeError('a bug left the store open')\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 1
    assert "a bug left the store open" in done.stderr
