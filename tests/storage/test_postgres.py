"""What PostgresStorage adds to the contract: its lock, many stores, failures, secrets.

The shared contract runs in ``test_conformance``; these tests cover what is
PostgreSQL's own (DESIGN.md sections 4 and 8; reliability.md 9.4, row L1): the
advisory single-writer lock against real processes (refused at once, naming the
holder's host and pid; a SIGKILLed holder leaves no stale lock; close then
reopen at once), many stores in one database, reopen reading only the newest
rows, a lost connection poisoning the store, and the URL's password never
appearing in a message. Children talk over pipes, as in ``test_lock``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import asyncpg
import pytest

from pi_durable_tui.storage import (
    PostgresStorage,
    StorageError,
    StoragePoisoned,
    StoreLocked,
)
from pi_durable_tui.storage.postgres import redact
from pi_durable_tui.storage.records import ConversationRecord, EntryRecord
from pi_durable_tui.storage.writes import PutConversation, PutEntry

HOLD = """
import asyncio, os, sys
from pi_durable_tui.storage import PostgresStorage
from pi_durable_tui.storage.records import ConversationRecord
from pi_durable_tui.storage.writes import PutConversation

async def main():
    storage = await PostgresStorage.open(os.environ["URL"], sys.argv[1])
    await storage.commit([] if storage.last_seq else [PutConversation(ConversationRecord(1))])
    print("held", flush=True)
    sys.stdin.read()

asyncio.run(main())
"""

ROOT = PutConversation(ConversationRecord(1))


def entry(entry_id: int) -> PutEntry:
    return PutEntry(EntryRecord(entry_id, 1, "note", data={"n": entry_id}))


@pytest.fixture
def holders(postgres_url: str) -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=10)


def hold(url: str, name: str, holders: list[subprocess.Popen[str]]) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(HOLD), name],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "URL": url},
    )
    holders.append(process)
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if line != "held":
        process.kill()
        pytest.fail(f"the holder did not start: {process.communicate(timeout=10)[1]}")
    return process


async def test_a_second_writer_in_another_process_is_refused_naming_the_holders_host_and_pid(
    postgres_tcp_url: str, store_name: str, holders: list[subprocess.Popen[str]]
) -> None:
    holder = hold(postgres_tcp_url, store_name, holders)
    with pytest.raises(StoreLocked) as refused:
        await PostgresStorage.open(postgres_tcp_url, store_name)
    message = str(refused.value)
    where = redact(postgres_tcp_url)
    assert message == (
        f"Session is already open in another process: {store_name} in {where} "
        f"(held by {socket.gethostname()} pid {holder.pid})"
    )
    assert ":***@127.0.0.1:" in where
    assert "\n" not in message


async def test_a_holder_killed_with_sigkill_leaves_no_stale_lock(
    postgres_url: str, store_name: str, holders: list[subprocess.Popen[str]]
) -> None:
    for round_ in range(2):
        holder = hold(postgres_url, store_name, holders)
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=10)
        storage = await PostgresStorage.open(postgres_url, store_name)
        assert storage.last_seq == 2 * round_ + 1  # the holder's commit survived it
        await storage.commit([])
        await storage.close()


async def test_a_second_open_in_the_same_process_is_refused_and_a_close_frees_it_at_once(
    postgres_url: str, store_name: str
) -> None:
    for round_ in range(3):
        storage = await PostgresStorage.open(postgres_url, store_name)
        with pytest.raises(StoreLocked, match="Session is already open in another process"):
            await PostgresStorage.open(postgres_url, store_name)
        await storage.commit([entry(10 + round_)] if round_ else [ROOT])
        await storage.close()
        await storage.close()  # idempotent
    storage = await PostgresStorage.open(postgres_url, store_name)
    assert storage.last_seq == 3
    await storage.close()


async def test_many_stores_share_one_database_without_seeing_each_other(
    postgres_url: str, store_name: str
) -> None:
    first = await PostgresStorage.open(postgres_url, f"{store_name}/a")
    second = await PostgresStorage.open(postgres_url, f"{store_name}/b")
    try:
        assert await first.commit([ROOT, entry(5)]) == 1
        assert await second.commit([ROOT]) == 1
        assert await second.commit([entry(5)]) == 2  # the same IDs, another store
        assert (await first.entry(5)) is not None
        assert [e.commit_seq for e in (await second.scan_entries(1)).items] == [2]
        assert first.mint_id() == second.mint_id() == 6
    finally:
        await first.close()
        await second.close()


async def test_reopen_takes_the_newest_rows_not_the_history(
    postgres_url: str, store_name: str
) -> None:
    storage = await PostgresStorage.open(postgres_url, store_name)
    await storage.commit([ROOT])
    for first in range(2, 502, 100):
        await storage.commit([entry(n) for n in range(first, first + 100)])
    await storage.commit([])  # no entry: the store row carries this seq
    await storage.close()
    storage = await PostgresStorage.open(postgres_url, store_name)
    try:
        assert storage.last_seq == 7
        assert storage.mint_id() == 502
        assert await storage.check_integrity() == []
    finally:
        await storage.close()


async def test_a_lost_connection_poisons_the_store_and_frees_its_lock(
    postgres_tcp_url: str, store_name: str
) -> None:
    storage = await PostgresStorage.open(postgres_tcp_url, store_name)
    await storage.commit([ROOT])
    admin = await asyncpg.connect(postgres_tcp_url)
    try:
        # The server ends the store's backend, as a restart or a network cut would.
        await admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
            f"pidurable {socket.gethostname()} pid {os.getpid()}"[:63],
        )
    finally:
        await admin.close()
    with pytest.raises(StorageError) as failed:
        await storage.commit([entry(2)])
    assert postgres_tcp_url not in str(failed.value)
    with pytest.raises(StoragePoisoned, match="reopen it"):
        await storage.commit([entry(3)])
    with pytest.raises(StoragePoisoned):
        await storage.entry(2)
    await storage.close()
    again = await PostgresStorage.open(postgres_tcp_url, store_name)  # the lock went with it
    try:
        assert again.last_seq in (1, 2)  # the lost commit may or may not have landed
    finally:
        await again.close()


async def test_a_cancelled_read_leaves_the_connection_usable(
    postgres_url: str, store_name: str
) -> None:
    storage = await PostgresStorage.open(postgres_url, store_name)
    try:
        await storage.commit([ROOT, entry(2)])
        reading = asyncio.ensure_future(storage.entry(2))
        await asyncio.sleep(0)
        reading.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reading
        found = await storage.entry(2)
        assert found is not None
        assert found.entry.id == 2
    finally:
        await storage.close()


async def test_an_unreachable_server_is_one_error_without_the_password(
    postgres_url: str,
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"postgresql://pidurable:hunter2secret@127.0.0.1:{port}/postgres"
    with pytest.raises(StorageError) as failed:
        await PostgresStorage.open(url, "any", connect_timeout=5)
    message = str(failed.value)
    assert "hunter2secret" not in message
    assert f"Cannot connect to PostgreSQL at postgresql://pidurable:***@127.0.0.1:{port}" in message


async def test_a_wrong_password_is_refused_without_showing_it(postgres_tcp_url: str) -> None:
    wrong = postgres_tcp_url.replace("@127.0.0.1", "x@127.0.0.1")
    with pytest.raises(StorageError) as failed:
        await PostgresStorage.open(wrong, "any")
    password = wrong.split(":")[2].split("@")[0]
    assert password not in str(failed.value)
    assert "password authentication failed" in str(failed.value)


def test_redact_hides_the_password_in_the_user_part_and_in_the_query() -> None:
    assert redact("postgresql://me:s3cret@db:5432/x") == "postgresql://me:***@db:5432/x"
    assert redact("postgres://me@db/x") == "postgres://me@db/x"
    assert redact("postgresql://db/x?password=s3cret&sslmode=require") == (
        "postgresql://db/x?password=***&sslmode=require"
    )
    assert redact("not a url with s3cret") == "***"


async def test_a_bad_store_name_is_refused_before_connecting(postgres_url: str) -> None:
    for name in ("", "a\x00b", "a\udcffb"):
        with pytest.raises(ValueError, match="store name"):
            await PostgresStorage.open(postgres_url, name)
