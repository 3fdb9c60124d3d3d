"""Recovery of a JSONL store opened from its checkpoint (R131, R132, jsonl_recovery).

The torn-tail tests of ``test_jsonl_recovery`` again, on the checkpoint path:
the store has a checkpoint a few commits before the end, and ``main.jsonl`` (or
a sidecar the log tail touches) is cut at byte offsets after it. A reopened
store must start from the checkpoint, show exactly the confirmed prefix, leave
the files as a clean cut at that prefix leaves them, resurrect nothing, and
reuse the first unconfirmed seq. A cut into confirmed sidecar records fails
open (by a full replay) and changes nothing.

Damage to data the checkpoint covers is not looked for at open (that is the
point of a checkpoint): it is found when the data is read or appended to, which
removes the checkpoint, so the next open replays everything and fails with the
R131 message. An unconfirmed sidecar record of a document the tail does not
touch stays until the next append to that sidecar cuts it. A reclamation that
failed is finished by the next open, through the checkpoint.
"""

from __future__ import annotations

import errno
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.storage import (
    ChangeDocument,
    EntryRecord,
    PutEntry,
    StorageCorrupted,
    StoragePoisoned,
    Write,
    failpoints,
)
from pi_durable_tui.storage.jsonl import CheckpointPolicy, JsonlStorage
from pi_durable_tui.storage.jsonl import _publish as jsonl_publish
from pi_durable_tui.storage.jsonl._checkpoint import CHECKPOINT_FILE
from tests.storage.jsonl_support import (
    A_DOC,
    D_DOC,
    E1,
    I_DOC,
    L_DOC,
    S_DOC,
    T2,
    T4,
    append,
    dump,
    entry,
    feed,
    memory_after,
    quick_dump,
    workload,
)
from tests.storage.test_jsonl_recovery import Scratch, cut_main, record_ends, write_dir

BATCHES = workload()
N = len(BATCHES)
AT_CLOSE = CheckpointPolicy(every=1 << 40, at_close=0)
NEVER = CheckpointPolicy(every=1 << 40, at_close=1 << 40)
NEW_ENTRY = 40
NEW_BATCH: list[Write] = [entry(NEW_ENTRY), append(L_DOC, " neu ✓")]


def read_dir(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


async def build(
    path: Path, first: int, batches: list[list[Write]] = BATCHES, *, rest: bool = True
) -> dict[str, bytes]:
    """Commit ``batches[:first]``, close with a checkpoint, commit the rest without one."""
    store = await JsonlStorage.open(path, checkpoints=AT_CLOSE)
    await feed(store, batches[:first])
    await store.close()
    if rest:
        store = await JsonlStorage.open(path, checkpoints=NEVER)
        await feed(store, batches[first:])
        await store.close()
    return read_dir(path)


def marker_ends(main: bytes) -> list[int]:
    ends, offset = [0], 0
    for line in main.split(b"\n")[:-1]:
        offset += len(line) + 1
        if json.loads(line)["type"] == "commit":
            ends.append(offset)
    return ends


@dataclass
class Built:
    files: dict[str, bytes]
    marker_ends: list[int]
    checkpoint: int
    canonical: dict[int, dict[str, bytes]]
    lean: dict[int, dict[str, Any]]
    full: dict[int, dict[str, Any]]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    import asyncio

    root = tmp_path_factory.mktemp("checkpointed")
    checkpoint = N - 3

    async def make() -> Built:
        files = await build(root / "store", checkpoint)
        ends = marker_ends(files["main.jsonl"])
        canonical, lean, full = {}, {}, {}
        for k in range(checkpoint, N + 1):
            path = write_dir(root / f"clean{k}", cut_main(files, ends[k]))
            store = await JsonlStorage.open(path, checkpoints=NEVER)
            assert store.recovery.checkpoint_seq == checkpoint
            canonical[k] = read_dir(path)
            memory = await memory_after(BATCHES[:k])
            lean[k] = await quick_dump(memory)
            full[k] = await dump(memory)
            assert await dump(store) == full[k]
            await store.close()
        return Built(files, ends, checkpoint, canonical, lean, full)

    return asyncio.run(make())


async def check_prefix(built: Built, path: Path, k: int, *, thorough: bool) -> None:
    """Open ``path`` from its checkpoint and check that it shows exactly commits 1..k."""
    store = await JsonlStorage.open(path, checkpoints=NEVER)
    try:
        assert store.recovery.checkpoint_seq == built.checkpoint
        assert store.last_seq == k
        assert read_dir(path) == built.canonical[k]
        assert await quick_dump(store) == built.lean[k]
        if thorough:
            assert await dump(store) == built.full[k]
        assert (await store.task(T2)).status == "terminal"  # type: ignore[union-attr]
        t4 = await store.task(T4)
        assert t4 is None or (t4.status == "terminal") == (k >= 19)
        assert await store.commit(NEW_BATCH) == k + 1
    finally:
        await store.close()
    if thorough:
        reopened = await JsonlStorage.open(path, checkpoints=None)  # a full replay agrees
        # It may still find what the checkpoint path leaves for later: sidecars of
        # unconfirmed creations, unconfirmed records of sidecars the tail did not touch.
        for repair in reopened.repairs:
            assert repair.startswith(("removed doc-", "cut "))
            assert "main.jsonl" not in repair
        assert await dump(reopened) == await dump(await memory_after([*BATCHES[:k], NEW_BATCH]))
        await reopened.close()


@pytest.mark.timeout(120)
async def test_main_cut_after_the_checkpoint(built: Built, tmp_path: Path) -> None:
    """Every line boundary, every 4th offset of the last commit, every 13th before."""
    main = built.files["main.jsonl"]
    start = built.marker_ends[built.checkpoint]
    last = built.marker_ends[N - 1]
    boundaries = set(record_ends(main))
    scratch = Scratch(tmp_path / "store")
    for size in range(start, len(main) + 1):
        if size not in boundaries and size % (4 if size >= last else 13):
            continue
        k = max(i for i, end in enumerate(built.marker_ends) if end <= size)
        path = scratch.load(cut_main(built.files, size))
        await check_prefix(built, path, k, thorough=size in boundaries and size % 3 == 0)


@pytest.mark.timeout(120)
async def test_touched_sidecar_cut_after_the_checkpoint(built: Built, tmp_path: Path) -> None:
    """Main confirms commits 1..N-1; cut each sidecar the tail touches in its last records."""
    k = N - 1
    files = cut_main(built.files, built.marker_ends[k])
    scratch = Scratch(tmp_path / "store")
    checked = failed = 0
    for name, data in built.files.items():
        if not name.startswith("doc-"):
            continue
        ends = record_ends(data)
        seqs = [json.loads(line)["seq"] for line in data.split(b"\n")[:-1]]
        if not any(built.checkpoint < seq <= k for seq in seqs):
            continue  # not touched by the tail: open does not read it
        needed_end = max([end for end, seq in zip(ends[1:], seqs, strict=True) if seq <= k] + [0])
        for size in range(ends[max(0, len(ends) - 3)], len(data), 3):
            path = scratch.load({**files, name: data[:size]})
            if size >= needed_end:
                store = await JsonlStorage.open(path, checkpoints=NEVER)
                assert store.recovery.checkpoint_seq == built.checkpoint
                assert store.last_seq == k
                assert await quick_dump(store) == built.lean[k]
                assert await store.commit(NEW_BATCH) == k + 1
                await store.close()
                checked += 1
            else:
                before = read_dir(path)
                with pytest.raises(StorageCorrupted, match="Missing confirmed sidecar record"):
                    await JsonlStorage.open(path, checkpoints=NEVER)
                assert read_dir(path) == before
                failed += 1
    assert checked > 20
    assert failed > 20


@pytest.mark.timeout(60)
async def test_random_byte_flips_in_unconfirmed_tails_after_the_checkpoint(
    built: Built, tmp_path: Path
) -> None:
    k = N - 1
    files = cut_main(built.files, built.marker_ends[N])
    files["main.jsonl"] = files["main.jsonl"][: files["main.jsonl"].rstrip(b"\n").rfind(b"\n") + 1]
    start = built.marker_ends[k]
    rng = random.Random(20261130)
    scratch = Scratch(tmp_path / "store")
    for trial in range(40):
        data = bytearray(files["main.jsonl"])
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(start, len(data))] ^= rng.randrange(1, 256)
        path = scratch.load({**files, "main.jsonl": bytes(data)})
        store = await JsonlStorage.open(path, checkpoints=NEVER)
        assert store.recovery.checkpoint_seq == built.checkpoint
        assert store.last_seq == k
        assert await quick_dump(store) == built.lean[k]
        if trial % 10 == 0:
            assert await dump(store) == built.full[k]
        await store.close()


# -- damage the checkpoint covers: found when read or appended to ----------------------------


FILLER: list[list[Write]] = [
    [
        PutEntry(EntryRecord(1000 + 10 * b + i, 1, "pi.note", data={"n": "x" * 300}))
        for i in range(10)
    ]
    for b in range(30)
]
"""About 100 KB of entries, so the first lines lie outside the checkpoint's anchor."""


async def test_a_damaged_old_line_is_found_when_read(tmp_path: Path) -> None:
    batches = [*BATCHES, *FILLER]
    files = await build(tmp_path / "s", len(batches), batches)
    main = files["main.jsonl"]
    line = next(i for i, raw in enumerate(main.split(b"\n")) if b'"type":"entry"' in raw)
    lines = main.split(b"\n")
    lines[line] = lines[line][:-2] + b"]}"  # same length, no longer JSON
    (tmp_path / "s" / "main.jsonl").write_bytes(b"\n".join(lines))
    store = await JsonlStorage.open(tmp_path / "s", checkpoints=NEVER)
    assert store.recovery.checkpoint_seq == len(batches)  # open does not read old lines
    assert (await store.entry(1000)) is not None  # the other lines read as ever
    with pytest.raises(StorageCorrupted, match=r"Malformed complete main\.jsonl"):
        await store.entry(E1)
    assert not (tmp_path / "s" / CHECKPOINT_FILE).exists()
    await store.close()
    assert not (tmp_path / "s" / CHECKPOINT_FILE).exists()  # a damaged store writes none
    with pytest.raises(StorageCorrupted, match=r"Malformed complete main\.jsonl"):
        await JsonlStorage.open(tmp_path / "s", checkpoints=NEVER)


async def test_a_missing_sidecar_is_found_before_the_next_append(tmp_path: Path) -> None:
    await build(tmp_path / "s", N)
    (tmp_path / "s" / f"doc-{S_DOC}.jsonl").unlink()
    store = await JsonlStorage.open(tmp_path / "s", checkpoints=NEVER)
    assert store.repairs == ()
    with pytest.raises(StoragePoisoned) as raised:
        await store.commit(
            [ChangeDocument(S_DOC, 1, ops=[{"op": "set", "path": ["x"], "value": 1}])]
        )
    assert isinstance(raised.value.__cause__, StorageCorrupted)
    assert not (tmp_path / "s" / CHECKPOINT_FILE).exists()
    await store.close()
    with pytest.raises(StorageCorrupted, match="Missing confirmed sidecar record"):
        await JsonlStorage.open(tmp_path / "s", checkpoints=NEVER)


async def test_a_damaged_rewindable_sidecar_is_found_by_a_historical_read(tmp_path: Path) -> None:
    files = await build(tmp_path / "s", N)
    name = f"doc-{A_DOC}.jsonl"
    lines = files[name].split(b"\n")[:-1]
    (tmp_path / "s" / name).write_bytes(b"".join(line + b"\n" for line in lines[:1] + lines[2:]))
    store = await JsonlStorage.open(tmp_path / "s", checkpoints=NEVER)
    memory = await memory_after(BATCHES)
    assert await store.document(A_DOC) == await memory.document(A_DOC)  # the kept value
    with pytest.raises(StorageCorrupted, match="Missing confirmed sidecar record"):
        await store.document(A_DOC, 7)
    await store.close()
    with pytest.raises(StorageCorrupted, match="Missing confirmed sidecar record"):
        await JsonlStorage.open(tmp_path / "s", checkpoints=NEVER)


async def test_an_unconfirmed_record_of_an_untouched_sidecar_is_cut_before_the_next_append(
    tmp_path: Path,
) -> None:
    clean = await build(tmp_path / "s", 4, rest=False)
    sidecar = f"doc-{L_DOC}.jsonl"
    store = await JsonlStorage.open(tmp_path / "s", checkpoints=NEVER)
    failpoints.rearm("jsonl.after_sidecars:1:raise")
    try:
        with pytest.raises(StoragePoisoned):
            await store.commit([append(L_DOC, "lost"), entry(60)])
    finally:
        failpoints.rearm(None)
    await store.close()
    assert len(read_dir(tmp_path / "s")[sidecar]) > len(clean[sidecar])
    store = await JsonlStorage.open(tmp_path / "s", checkpoints=NEVER)
    assert store.recovery.checkpoint_seq == 4
    assert store.repairs == ()  # the tail touches nothing: the record waits
    memory = await memory_after(BATCHES[:4])
    assert await store.document(L_DOC) == await memory.document(L_DOC)
    assert await store.commit([append(L_DOC, "kept")]) == 5
    assert read_dir(tmp_path / "s")[sidecar].startswith(clean[sidecar])
    await store.close()
    full = await JsonlStorage.open(tmp_path / "s", checkpoints=None)
    assert full.repairs == ()
    assert await dump(full) == await dump(
        await memory_after([*BATCHES[:4], [append(L_DOC, "kept")]])
    )
    await full.close()


async def test_a_failed_reclamation_is_finished_through_the_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(path: Path, data: bytes, *, fsync: bool) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    real_unlink = Path.unlink

    def failing_unlink(self: Path, missing_ok: bool = False) -> None:
        if self.name.startswith("doc-"):
            raise OSError(errno.EACCES, "Permission denied")
        real_unlink(self, missing_ok=missing_ok)

    store = await JsonlStorage.open(tmp_path / "s", checkpoints=AT_CLOSE)
    with monkeypatch.context() as patch:
        patch.setattr(jsonl_publish, "replace_file", failing)
        patch.setattr(Path, "unlink", failing_unlink)
        await feed(store, BATCHES)
        await store.close()
    reopened = await JsonlStorage.open(tmp_path / "s", checkpoints=AT_CLOSE)
    assert reopened.recovery.checkpoint_seq == N
    assert sorted(reopened.repairs) == [
        f"reclaimed 1 dead revisions from doc-{S_DOC}.jsonl",
        f"reclaimed 3 dead revisions from doc-{L_DOC}.jsonl",
        f"removed doc-{D_DOC}.jsonl",
        f"removed doc-{I_DOC}.jsonl",
    ]
    assert await dump(reopened) == await dump(await memory_after(BATCHES))
    await reopened.commit([])
    await reopened.close()
    again = await JsonlStorage.open(tmp_path / "s", checkpoints=NEVER)
    assert again.repairs == ()
    assert await dump(again) == await dump(await memory_after([*BATCHES, []]))
    await again.close()


def _failing_rewrites(patch: pytest.MonkeyPatch) -> None:
    def failing(path: Path, data: bytes, *, fsync: bool) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    patch.setattr(jsonl_publish, "replace_file", failing)


async def test_a_reclamation_in_the_tail_that_never_happened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tail's base of L_DOC should have rewritten its sidecar: open reads it whole."""
    await build(tmp_path / "s", 11, rest=False)
    store = await JsonlStorage.open(tmp_path / "s", checkpoints=NEVER)
    with monkeypatch.context() as patch:
        _failing_rewrites(patch)
        await store.commit(BATCHES[11])  # L_DOC gets a base; its old revisions are dead
    await store.close()
    reopened = await JsonlStorage.open(tmp_path / "s", checkpoints=NEVER)
    assert reopened.recovery.checkpoint_seq == 11
    assert f"reclaimed 3 dead revisions from doc-{L_DOC}.jsonl" in reopened.repairs
    assert await dump(reopened) == await dump(await memory_after(BATCHES[:12]))
    await reopened.close()
    assert read_dir(tmp_path / "s")[f"doc-{L_DOC}.jsonl"].count(b"\n") == 1


async def test_a_sidecar_rewritten_by_a_later_open_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint describes L_DOC's sidecar before an open reclaimed it (then crashed)."""
    store = await JsonlStorage.open(tmp_path / "s", checkpoints=AT_CLOSE)
    with monkeypatch.context() as patch:
        _failing_rewrites(patch)
        await feed(store, BATCHES[:12])
    await store.close()  # the checkpoint lists L_DOC as pending
    second = await JsonlStorage.open(tmp_path / "s", checkpoints=NEVER)
    assert f"reclaimed 3 dead revisions from doc-{L_DOC}.jsonl" in second.repairs
    await second.commit([append(L_DOC, "x")])
    await second.close()  # no new checkpoint: as if the process had died
    third = await JsonlStorage.open(tmp_path / "s", checkpoints=NEVER)
    assert third.recovery.checkpoint_seq == 12
    assert third.repairs == ()
    assert await dump(third) == await dump(
        await memory_after([*BATCHES[:12], [append(L_DOC, "x")]])
    )
    await third.close()
