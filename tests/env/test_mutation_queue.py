"""The per-file mutation queue (R121): same file queues, other files never wait."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pi_durable_tui.env import FileMutationQueue, LocalEnv


@pytest.fixture
def queue() -> FileMutationQueue:
    return FileMutationQueue()


async def acquired_while_held(
    queue: FileMutationQueue,
    first: tuple[LocalEnv, str],
    second: tuple[LocalEnv, str],
    patience: float,
) -> bool:
    """Hold ``first``; return whether ``second`` was acquired within ``patience`` seconds.

    Tests expecting a wait use a short patience (a slow machine only makes the
    wait look longer); tests expecting no wait use a long one, which ends as
    soon as the second holder gets in.
    """
    release = asyncio.Event()
    entered = asyncio.Event()

    async def hold_first() -> None:
        async with queue.hold(*first):
            entered.set()
            await release.wait()

    holder = asyncio.ensure_future(hold_first())
    await entered.wait()
    other = asyncio.ensure_future(queue.hold(*second).__aenter__())
    await asyncio.wait({other}, timeout=patience)
    acquired = other.done()
    release.set()
    await holder
    await other
    return acquired


async def test_r121_two_mutations_of_one_file_queue(
    queue: FileMutationQueue, tmp_path: Path
) -> None:
    env = LocalEnv(str(tmp_path))
    order: list[str] = []

    async def mutate(name: str) -> None:
        async with queue.hold(env, "f.txt"):
            order.append(f"{name} in")
            await asyncio.sleep(0.01)
            order.append(f"{name} out")

    await asyncio.gather(mutate("a"), mutate("b"))
    assert order in (["a in", "a out", "b in", "b out"], ["b in", "b out", "a in", "a out"])
    assert len(queue) == 0


async def test_r121_other_files_never_wait(queue: FileMutationQueue, tmp_path: Path) -> None:
    env = LocalEnv(str(tmp_path))
    assert await acquired_while_held(queue, (env, "a.txt"), (env, "b.txt"), patience=10)


async def test_r121_spellings_of_one_file_share_a_slot(
    queue: FileMutationQueue, tmp_path: Path
) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f.txt").write_text("x")
    (tmp_path / "link").symlink_to("real")
    env = LocalEnv(str(tmp_path))
    real = str(tmp_path / "real" / "f.txt")
    assert not await acquired_while_held(queue, (env, "link/f.txt"), (env, real), patience=0.05)
    assert not await acquired_while_held(
        queue, (env, "link/new.txt"), (env, "real/new.txt"), patience=0.05
    )


async def test_r121_fresh_env_objects_with_equal_ids_share_a_queue(
    queue: FileMutationQueue, tmp_path: Path
) -> None:
    first, second = LocalEnv(str(tmp_path)), LocalEnv(str(tmp_path))
    assert not await acquired_while_held(queue, (first, "f.txt"), (second, "f.txt"), patience=0.05)
    sandbox = LocalEnv(str(tmp_path), id="sandbox")
    assert await acquired_while_held(queue, (first, "f.txt"), (sandbox, "f.txt"), patience=10)


async def test_r121_a_cancelled_waiter_leaves_no_slot_behind(
    queue: FileMutationQueue, tmp_path: Path
) -> None:
    env = LocalEnv(str(tmp_path))
    release = asyncio.Event()

    async def hold(wait: asyncio.Event | None) -> None:
        async with queue.hold(env, "f.txt"):
            if wait is not None:
                await wait.wait()

    holder = asyncio.ensure_future(hold(release))
    await asyncio.sleep(0.01)
    waiter = asyncio.ensure_future(hold(None))
    await asyncio.sleep(0.01)
    waiter.cancel()
    release.set()
    await holder
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert len(queue) == 0
