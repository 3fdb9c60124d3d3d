"""``JsonlStorage``: semantics, publication protocol, poisoning and reclamation (R130, R132).

Semantics are checked differentially: the shared workload runs on a
``JsonlStorage`` and a ``MemoryStorage`` side by side, and every read agrees
after every commit and after reopening. The publication order is checked by
tracing every write and flush, and by failpoints that stop a commit between its
steps; poisoning by making writes short or failing.
"""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.storage import (
    ChangeDocument,
    ConversationScope,
    CreateDocument,
    EntryRecord,
    MemoryStorage,
    PutEntry,
    StorageClosed,
    StoragePoisoned,
    StorageRejected,
    StoreLocked,
    Write,
    failpoints,
)
from pi_durable_tui.storage.jsonl import JsonlStorage
from pi_durable_tui.storage.jsonl import _files as jsonl_files
from pi_durable_tui.storage.jsonl import _publish as jsonl_publish
from tests.storage.jsonl_support import (
    A_DOC,
    D_DOC,
    I_DOC,
    L_DOC,
    R_DOC,
    S_DOC,
    TEXT,
    X_DOC,
    append,
    dump,
    entry,
    memory_after,
    workload,
)

BATCHES = workload()


def read_dir(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


def line_count(path: Path) -> int:
    return path.read_bytes().count(b"\n")


@pytest.fixture
def armed() -> Iterator[Any]:
    yield failpoints.rearm
    failpoints.rearm(None)


# -- semantics ---------------------------------------------------------------------------


@pytest.mark.parametrize("fsync", [False, True])
async def test_matches_memory_after_every_commit_and_after_reopen(
    tmp_path: Path, fsync: bool
) -> None:
    store = await JsonlStorage.open(tmp_path / "s", fsync=fsync)
    memory = MemoryStorage()
    for batch in BATCHES:
        assert await store.commit(batch) == await memory.commit(batch)
        assert await dump(store, history=False) == await dump(memory, history=False)
    assert await dump(store) == await dump(memory)
    await store.close()
    reopened = await JsonlStorage.open(tmp_path / "s", fsync=fsync)
    assert reopened.repairs == ()
    assert await dump(reopened) == await dump(memory)
    assert reopened.mint_id() == memory.mint_id()
    await reopened.close()


async def test_rejected_batches_do_no_io_and_consume_no_seq(tmp_path: Path) -> None:
    store = await JsonlStorage.open(tmp_path / "s")
    memory = MemoryStorage()
    for batch in BATCHES[:3]:
        await store.commit(batch)
        await memory.commit(batch)
    before = read_dir(tmp_path / "s")
    bad_batches: list[list[Write]] = [
        [PutEntry(EntryRecord(90, 77, "pi.user"))],
        [entry(91), ChangeDocument(999, 1, base={})],
        [entry(92), PutEntry(EntryRecord(92, 1, "pi.user"))],
        [entry(93, data={"x": float("nan")})],
        [CreateDocument(94, "pi.live", ConversationScope(1), 1, {"text": ""})],
        [append(L_DOC, "x"), append(L_DOC, "y")],
    ]
    for batch in bad_batches:
        with pytest.raises(StorageRejected) as ours:
            await store.commit(batch)
        with pytest.raises(StorageRejected) as reference:
            await memory.commit(batch)
        assert str(ours.value) == str(reference.value)
        assert read_dir(tmp_path / "s") == before
    assert await store.commit([entry(95)]) == 4
    await store.close()


async def test_a_delta_that_does_not_apply_is_rejected_before_io(tmp_path: Path) -> None:
    """The one addition to MemoryStorage's rules: see the jsonl module docstring."""
    store = await JsonlStorage.open(tmp_path / "s")
    for batch in BATCHES[:2]:
        await store.commit(batch)
    before = read_dir(tmp_path / "s")
    bad = [
        ChangeDocument(L_DOC, 1, ops=[{"op": "append", "path": ["nope"], "text": "x"}]),
        ChangeDocument(L_DOC, 1, ops=[{"op": "set", "path": [], "value": [1]}]),
        ChangeDocument(L_DOC, 1, ops=["not an op"]),  # type: ignore[list-item]
    ]
    for change in bad:
        with pytest.raises(
            StorageRejected, match=rf"Document {L_DOC} (operations do not apply|delta is malformed)"
        ):
            await store.commit([entry(60), change])
        assert read_dir(tmp_path / "s") == before
    assert await store.commit([append(L_DOC, TEXT)]) == 3
    await store.close()


async def test_ids_and_sequences_persist(tmp_path: Path) -> None:
    store = await JsonlStorage.open(tmp_path / "s")
    assert store.mint_id() == 2
    assert await store.commit([]) == 1
    for batch in BATCHES[:5]:
        await store.commit(batch)
    await store.commit([PutEntry(EntryRecord(100, 1, "pi.user"))])
    assert store.mint_id() == 101
    await store.close()
    reopened = await JsonlStorage.open(tmp_path / "s")
    assert reopened.last_seq == 7
    assert reopened.mint_id() == 101
    assert await reopened.commit([]) == 8
    await reopened.close()


async def test_single_writer_lock_and_close(tmp_path: Path) -> None:
    store = await JsonlStorage.open(tmp_path / "s")
    with pytest.raises(StoreLocked, match="Session is already open in another process"):
        await JsonlStorage.open(tmp_path / "s")
    await store.close()
    await store.close()  # idempotent
    with pytest.raises(StorageClosed):
        await store.commit([])
    with pytest.raises(StorageClosed):
        await store.task(2)
    with pytest.raises(StorageClosed):
        store.mint_id()
    again = await JsonlStorage.open(tmp_path / "s")
    await again.close()


# -- publication protocol (R130) ----------------------------------------------------------


def _name(fd: int) -> str:
    return Path(os.readlink(f"/proc/self/fd/{fd}")).name


@pytest.fixture
def trace(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Record every append, flush, directory flush and rename, in order."""
    steps: list[tuple[str, str]] = []
    real_write_all, real_fsync, real_replace = jsonl_files.write_all, os.fsync, os.replace

    def write_all(fd: int, data: bytes) -> None:
        steps.append(("write", _name(fd)))
        real_write_all(fd, data)

    def fsync(fd: int) -> None:
        steps.append(("fsync", "<dir>" if os.path.isdir(f"/proc/self/fd/{fd}") else _name(fd)))
        real_fsync(fd)

    def replace(source: Any, target: Any) -> None:
        steps.append(("rename", f"{Path(source).name} -> {Path(target).name}"))
        real_replace(source, target)

    monkeypatch.setattr(jsonl_publish, "write_all", write_all)
    monkeypatch.setattr(jsonl_files, "write_all", write_all)
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return steps


async def test_publication_order_with_fsync(tmp_path: Path, trace: list[tuple[str, str]]) -> None:
    store = await JsonlStorage.open(tmp_path / "s", fsync=True)
    for batch in BATCHES[:4]:
        await store.commit(batch)
    trace.clear()
    new_doc = 50
    await store.commit(
        [
            append(L_DOC, "ü"),
            CreateDocument(new_doc, "pi.extra", ConversationScope(1), 1, {"a": TEXT}),
            entry(51),
        ]
    )
    assert trace == [
        ("write", f"doc-{L_DOC}.jsonl"),
        ("write", f"doc-{new_doc}.jsonl"),
        ("fsync", f"doc-{L_DOC}.jsonl"),
        ("fsync", f"doc-{new_doc}.jsonl"),
        ("fsync", "<dir>"),  # a new sidecar's directory entry is durable before the marker
        ("write", "main.jsonl"),
        ("fsync", "main.jsonl"),
    ]
    trace.clear()
    await store.commit([entry(52)])
    assert trace == [("write", "main.jsonl"), ("fsync", "main.jsonl")]  # main-only commit
    trace.clear()
    await store.commit([ChangeDocument(S_DOC, 1, base={"theme": "blue"})])
    # The session document's creating base is now dead: reclaimed after the marker.
    assert trace == [
        ("write", f"doc-{S_DOC}.jsonl"),
        ("fsync", f"doc-{S_DOC}.jsonl"),
        ("write", "main.jsonl"),
        ("fsync", "main.jsonl"),
        ("write", f"doc-{S_DOC}.jsonl.reclaim"),
        ("fsync", f"doc-{S_DOC}.jsonl.reclaim"),
        ("rename", f"doc-{S_DOC}.jsonl.reclaim -> doc-{S_DOC}.jsonl"),
    ]
    await store.close()


async def test_publication_order_without_fsync(
    tmp_path: Path, trace: list[tuple[str, str]]
) -> None:
    store = await JsonlStorage.open(tmp_path / "s")
    for batch in BATCHES[:4]:
        await store.commit(batch)
    trace.clear()
    await store.commit([append(L_DOC, "ü"), append(A_DOC, "x", path="model"), entry(51)])
    assert trace == [
        ("write", f"doc-{L_DOC}.jsonl"),
        ("write", f"doc-{A_DOC}.jsonl"),
        ("write", "main.jsonl"),
    ]
    await store.close()


async def test_stopped_after_sidecars_the_commit_is_not_published(
    tmp_path: Path, armed: Any
) -> None:
    store = await JsonlStorage.open(tmp_path / "s")
    for batch in BATCHES[:4]:
        await store.commit(batch)
    before = read_dir(tmp_path / "s")
    armed("jsonl.after_sidecars:1:raise")
    with pytest.raises(StoragePoisoned, match=r"failpoint jsonl\.after_sidecars"):
        await store.commit([append(L_DOC, "lost"), entry(60)])
    after = read_dir(tmp_path / "s")
    assert after["main.jsonl"] == before["main.jsonl"]
    sidecar = f"doc-{L_DOC}.jsonl"
    assert after[sidecar].startswith(before[sidecar])
    assert after[sidecar].count(b"\n") == before[sidecar].count(b"\n") + 1
    assert store.last_seq == 4
    with pytest.raises(StoragePoisoned):
        await store.commit([])
    with pytest.raises(StoragePoisoned):
        await store.document(L_DOC)
    with pytest.raises(StoragePoisoned):
        store.mint_id()
    await store.close()
    reopened = await JsonlStorage.open(tmp_path / "s")
    assert reopened.repairs == (
        f"cut {len(after[sidecar]) - len(before[sidecar])} unconfirmed bytes from {sidecar}",
    )
    assert read_dir(tmp_path / "s") == before
    assert await dump(reopened) == await dump(await memory_after(BATCHES[:4]))
    assert await reopened.commit([append(L_DOC, "kept")]) == 5  # the unconfirmed seq, reused
    assert (await reopened.entry(60)) is None
    await reopened.close()


async def test_stopped_after_marker_the_commit_is_durable(tmp_path: Path, armed: Any) -> None:
    store = await JsonlStorage.open(tmp_path / "s")
    for batch in BATCHES[:7]:
        await store.commit(batch)
    armed("jsonl.after_marker:1:raise")
    with pytest.raises(StoragePoisoned):
        await store.commit(BATCHES[7])  # includes a base of the session document
    assert line_count(tmp_path / "s" / f"doc-{S_DOC}.jsonl") == 2  # not reclaimed yet
    await store.close()
    reopened = await JsonlStorage.open(tmp_path / "s")
    assert reopened.repairs == (f"reclaimed 1 dead revisions from doc-{S_DOC}.jsonl",)
    assert line_count(tmp_path / "s" / f"doc-{S_DOC}.jsonl") == 1
    assert await dump(reopened) == await dump(await memory_after(BATCHES[:8]))
    await reopened.close()


def _short_writes(monkeypatch: pytest.MonkeyPatch, target: str, error: OSError | None) -> None:
    real_write = os.write

    def write(fd: int, data: Any) -> int:
        if _name(fd) == target:
            if error is not None:
                raise error
            return real_write(fd, bytes(data)[: len(data) // 2])
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)


@pytest.mark.parametrize(
    ("target", "error"),
    [
        ("main.jsonl", None),
        ("main.jsonl", OSError(errno.ENOSPC, "No space left on device")),
        (f"doc-{L_DOC}.jsonl", None),
        (f"doc-{L_DOC}.jsonl", OSError(errno.EIO, "Input/output error")),
    ],
)
async def test_a_short_or_failed_write_poisons_the_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, error: OSError | None
) -> None:
    store = await JsonlStorage.open(tmp_path / "s")
    for batch in BATCHES[:4]:
        await store.commit(batch)
    clean = read_dir(tmp_path / "s")
    with monkeypatch.context() as patch:
        _short_writes(patch, target, error)
        with pytest.raises(StoragePoisoned) as raised:
            await store.commit([append(L_DOC, TEXT), entry(60)])
    assert isinstance(raised.value.__cause__, OSError)
    with pytest.raises(StoragePoisoned):
        await store.commit([])
    with pytest.raises(StoragePoisoned):
        await store.scan_entries(1)
    await store.close()
    damaged = read_dir(tmp_path / "s")
    if error is None:
        assert not damaged[target].endswith(b"\n")  # a torn line
    reopened = await JsonlStorage.open(tmp_path / "s")
    assert read_dir(tmp_path / "s") == clean
    assert reopened.last_seq == 4
    assert await reopened.commit([append(L_DOC, "again")]) == 5
    await reopened.close()


async def test_a_failed_flush_poisons_the_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await JsonlStorage.open(tmp_path / "s", fsync=True)
    await store.commit(BATCHES[0])

    def fsync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(StoragePoisoned):
        await store.commit([entry(60)])
    monkeypatch.undo()
    await store.close()
    reopened = await JsonlStorage.open(tmp_path / "s")
    # The marker was written before its flush failed: the outcome was uncertain, and
    # the commit turns out durable.
    assert reopened.last_seq == 2
    await reopened.close()


async def test_a_cancelled_fsync_commit_poisons_the_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await JsonlStorage.open(tmp_path / "s", fsync=True)
    await store.commit(BATCHES[0])
    release = threading.Event()
    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:
        release.wait(10)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", slow_fsync)
    commit = asyncio.create_task(store.commit([entry(60)]))
    await asyncio.sleep(0.05)
    commit.cancel()
    with pytest.raises(asyncio.CancelledError):
        await commit
    with pytest.raises(StoragePoisoned, match="cancelled"):
        await store.commit([])
    release.set()
    for _ in range(200):  # the write goes on in its thread
        if (tmp_path / "s" / "main.jsonl").read_bytes().endswith(b'"seq":2}\n'):
            break
        await asyncio.sleep(0.01)
    await store.close()
    reopened = await JsonlStorage.open(tmp_path / "s")
    assert reopened.last_seq == 2
    await reopened.close()


# -- reclamation (R132) -------------------------------------------------------------------


async def test_reclamation_on_disk(tmp_path: Path) -> None:
    store = await JsonlStorage.open(tmp_path / "s")
    sizes = []
    for batch in BATCHES:
        await store.commit(batch)
        sizes.append((tmp_path / "s" / "main.jsonl").stat().st_size)
    await store.close()
    assert sizes == sorted(sizes)  # main.jsonl is never compacted
    files = read_dir(tmp_path / "s")
    assert not [name for name in files if name.endswith(".reclaim")]
    # Current-only documents keep their newest base and later deltas.
    assert files[f"doc-{S_DOC}.jsonl"].count(b"\n") == 1  # session doc, base at 8
    assert files[f"doc-{L_DOC}.jsonl"].count(b"\n") == 3  # base at 12, deltas at 18, 20
    # Retired current-only documents lose their sidecar; one created and retired in
    # a single commit never had one.
    for retired in (f"doc-{I_DOC}.jsonl", f"doc-{D_DOC}.jsonl", f"doc-{X_DOC}.jsonl"):
        assert retired not in files
    # Rewindable documents keep every revision, retired or not.
    assert files[f"doc-{A_DOC}.jsonl"].count(b"\n") == 4
    assert files[f"doc-{R_DOC}.jsonl"].count(b"\n") == 2


async def test_failed_reclamation_keeps_committed_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(path: Path, data: bytes, *, fsync: bool) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    real_unlink = Path.unlink

    def failing_unlink(self: Path, missing_ok: bool = False) -> None:
        if self.name.startswith("doc-"):
            raise OSError(errno.EACCES, "Permission denied")
        real_unlink(self, missing_ok=missing_ok)

    store = await JsonlStorage.open(tmp_path / "s")
    with monkeypatch.context() as patch:
        patch.setattr(jsonl_publish, "replace_file", failing)
        patch.setattr(Path, "unlink", failing_unlink)
        for batch in BATCHES:
            await store.commit(batch)
        memory = await memory_after(BATCHES)
        assert await dump(store) == await dump(memory)
    assert line_count(tmp_path / "s" / f"doc-{L_DOC}.jsonl") == 6  # nothing reclaimed
    assert (tmp_path / "s" / f"doc-{I_DOC}.jsonl").exists()
    # A later base reclaims what the failed attempts left.
    await store.commit([ChangeDocument(L_DOC, 1, base={"text": "fresh"})])
    assert line_count(tmp_path / "s" / f"doc-{L_DOC}.jsonl") == 1
    await store.close()
    reopened = await JsonlStorage.open(tmp_path / "s")
    assert sorted(reopened.repairs) == [
        f"reclaimed 1 dead revisions from doc-{S_DOC}.jsonl",
        f"removed doc-{D_DOC}.jsonl",
        f"removed doc-{I_DOC}.jsonl",
    ]
    memory = await memory_after([*BATCHES, [ChangeDocument(L_DOC, 1, base={"text": "fresh"})]])
    assert await dump(reopened) == await dump(memory)
    await reopened.close()


# -- crash tests with real process death (reliability.md 11.2) ----------------------------

CHILD = """
import asyncio, sys
from pi_durable_tui.storage.jsonl import JsonlStorage
from tests.storage.jsonl_support import workload

async def main():
    store = await JsonlStorage.open(sys.argv[1], fsync=True)
    for batch in workload():
        seq = await store.commit(batch)
        print(seq, flush=True)  # acknowledged only after commit returned
    await store.close()

asyncio.run(main())
"""


@pytest.mark.parametrize(
    ("point", "hit", "durable"),
    [
        ("jsonl.after_sidecars", 4, 3),  # commit 4 wrote its sidecar, not its marker
        ("jsonl.after_marker", 4, 4),  # commit 4's marker landed; nobody was told
        ("jsonl.after_sidecars", 8, 7),  # commit 8 also bases the session document
        ("jsonl.after_marker", 8, 8),  # killed before commit 8's reclamation
    ],
)
async def test_killed_at_a_commit_boundary(
    tmp_path: Path, point: str, hit: int, durable: int
) -> None:
    env = {**os.environ, "PIDURABLE_FAILPOINT": f"{point}:{hit}"}
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CHILD,
        str(tmp_path / "s"),
        env=env,
        cwd=Path(__file__).resolve().parents[2],
        stdout=asyncio.subprocess.PIPE,
    )
    output, _ = await child.communicate()
    assert child.returncode == -signal.SIGKILL
    acknowledged = [int(line) for line in output.split()]
    assert acknowledged == list(range(1, hit))
    store = await JsonlStorage.open(tmp_path / "s")  # the kernel dropped the dead child's lock
    assert store.last_seq == durable
    assert await dump(store) == await dump(await memory_after(BATCHES[:durable]))
    assert await store.commit(BATCHES[durable]) == durable + 1
    await store.close()
