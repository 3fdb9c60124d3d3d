"""Recovery of a JSONL store on open (R131, reliability.md 11.3 and 15 row J1).

The torn-tail tests build one store with the shared workload, then, for every
byte offset in the last three commits of ``main.jsonl`` and in the last three
records of every sidecar, reopen a copy cut at that offset. A reopened store
must show exactly the confirmed prefix (compared with a ``MemoryStorage`` fed the
confirmed commits), leave files byte-identical to a clean cut at the same
prefix, keep terminal tasks terminal, and accept a new commit that reuses the
first unconfirmed seq. Damaged confirmed data must fail open with the R131
messages and leave the files untouched.

The workload's store is far below the size at which ``close`` writes a
checkpoint, so every open here is a full replay; ``test_jsonl_checkpoint_recovery``
does the same on stores opened from a checkpoint.
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.storage import StorageCorrupted, Write
from pi_durable_tui.storage.jsonl import JsonlStorage
from tests.storage.jsonl_support import (
    A_DOC,
    L_DOC,
    T2,
    T4,
    append,
    dump,
    entry,
    memory_after,
    quick_dump,
    workload,
)

BATCHES = workload()
N = len(BATCHES)
NEW_ENTRY = 40
NEW_BATCH: list[Write] = [entry(NEW_ENTRY), append(L_DOC, " neu ✓")]


@dataclass
class Built:
    """The workload's store as bytes, and what every prefix of it looks like."""

    files: dict[str, bytes]
    marker_ends: list[int]
    """``marker_ends[k]``: the length of ``main.jsonl`` that confirms commits 1..k."""
    canonical: dict[int, dict[str, bytes]]
    """Files after recovery of a clean cut at ``marker_ends[k]``."""
    full: dict[int, dict[str, Any]]
    lean: dict[int, dict[str, Any]]
    """Quick dumps (current state only) of commits 1..k."""
    after_new: dict[int, dict[str, Any]] = field(default_factory=dict)
    """Full dumps of commits 1..k followed by ``NEW_BATCH``, filled on first use."""


def read_dir(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


def write_dir(path: Path, files: dict[str, bytes]) -> Path:
    path.mkdir()
    for name, data in files.items():
        (path / name).write_bytes(data)
    return path


class Scratch:
    """One store directory reused for many cuts.

    Creating a file costs about a millisecond on an ordinary ext4 disk, ten times
    rewriting one, so each cut rewrites only the files that differ from the wanted
    content (recovery and the test's own commit change a few).
    """

    def __init__(self, path: Path) -> None:
        path.mkdir()
        self.path = path

    def load(self, files: dict[str, bytes]) -> Path:
        present = {p.name for p in self.path.iterdir()}
        for name in present - files.keys():
            (self.path / name).unlink()
        for name, data in files.items():
            target = self.path / name
            if name not in present or target.read_bytes() != data:
                target.write_bytes(data)
        return self.path


def cut_main(files: dict[str, bytes], size: int) -> dict[str, bytes]:
    return {**files, "main.jsonl": files["main.jsonl"][:size]}


def record_ends(data: bytes) -> list[int]:
    ends, offset = [0], 0
    for line in data.split(b"\n")[:-1]:
        offset += len(line) + 1
        ends.append(offset)
    return ends


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    root = tmp_path_factory.mktemp("built")

    async def build() -> Built:
        store = await JsonlStorage.open(root / "store")
        for batch in BATCHES:
            await store.commit(batch)
        await store.close()
        files = read_dir(root / "store")
        marker_ends = [0]
        offset = 0
        for line in files["main.jsonl"].split(b"\n")[:-1]:
            offset += len(line) + 1
            if json.loads(line)["type"] == "commit":
                marker_ends.append(offset)
        canonical, full, lean_dumps = {}, {}, {}
        for k in range(N - 3, N + 1):
            path = write_dir(root / f"clean{k}", cut_main(files, marker_ends[k]))
            reopened = await JsonlStorage.open(path)
            canonical[k] = read_dir(path)
            memory = await memory_after(BATCHES[:k])
            full[k] = await dump(memory)
            lean_dumps[k] = await quick_dump(memory)
            assert await dump(reopened) == full[k]
            await reopened.close()
        return Built(files, marker_ends, canonical, full, lean_dumps)

    return asyncio.run(build())


async def check_prefix(built: Built, path: Path, k: int, *, thorough: bool) -> None:
    """Open ``path`` and check that it shows exactly commits 1..k."""
    store = await JsonlStorage.open(path)
    try:
        assert store.last_seq == k
        assert read_dir(path) == built.canonical[k]
        assert await quick_dump(store) == built.lean[k]
        if thorough:
            assert await dump(store) == built.full[k]
        # No resurrection: T2 ended at commit 11, T4 at commit 19.
        assert (await store.task(T2)).status == "terminal"  # type: ignore[union-attr]
        t4 = await store.task(T4)
        assert t4 is None or (t4.status == "terminal") == (k >= 19)
        assert await store.commit(NEW_BATCH) == k + 1
        stored = await store.entry(NEW_ENTRY)
        assert stored is not None
        assert stored.commit_seq == k + 1
    finally:
        await store.close()
    if thorough:
        if k not in built.after_new:
            built.after_new[k] = await dump(await memory_after([*BATCHES[:k], NEW_BATCH]))
        reopened = await JsonlStorage.open(path)
        assert await dump(reopened) == built.after_new[k]
        await reopened.close()


@pytest.mark.timeout(120)
async def test_main_cut_at_every_offset_of_the_last_three_commits(
    built: Built, tmp_path: Path
) -> None:
    main = built.files["main.jsonl"]
    start = built.marker_ends[N - 3]
    boundaries = set(record_ends(main))
    scratch = Scratch(tmp_path / "store")
    for size in range(start, len(main) + 1):
        k = max(i for i, end in enumerate(built.marker_ends) if end <= size)
        path = scratch.load(cut_main(built.files, size))
        thorough = size in boundaries or size % 97 == 0
        await check_prefix(built, path, k, thorough=thorough)


@pytest.mark.timeout(120)
async def test_sidecar_cut_at_every_offset_of_its_last_three_records(
    built: Built, tmp_path: Path
) -> None:
    """Cut each sidecar with main confirming only commits 1..N-3.

    Records of later commits are an unconfirmed tail: any cut there shows prefix
    N-3. A cut into a record that prefix needs is missing confirmed data.
    """
    k = N - 3
    files = cut_main(built.files, built.marker_ends[k])
    checked = 0
    scratch = Scratch(tmp_path / "store")
    for name, data in built.files.items():
        if not name.startswith("doc-"):
            continue
        ends = record_ends(data)
        seqs = [json.loads(line)["seq"] for line in data.split(b"\n")[:-1]]
        needed_end = max([end for end, seq in zip(ends[1:], seqs, strict=True) if seq <= k] + [0])
        for size in range(ends[max(0, len(ends) - 4)], len(data)):
            path = scratch.load({**files, name: data[:size]})
            if size >= needed_end:
                await check_prefix(built, path, k, thorough=size in ends)
                checked += 1
            else:
                before = read_dir(path)
                with pytest.raises(StorageCorrupted, match="Missing confirmed sidecar record"):
                    await JsonlStorage.open(path)
                assert read_dir(path) == before
    assert checked > 100  # the workload's last commits touch several sidecars


@pytest.mark.timeout(60)
async def test_cutting_confirmed_sidecar_records_fails_open(built: Built, tmp_path: Path) -> None:
    scratch = Scratch(tmp_path / "store")
    for name, data in built.files.items():
        if not name.startswith("doc-"):
            continue
        ends = record_ends(data)
        for size in range(ends[max(0, len(ends) - 4)], len(data), 7):
            path = scratch.load({**built.files, name: data[:size]})
            with pytest.raises(StorageCorrupted, match="Missing confirmed sidecar record"):
                await JsonlStorage.open(path)
            assert read_dir(path)[name] == data[:size]


@pytest.mark.timeout(60)
async def test_random_byte_flips_in_unconfirmed_tails(built: Built, tmp_path: Path) -> None:
    """Drop the last marker, then damage the unconfirmed bytes of every file."""
    k = N - 1
    without_marker = built.files["main.jsonl"][: built.marker_ends[N]]
    without_marker = without_marker[: without_marker.rstrip(b"\n").rfind(b"\n") + 1]
    files = {**built.files, "main.jsonl": without_marker}
    tails = {"main.jsonl": built.marker_ends[k]}
    for name, data in files.items():
        if name.startswith("doc-"):
            lines = data.split(b"\n")[:-1]
            confirmed = [json.loads(line)["seq"] <= k for line in lines]
            tails[name] = sum(
                len(line) + 1 for line, ok in zip(lines, confirmed, strict=True) if ok
            )
    damaged = {name: start for name, start in tails.items() if start < len(files[name])}
    assert len(damaged) >= 3  # main and the sidecars the last commit touched
    rng = random.Random(20261031)
    scratch = Scratch(tmp_path / "store")
    for trial in range(150):
        copy = dict(files)
        for _ in range(rng.randint(1, 3)):
            name = rng.choice(sorted(damaged))
            flipped = bytearray(copy[name])
            position = rng.randrange(damaged[name], len(flipped))
            flipped[position] ^= rng.randrange(1, 256)
            copy[name] = bytes(flipped)
        path = scratch.load(copy)
        await check_prefix(built, path, k, thorough=trial % 25 == 0)


async def test_reclaiming_commit_lost_from_main_is_missing_data(tmp_path: Path) -> None:
    """A base of a current-only document rewrites its sidecar only after its marker.

    Cutting that marker away afterwards is a fault the protocol excludes (the
    marker is written, and flushed with ``fsync``, before the rewrite), and open
    reports it as missing confirmed data rather than showing a wrong document.
    """
    batches: list[list[Write]] = [*BATCHES, [append(L_DOC, "x")], [entry(NEW_ENTRY + 1)]]
    batches.append([*BATCHES[11][:1]])  # L_DOC base {"text": "done"}: reclaims its sidecar
    store = await JsonlStorage.open(tmp_path / "s")
    for batch in batches:
        await store.commit(batch)
    await store.close()
    files = read_dir(tmp_path / "s")
    assert files[f"doc-{L_DOC}.jsonl"].count(b"\n") == 1
    main = files["main.jsonl"]
    cut = main[: main.rstrip(b"\n").rfind(b"\n") + 1]  # drop the last marker
    path = write_dir(tmp_path / "cut", {**files, "main.jsonl": cut})
    with pytest.raises(StorageCorrupted, match="Missing confirmed sidecar record"):
        await JsonlStorage.open(path)


# -- R131: damaged confirmed data fails open, and changes nothing ----------------------


async def build_store(path: Path, batches: list[list[Write]] | None = None) -> dict[str, bytes]:
    store = await JsonlStorage.open(path)
    for batch in BATCHES if batches is None else batches:
        await store.commit(batch)
    await store.close()
    return read_dir(path)


def lines_of(data: bytes) -> list[bytes]:
    return data.split(b"\n")[:-1]


def join(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


async def expect_corrupted(path: Path, message: str) -> None:
    before = read_dir(path)
    with pytest.raises(StorageCorrupted, match=message):
        await JsonlStorage.open(path)
    assert read_dir(path) == before
    # The lock was released: a second attempt fails the same way, not with StoreLocked.
    with pytest.raises(StorageCorrupted, match=message):
        await JsonlStorage.open(path)


def _index_of(lines: list[bytes], **match: Any) -> int:
    return next(
        i
        for i, line in enumerate(lines)
        if all(json.loads(line).get(k) == v for k, v in match.items())
    )


async def test_missing_sidecar_file(tmp_path: Path) -> None:
    await build_store(tmp_path / "s")
    (tmp_path / "s" / f"doc-{L_DOC}.jsonl").unlink()
    await expect_corrupted(tmp_path / "s", "Missing confirmed sidecar record")


async def test_missing_record_in_the_middle_of_a_sidecar(tmp_path: Path) -> None:
    files = await build_store(tmp_path / "s")
    name = f"doc-{A_DOC}.jsonl"  # rewindable: every revision is needed
    lines = lines_of(files[name])
    (tmp_path / "s" / name).write_bytes(join(lines[:1] + lines[2:]))
    await expect_corrupted(tmp_path / "s", "Missing confirmed sidecar record")


async def test_confirmed_sidecar_record_after_an_unconfirmed_one(tmp_path: Path) -> None:
    files = await build_store(tmp_path / "s")
    name = f"doc-{A_DOC}.jsonl"
    lines = lines_of(files[name])
    stray = json.loads(lines[0])
    stray.update(seq=N + 5, ordinal=len(lines))
    lines.insert(1, json.dumps(stray, separators=(",", ":")).encode())
    (tmp_path / "s" / name).write_bytes(join(lines))
    await expect_corrupted(tmp_path / "s", "Confirmed record follows an unconfirmed tail")


async def test_confirmed_main_record_after_an_unconfirmed_one(tmp_path: Path) -> None:
    files = await build_store(tmp_path / "s")
    lines = lines_of(files["main.jsonl"])
    marker = _index_of(lines, type="commit", seq=N - 1)
    stray = json.loads(lines[marker + 1])
    stray["seq"] = N - 1  # a record of commit N-1 after its marker: unconfirmed, then N
    lines.insert(marker + 1, json.dumps(stray, separators=(",", ":"), ensure_ascii=False).encode())
    (tmp_path / "s" / "main.jsonl").write_bytes(join(lines))
    await expect_corrupted(tmp_path / "s", "Confirmed record follows an unconfirmed tail")


async def test_commit_sequence_must_strictly_increase(tmp_path: Path) -> None:
    files = await build_store(tmp_path / "s", BATCHES[:3])
    lines = lines_of(files["main.jsonl"])
    (tmp_path / "s" / "main.jsonl").write_bytes(
        join([*lines, lines[_index_of(lines, type="commit", seq=2)]])
    )
    await expect_corrupted(tmp_path / "s", "Commit sequence does not strictly increase")


async def test_invalid_document_content(tmp_path: Path) -> None:
    files = await build_store(tmp_path / "s")
    name = f"doc-{L_DOC}.jsonl"
    lines = lines_of(files[name])
    bad = json.loads(lines[-1])
    bad["payload"] = [{"op": "append", "path": ["missing"], "text": "x"}]
    lines[-1] = json.dumps(bad, separators=(",", ":")).encode()
    (tmp_path / "s" / name).write_bytes(join(lines))
    await expect_corrupted(tmp_path / "s", "Invalid document content")


async def test_base_that_is_not_an_object_is_invalid_content(tmp_path: Path) -> None:
    files = await build_store(tmp_path / "s")
    name = f"doc-{A_DOC}.jsonl"
    lines = lines_of(files[name])
    bad = json.loads(lines[0])
    bad["payload"] = [1, 2]
    lines[0] = json.dumps(bad, separators=(",", ":")).encode()
    (tmp_path / "s" / name).write_bytes(join(lines))
    await expect_corrupted(tmp_path / "s", "Invalid document content")


async def test_malformed_complete_main_line(tmp_path: Path) -> None:
    files = await build_store(tmp_path / "s")
    lines = lines_of(files["main.jsonl"])
    lines[3] = lines[3][:-2]  # complete (newline-terminated) but not JSON
    (tmp_path / "s" / "main.jsonl").write_bytes(join(lines))
    await expect_corrupted(tmp_path / "s", "Malformed complete main.jsonl")


async def test_malformed_complete_sidecar_line(tmp_path: Path) -> None:
    files = await build_store(tmp_path / "s")
    name = f"doc-{A_DOC}.jsonl"
    lines = lines_of(files[name])
    lines.insert(1, '{"format":1,"type":"record","seq":ü'.encode())
    (tmp_path / "s" / name).write_bytes(join(lines))
    await expect_corrupted(tmp_path / "s", "Malformed complete doc-5.jsonl")


async def test_malformed_line_in_an_unconfirmed_tail_is_cut(tmp_path: Path) -> None:
    files = await build_store(tmp_path / "s")
    main = files["main.jsonl"] + b'not json\n{"format":1,"type":"entry","seq":99,"rec'
    (tmp_path / "s" / "main.jsonl").write_bytes(main)
    store = await JsonlStorage.open(tmp_path / "s")
    assert store.last_seq == N
    assert store.repairs == (
        f"cut {len(main) - len(files['main.jsonl'])} unconfirmed bytes from main.jsonl",
    )
    await store.close()
    assert (tmp_path / "s" / "main.jsonl").read_bytes() == files["main.jsonl"]


async def test_orphan_sidecar_of_an_unconfirmed_creation_is_removed(tmp_path: Path) -> None:
    files = await build_store(tmp_path / "s")
    orphan = tmp_path / "s" / "doc-77.jsonl"
    orphan.write_bytes(
        b'{"format":1,"type":"record","seq":21,"ordinal":0,"kind":"base","version":1,"payload":{}}\n'
    )
    store = await JsonlStorage.open(tmp_path / "s")
    assert "removed doc-77.jsonl" in store.repairs
    await store.close()
    assert read_dir(tmp_path / "s") == files


async def test_stray_reclaim_files_are_removed_at_open(tmp_path: Path) -> None:
    files = await build_store(tmp_path / "s")
    (tmp_path / "s" / f"doc-{L_DOC}.jsonl.reclaim").write_bytes(b'{"format":1,"type":"rec')
    (tmp_path / "s" / "doc-99.jsonl.reclaim").write_bytes(b"")
    store = await JsonlStorage.open(tmp_path / "s")
    assert sorted(store.repairs) == [
        f"removed stray doc-{L_DOC}.jsonl.reclaim",
        "removed stray doc-99.jsonl.reclaim",
    ]
    assert await dump(store) == await dump(await memory_after(BATCHES))
    await store.close()
    assert read_dir(tmp_path / "s") == files


async def test_a_clean_store_needs_no_repair(tmp_path: Path) -> None:
    files = await build_store(tmp_path / "s")
    store = await JsonlStorage.open(tmp_path / "s")
    assert store.repairs == ()
    await store.close()
    assert read_dir(tmp_path / "s") == files


async def test_empty_and_missing_main(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "main.jsonl").write_bytes(b"")
    for path in (tmp_path / "empty", tmp_path / "fresh"):
        store = await JsonlStorage.open(path)
        assert store.last_seq == 0
        assert await store.commit([]) == 1
        await store.close()
    (tmp_path / "orphans").mkdir()
    (tmp_path / "orphans" / "doc-5.jsonl").write_bytes(b"")
    with pytest.raises(StorageCorrupted, match=r"main\.jsonl is missing"):
        await JsonlStorage.open(tmp_path / "orphans")
