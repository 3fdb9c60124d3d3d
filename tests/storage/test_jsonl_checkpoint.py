"""The checkpoint of a JSONL store: used when sound, rejected otherwise (jsonl_checkpoint).

A reopen after a clean close starts from the checkpoint and parses none of the
log before it; a reopen after more commits replays only the tail. A torn,
damaged, stale, foreign or newer-format checkpoint is rejected, removed and
listed in ``repairs``, and the store reads exactly as after a full replay. A
process killed between writing a checkpoint and renaming it, or killed after
periodic checkpoints, leaves a store that opens. A store without a checkpoint
(the previous format) opens by full replay and gets one at its next close. The
conformance suite and the differential state machine run once more with a
checkpoint at every close and every few commits.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import sys
import tempfile
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from pi_durable_tui.storage import EntryRecord, PutEntry, Write
from pi_durable_tui.storage.conformance import StorageConformance
from pi_durable_tui.storage.jsonl import CheckpointPolicy, JsonlStorage
from pi_durable_tui.storage.jsonl import _replay as jsonl_replay
from pi_durable_tui.storage.jsonl._checkpoint import CHECKPOINT_FILE, TEMPORARY_FILE
from pi_durable_tui.storage.jsonl._checkpoint import load as load_checkpoint
from pi_durable_tui.storage.jsonl._checkpoint import snapshot as take_snapshot
from pi_durable_tui.storage.jsonl._checkpoint import write as write_checkpoint
from pi_durable_tui.storage.jsonl._files import parse_main_line
from pi_durable_tui.storage.protocol import Storage
from tests.storage.jsonl_support import dump, feed, memory_after, workload
from tests.storage.test_stateful import COMMON, StorageMachine

BATCHES = workload()
N = len(BATCHES)
AT_CLOSE = CheckpointPolicy(every=1 << 40, at_close=0)
"""A checkpoint at every close that follows a commit, none in between."""
NEVER = CheckpointPolicy(every=1 << 40, at_close=1 << 40)
"""Read a checkpoint, never write one."""
OFTEN = CheckpointPolicy(every=1500, at_close=0)
"""A checkpoint every few commits of the workload, and at close."""


async def build(
    path: Path, first: int, rest: int = N, *, batches: list[list[Write]] = BATCHES
) -> None:
    """Commit ``batches[:first]`` and close with a checkpoint, then ``[first:rest]`` without."""
    store = await JsonlStorage.open(path, checkpoints=AT_CLOSE)
    await feed(store, batches[:first])
    await store.close()
    if rest > first:
        store = await JsonlStorage.open(path, checkpoints=NEVER)
        await feed(store, batches[first:rest])
        await store.close()


async def expect_same(store: JsonlStorage, batches: list[list[Write]]) -> None:
    assert await dump(store) == await dump(await memory_after(batches))


def marker_ends(main: bytes) -> list[int]:
    """``marker_ends(main)[k]``: the length of ``main.jsonl`` that confirms commits 1..k."""
    ends, offset = [0], 0
    for line in main.split(b"\n")[:-1]:
        offset += len(line) + 1
        if json.loads(line)["type"] == "commit":
            ends.append(offset)
    return ends


def read_dir(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


# -- using the checkpoint ------------------------------------------------------------------


async def test_reopen_after_a_clean_close_parses_none_of_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await build(tmp_path / "s", N)
    parsed: list[bytes] = []
    real = parse_main_line

    def spy(raw: bytes) -> Any:
        parsed.append(raw)
        return real(raw)

    monkeypatch.setattr(jsonl_replay, "parse_main_line", spy)
    store = await JsonlStorage.open(tmp_path / "s", checkpoints=NEVER)
    size = (tmp_path / "s" / "main.jsonl").stat().st_size
    assert store.recovery.checkpoint_seq == N
    assert store.recovery.replayed_from == size
    assert (store.recovery.replayed_lines, store.recovery.sidecars_read) == (0, 0)
    assert parsed == []
    assert store.repairs == ()
    await expect_same(store, BATCHES)
    assert store.mint_id() == (await memory_after(BATCHES)).mint_id()
    await store.close()


@pytest.mark.parametrize("first", range(1, N))
async def test_reopen_replays_only_the_tail_after_the_checkpoint(
    tmp_path: Path, first: int
) -> None:
    await build(tmp_path / "s", first)
    main = (tmp_path / "s" / "main.jsonl").read_bytes()
    store = await JsonlStorage.open(tmp_path / "s", checkpoints=NEVER)
    assert store.recovery.checkpoint_seq == first
    assert store.recovery.replayed_from == marker_ends(main)[first]
    tail = main[store.recovery.replayed_from :]
    assert store.recovery.replayed_lines == tail.count(b"\n")
    assert store.repairs == ()
    await expect_same(store, BATCHES)
    await store.close()


async def test_a_page_scan_reads_only_its_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    filler: list[list[Write]] = [
        [
            PutEntry(EntryRecord(1000 + 10 * b + i, 1, "pi.note", data={"n": "x" * 200}))
            for i in range(10)
        ]
        for b in range(50)
    ]
    await build(tmp_path / "s", N + 50, batches=[*BATCHES, *filler])
    store = await JsonlStorage.open(tmp_path / "s", checkpoints=NEVER)
    read: list[int] = []
    real = os.pread

    def pread(fd: int, length: int, offset: int) -> bytes:
        read.append(length)
        return real(fd, length, offset)

    monkeypatch.setattr(os, "pread", pread)
    page = await store.scan_entries(1, limit=3)
    assert [stored.entry.id for stored in page.items] == [1499, 1498, 1497]
    assert len(read) == 1  # three lines, in one positioned read
    assert sum(read) < 4 * 300
    await store.close()


# -- rejecting it ------------------------------------------------------------------------


def _rewrite(path: Path, change: Any) -> None:
    """Rewrite a checkpoint's header with ``change`` and a valid checksum."""
    data = path.read_bytes()
    magic_end = data.index(b"\n") + 1
    header_end = data.index(b"\n", magic_end) + 1
    header = json.loads(data[magic_end:header_end])
    change(header)
    head = data[:magic_end] + json.dumps(header, separators=(",", ":")).encode() + b"\n"
    body = head + data[header_end:-9]
    path.write_bytes(body + b"%08x\n" % zlib.crc32(body))


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40
    path.write_bytes(bytes(data))


def _wrong_seq(path: Path) -> None:
    """Rewrite the checkpoint, checksum and anchor valid, naming the commit before its own."""
    loaded = load_checkpoint(path)
    assert loaded is not None
    taken = take_snapshot(loaded.index, loaded.offset)
    wrong = dataclasses.replace(taken, codes={**taken.codes, "seq": taken.seq - 1})
    write_checkpoint(path, wrong, fsync=False)


DAMAGES = {
    "empty": lambda p: (p / CHECKPOINT_FILE).write_bytes(b""),
    "torn": lambda p: (p / CHECKPOINT_FILE).write_bytes((p / CHECKPOINT_FILE).read_bytes()[:-20]),
    "magic only": lambda p: (p / CHECKPOINT_FILE).write_bytes(b"pidurable jsonl checkpoint\n"),
    "flipped byte": lambda p: _flip(p / CHECKPOINT_FILE),
    "newer format": lambda p: _rewrite(p / CHECKPOINT_FILE, lambda h: h.update(format=2)),
    "other byte order": lambda p: _rewrite(
        p / CHECKPOINT_FILE,
        lambda h: h.update(byteorder="big" if sys.byteorder == "little" else "little"),
    ),
    "log shorter than its offset": lambda p: (p / "main.jsonl").write_bytes(
        (p / "main.jsonl").read_bytes()[
            : (p / "main.jsonl").read_bytes().rstrip(b"\n").rfind(b"\n") + 1
        ]
    ),
    "another log": None,  # checkpoint copied from a store whose last commit differs
    "seq not the marker's": None,
}


@pytest.mark.parametrize("damage", list(DAMAGES))
async def test_an_unusable_checkpoint_is_removed_and_everything_replayed(
    tmp_path: Path, damage: str
) -> None:
    path = tmp_path / "s"
    batches = BATCHES
    await build(path, N)
    if damage == "another log":
        other = tmp_path / "other"
        batches = [*BATCHES[:-1], [PutEntry(EntryRecord(99, 1, "pi.other"))], BATCHES[-1]]
        await build(other, N + 1, batches=batches)
        (other / CHECKPOINT_FILE).write_bytes((path / CHECKPOINT_FILE).read_bytes())
        path = other
    elif damage == "seq not the marker's":
        _wrong_seq(path)
    else:
        damage_it = DAMAGES[damage]
        assert damage_it is not None
        damage_it(path)
    if damage == "log shorter than its offset":
        batches = BATCHES[:-1]
    store = await JsonlStorage.open(path, checkpoints=AT_CLOSE)
    assert store.recovery.checkpoint_seq is None
    assert store.repairs[0].startswith(f"removed {CHECKPOINT_FILE} (")
    assert store.repairs[0].endswith("; replayed main.jsonl in full")
    assert not (path / CHECKPOINT_FILE).exists()
    await expect_same(store, batches)
    await store.commit([PutEntry(EntryRecord(500, 1, "pi.after"))])
    await store.close()
    again = await JsonlStorage.open(path, checkpoints=NEVER)  # the close wrote a new one
    assert again.recovery.checkpoint_seq == len(batches) + 1
    assert again.repairs == ()
    await expect_same(again, [*batches, [PutEntry(EntryRecord(500, 1, "pi.after"))]])
    await again.close()


async def test_a_store_without_a_checkpoint_opens_and_gets_one(tmp_path: Path) -> None:
    """The previous format: the same files, no index.checkpoint."""
    store = await JsonlStorage.open(tmp_path / "s", checkpoints=None)
    await feed(store, BATCHES)
    await store.close()
    assert CHECKPOINT_FILE not in read_dir(tmp_path / "s")
    store = await JsonlStorage.open(tmp_path / "s", checkpoints=AT_CLOSE)
    assert store.recovery.checkpoint_seq is None
    assert store.repairs == ()
    await expect_same(store, BATCHES)
    await store.commit([])  # the log grows, so close writes a checkpoint
    await store.close()
    store = await JsonlStorage.open(tmp_path / "s", checkpoints=AT_CLOSE)
    assert store.recovery.checkpoint_seq == N + 1
    await expect_same(store, [*BATCHES, []])
    await store.close()


async def test_small_stores_get_no_checkpoint_by_default(tmp_path: Path) -> None:
    store = await JsonlStorage.open(tmp_path / "s")
    await feed(store, BATCHES)
    await store.close()
    assert CHECKPOINT_FILE not in read_dir(tmp_path / "s")


async def test_periodic_checkpoints_while_open(tmp_path: Path) -> None:
    store = await JsonlStorage.open(tmp_path / "s", checkpoints=OFTEN)
    written = []
    for batch in BATCHES:
        await store.commit(batch)
        if (tmp_path / "s" / CHECKPOINT_FILE).exists():
            written.append(store.last_seq)
    assert written
    assert written[0] < N
    await store.close()


@pytest.mark.parametrize("fsync", [False, True])
async def test_reopen_after_commits_written_through_the_checkpoint(
    tmp_path: Path, fsync: bool
) -> None:
    """Three sessions, each reopened from the checkpoint the previous close wrote."""
    rounds: list[list[list[Write]]] = [BATCHES]
    for r in (1, 2):
        rounds.append([[PutEntry(EntryRecord(600 + 10 * r + i, 1, "r"))] for i in range(5)])
    committed: list[list[Write]] = []
    for batches in rounds:
        store = await JsonlStorage.open(tmp_path / "s", fsync=fsync, checkpoints=OFTEN)
        assert store.recovery.checkpoint_seq == (store.last_seq or None)
        await expect_same(store, committed)
        await feed(store, batches)
        committed += batches
        await store.close()


# -- crashes around checkpoints --------------------------------------------------------------

CHILD = """
import asyncio, sys
from pi_durable_tui.storage.jsonl import CheckpointPolicy, JsonlStorage
from tests.storage.jsonl_support import workload

async def main():
    first, every, fsync = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "fsync"
    policy = CheckpointPolicy(every=every, at_close=0)
    store = await JsonlStorage.open(sys.argv[1], fsync=fsync, checkpoints=policy)
    for batch in workload()[first:]:
        seq = await store.commit(batch)
        print(seq, flush=True)
    await store.close()

asyncio.run(main())
"""


_CHECKPOINT_SEQS: dict[int, tuple[int, ...]] = {}


async def checkpoint_seqs(every: int) -> tuple[int, ...]:
    """The commits of the workload after which inline checkpoints (every ``every`` bytes) land.

    Found by running the workload in this process and watching the checkpoint
    file after each commit (an inline checkpoint is renamed in before the commit
    returns).
    """
    if every in _CHECKPOINT_SEQS:
        return _CHECKPOINT_SEQS[every]
    seqs: list[int] = []
    with tempfile.TemporaryDirectory() as temporary:
        directory = Path(temporary) / "s"
        store = await JsonlStorage.open(
            directory, checkpoints=CheckpointPolicy(every=every, at_close=1 << 40)
        )
        seen: tuple[int, int] | None = None
        for batch in BATCHES:
            seq = await store.commit(batch)
            try:
                stat = (directory / CHECKPOINT_FILE).stat()
            except FileNotFoundError:
                continue
            if (stat.st_ino, stat.st_mtime_ns) != seen:
                seen = (stat.st_ino, stat.st_mtime_ns)
                seqs.append(seq)
        await store.close()
    _CHECKPOINT_SEQS[every] = tuple(seqs)
    return _CHECKPOINT_SEQS[every]


async def run_child(
    path: Path, failpoint: str, first: int, every: int = 1 << 40, *, fsync: bool = True
) -> list[int]:
    """Commit ``workload()[first:]`` in a child with ``failpoint`` armed; the seqs it printed.

    With ``fsync`` a periodic checkpoint is written on a worker thread while the
    commits go on; without, inline right after the commit that made it due.
    """
    env = {**os.environ, "PIDURABLE_FAILPOINT": failpoint}
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CHILD,
        str(path),
        str(first),
        str(every),
        "fsync" if fsync else "inline",
        env=env,
        cwd=Path(__file__).resolve().parents[2],
        stdout=asyncio.subprocess.PIPE,
    )
    output, _ = await child.communicate()
    assert child.returncode == -signal.SIGKILL
    return [int(line) for line in output.split()]


@pytest.mark.parametrize("earlier", [0, N - 5])
async def test_killed_between_the_checkpoint_write_and_its_rename(
    tmp_path: Path, earlier: int
) -> None:
    path = tmp_path / "s"
    if earlier:
        await build(path, earlier, earlier)
    acknowledged = await run_child(path, "jsonl.checkpoint_before_rename:1", earlier)
    assert acknowledged == list(range(earlier + 1, N + 1))
    assert TEMPORARY_FILE in read_dir(path)
    store = await JsonlStorage.open(path, checkpoints=NEVER)
    assert store.recovery.checkpoint_seq == (earlier or None)
    assert store.repairs == (f"removed stray {TEMPORARY_FILE}",)
    await expect_same(store, BATCHES)
    await store.close()
    assert TEMPORARY_FILE not in read_dir(path)


@pytest.mark.parametrize("hit", [6, 12, 19])
async def test_a_store_killed_after_inline_periodic_checkpoints_opens_from_the_last_one(
    tmp_path: Path, hit: int
) -> None:
    path = tmp_path / "s"
    acknowledged = await run_child(path, f"jsonl.after_marker:{hit}", 0, every=1500, fsync=False)
    assert acknowledged == list(range(1, hit))
    store = await JsonlStorage.open(path, checkpoints=NEVER)
    assert store.last_seq == hit  # the marker landed; nobody was told
    # Written inline after the commit that made each due: the newest is the one
    # due before ``hit`` (the kill came before commit ``hit`` could write one).
    landed = [seq for seq in await checkpoint_seqs(1500) if seq < hit]
    assert landed, "the workload makes a checkpoint due before the kill"
    assert store.recovery.checkpoint_seq == landed[-1]
    assert store.recovery.replayed_lines > 0
    await expect_same(store, BATCHES[:hit])
    await store.close()


@pytest.mark.parametrize("hit", [6, 12, 19])
async def test_a_store_killed_while_checkpoints_are_written_on_a_thread_opens_intact(
    tmp_path: Path, hit: int
) -> None:
    # With fsync the checkpoints are written beside the commits, so the kill may land
    # before, during or after any of them (issue 12: on a busy machine none had
    # landed by commit 6): whichever landed is used, and the store reads the same.
    path = tmp_path / "s"
    acknowledged = await run_child(path, f"jsonl.after_marker:{hit}", 0, every=1500)
    assert acknowledged == list(range(1, hit))
    store = await JsonlStorage.open(path, checkpoints=NEVER)
    assert store.last_seq == hit
    seq = store.recovery.checkpoint_seq
    assert seq is None or seq < hit
    assert store.recovery.replayed_lines > 0
    await expect_same(store, BATCHES[:hit])
    await store.close()


# -- the shared suites, with checkpoints everywhere ----------------------------------------------


class TestJsonlStorageWithCheckpoints(StorageConformance):
    async def open_storage(self, directory: Path) -> Storage:
        return await JsonlStorage.open(directory, checkpoints=CheckpointPolicy(every=1, at_close=0))


class CheckpointMachine(StorageMachine):
    """The differential machine, reopening from a checkpoint written at every close."""

    backend = "jsonl"
    policy = OFTEN

    async def open(self) -> Storage:
        return await JsonlStorage.open(self.directory / "jsonl", checkpoints=self.policy)


class TailMachine(CheckpointMachine):
    """Reopening from periodic checkpoints only, so reopens replay tails."""

    policy = CheckpointPolicy(every=1500, at_close=1 << 40)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("machine", [CheckpointMachine, TailMachine])
def test_the_differential_machine_through_checkpoints(machine: type[StorageMachine]) -> None:
    run_state_machine_as_test(
        machine, settings=settings(COMMON, max_examples=15, stateful_step_count=30)
    )
