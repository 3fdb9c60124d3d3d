"""The single-writer lock, with real processes (DESIGN.md section 4; reliability.md 9.4, row L1).

Children are ``python -c`` snippets that talk over pipes: they print a line when
they are ready or hold the lock, and wait for a line (or for end of input)
before going on, so no test sleeps to synchronise.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_durable_tui.storage.errors import StoreLocked
from pi_durable_tui.storage.lock import StoreLock
from pi_durable_tui.storage.records import ConversationRecord
from pi_durable_tui.storage.sqlite import SqliteStorage
from pi_durable_tui.storage.writes import PutConversation
from tests.deadlines import WAIT

HOLD = """
import sys
from pi_durable_tui.storage.lock import StoreLock
lock = StoreLock.acquire(sys.argv[1])
print("held", flush=True)
sys.stdin.read()
"""

HOLD_STORE = """
import asyncio, sys
from pi_durable_tui.storage.records import ConversationRecord
from pi_durable_tui.storage.sqlite import SqliteStorage
from pi_durable_tui.storage.writes import PutConversation

async def main():
    storage = await SqliteStorage.open(sys.argv[1])
    await storage.commit([PutConversation(ConversationRecord(1))])
    print("held", flush=True)
    sys.stdin.read()

asyncio.run(main())
"""

TRY_OPEN = """
import asyncio, sys, time
from pi_durable_tui.storage.errors import StoreLocked
from pi_durable_tui.storage.sqlite import SqliteStorage

async def main():
    started = time.perf_counter()
    try:
        await SqliteStorage.open(sys.argv[1])
    except StoreLocked as error:
        print(f"{time.perf_counter() - started:.4f}", error, flush=True)

asyncio.run(main())
"""

RACE = """
import sys
from pi_durable_tui.storage.errors import StoreLocked
from pi_durable_tui.storage.lock import StoreLock
held = []  # every lock won stays held, so a loser can never win a round late
print("ready", flush=True)
for line in sys.stdin:
    try:
        held.append(StoreLock.acquire(line.strip()))
        print("won", flush=True)
    except StoreLocked:
        print("lost", flush=True)
"""


def spawn(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def expect(process: subprocess.Popen[str], line: str) -> None:
    assert process.stdout is not None
    got = process.stdout.readline().strip()
    if got != line:
        process.kill()
        _, stderr = process.communicate(timeout=WAIT)
        pytest.fail(f"expected {line!r} from the child, got {got!r}; stderr:\n{stderr}")


def finish(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.communicate(timeout=WAIT)


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[str]]]:
    """Processes started by the test; killed at the end if still running."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=WAIT)


def test_a_second_process_is_refused_at_once_with_a_message_naming_the_store(
    tmp_path: Path, children: list[subprocess.Popen[str]]
) -> None:
    path = tmp_path / "session.sqlite"
    holder = spawn(HOLD_STORE, str(path))
    children.append(holder)
    expect(holder, "held")
    attempt = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(TRY_OPEN), str(path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    elapsed, message = attempt.stdout.strip().split(" ", 1)
    assert message == f"Session is already open in another process: {path}"
    assert float(elapsed) < 0.1


def test_the_refusal_carries_the_pid_of_the_process_that_holds_the_lock(
    tmp_path: Path, children: list[subprocess.Popen[str]]
) -> None:
    path = tmp_path / "session.sqlite"
    holder = spawn(HOLD, str(path))
    children.append(holder)
    expect(holder, "held")
    with pytest.raises(StoreLocked) as refused:
        StoreLock.acquire(path)
    assert refused.value.pid == holder.pid
    assert str(refused.value) == f"Session is already open in another process: {path}"


def test_a_second_open_in_the_same_process_is_refused_and_works_after_release(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store"
    lock = StoreLock.acquire(path)
    message = f"Session is already open in another process: {path}"
    with pytest.raises(StoreLocked, match=f"^{re.escape(message)}$"):
        StoreLock.acquire(path)
    lock.release()
    lock.release()
    again = StoreLock.acquire(path)
    assert repr(again).endswith("held)")
    again.release()
    assert repr(again).endswith("released)")
    assert (tmp_path / "store.lock").exists()  # never deleted


async def test_a_store_can_be_reopened_in_the_same_process_right_after_close(
    tmp_path: Path,
) -> None:
    path = tmp_path / "session.sqlite"
    for round_ in range(3):
        storage = await SqliteStorage.open(path)
        with pytest.raises(StoreLocked):
            await SqliteStorage.open(path)
        await storage.commit([PutConversation(ConversationRecord(round_ + 1))])
        await storage.close()
    storage = await SqliteStorage.open(path)
    assert storage.last_seq == 3
    await storage.close()


def test_two_processes_racing_to_open_have_exactly_one_winner(
    tmp_path: Path, children: list[subprocess.Popen[str]]
) -> None:
    racers = [spawn(RACE), spawn(RACE)]
    children.extend(racers)
    for racer in racers:
        expect(racer, "ready")
    for race in range(20):
        path = tmp_path / f"race-{race}.sqlite"
        for racer in racers:  # both get the same start line back to back
            assert racer.stdin is not None
            racer.stdin.write(f"{path}\n")
            racer.stdin.flush()
        results = []
        for racer in racers:
            assert racer.stdout is not None
            results.append(racer.stdout.readline().strip())
        assert sorted(results) == ["lost", "won"], f"race {race}: {results}"
    for racer in racers:
        finish(racer)


def test_a_holder_killed_with_sigkill_leaves_no_stale_lock(
    tmp_path: Path, children: list[subprocess.Popen[str]]
) -> None:
    for round_ in range(3):
        path = tmp_path / f"session-{round_}.sqlite"
        holder = spawn(HOLD_STORE, str(path))
        children.append(holder)
        expect(holder, "held")
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=WAIT)
        lock = StoreLock.acquire(path)  # at once: no retry, no wait
        lock.release()


async def test_a_store_reopens_after_its_holder_was_killed_with_its_commits(
    tmp_path: Path, children: list[subprocess.Popen[str]]
) -> None:
    path = tmp_path / "session.sqlite"
    holder = spawn(HOLD_STORE, str(path))
    children.append(holder)
    expect(holder, "held")
    holder.kill()
    holder.wait(timeout=WAIT)
    storage = await SqliteStorage.open(path)
    try:
        assert storage.last_seq == 1
        assert await storage.conversation(1) == ConversationRecord(1)
    finally:
        await storage.close()


def test_processes_spawned_while_holding_the_lock_do_not_inherit_it(
    tmp_path: Path, children: list[subprocess.Popen[str]]
) -> None:
    path = tmp_path / "store"
    lock = StoreLock.acquire(path)
    # close_fds=False: only O_CLOEXEC keeps the lock's descriptor out of the child.
    inheritor = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"],
        stdin=subprocess.PIPE,
        close_fds=False,
    )
    children.append(inheritor)  # type: ignore[arg-type]
    lock.release()
    contender = spawn(HOLD, str(path))
    children.append(contender)
    expect(contender, "held")


def test_the_lock_file_names_the_holder_in_place_and_is_left_alone_when_it_already_does(
    tmp_path: Path,
) -> None:
    store = tmp_path / "s.db"
    lock_file = tmp_path / "s.db.lock"
    lock_file.write_text("99999\n")  # what an older holder's shorter line looks like
    lock = StoreLock.acquire(store)
    lock.release()
    assert int(lock_file.read_text()) == os.getpid()
    inode = lock_file.stat().st_ino
    os.utime(lock_file, ns=(10**9, 10**9))
    lock = StoreLock.acquire(store)
    lock.release()
    assert lock_file.stat().st_mtime_ns == 10**9  # already named this process: not written
    assert lock_file.stat().st_ino == inode
    assert int(lock_file.read_text()) == os.getpid()
