"""The per-file mutation queue (R121): same file queues, other files never wait."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pi_durable_tui.env import FileMutationQueue, LocalEnv


@pytest.fixture
def queue() -> FileMutationQueue:
    return FileMutationQueue()


async def holds_while_other_waits(
    queue: FileMutationQueue, first: tuple[LocalEnv, str], second: tuple[LocalEnv, str]
) -> bool:
    """Hold ``first``; return whether a holder of ``second`` had to wait for it."""
    release = asyncio.Event()
    entered = asyncio.Event()

    async def hold_first() -> None:
        async with queue.hold(*first):
            entered.set()
            await release.wait()

    holder = asyncio.ensure_future(hold_first())
    await entered.wait()
    other = asyncio.ensure_future(queue.hold(*second).__aenter__())
    await asyncio.sleep(0.02)
    waited = not other.done()
    release.set()
    await holder
    await other
    return waited


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
    assert not await holds_while_other_waits(queue, (env, "a.txt"), (env, "b.txt"))


async def test_r121_spellings_of_one_file_share_a_slot(
    queue: FileMutationQueue, tmp_path: Path
) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f.txt").write_text("x")
    (tmp_path / "link").symlink_to("real")
    env = LocalEnv(str(tmp_path))
    assert await holds_while_other_waits(
        queue, (env, "link/f.txt"), (env, str(tmp_path / "real" / "f.txt"))
    )
    assert await holds_while_other_waits(queue, (env, "link/new.txt"), (env, "real/new.txt"))


async def test_r121_fresh_env_objects_with_equal_ids_share_a_queue(
    queue: FileMutationQueue, tmp_path: Path
) -> None:
    first, second = LocalEnv(str(tmp_path)), LocalEnv(str(tmp_path))
    assert await holds_while_other_waits(queue, (first, "f.txt"), (second, "f.txt"))
    sandbox = LocalEnv(str(tmp_path), id="sandbox")
    assert not await holds_while_other_waits(queue, (first, "f.txt"), (sandbox, "f.txt"))


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
