"""Which processes came from a command an agent ran (``env._strays``, issues 13 and 15)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pi_durable_tui.env import MARK_NAME, LocalEnv, started_by_a_command
from tests.deadlines import WAIT

Spawn = Callable[..., subprocess.Popen[bytes]]


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    """Starts sleeping children (``Popen`` options as given); ends them at teardown.

    Each is returned once it runs Python: right after ``Popen`` returns, the
    kernel may not have set the new program's environment up yet (``environ``
    reads empty), which a socket peer, already connected, is long past.
    """
    started: list[subprocess.Popen[bytes]] = []

    def start(**options: object) -> subprocess.Popen[bytes]:
        child = subprocess.Popen(  # type: ignore[call-overload]
            [sys.executable, "-c", "import time; print(flush=True); time.sleep(60)"],
            stdout=subprocess.PIPE,
            **options,
        )
        started.append(child)
        assert child.stdout is not None
        assert child.stdout.readline() == b"\n"
        return child

    yield start
    for child in started:
        child.kill()
        child.wait()


def test_this_process_and_its_own_children_in_its_group_are_not_commands(spawn: Spawn) -> None:
    clean = {k: v for k, v in os.environ.items() if k != MARK_NAME}
    assert started_by_a_command(os.getpid()) is False
    assert started_by_a_command(spawn(env=clean).pid) is False


def test_a_marked_process_is_a_command(spawn: Spawn) -> None:
    marked = {**os.environ, MARK_NAME: "1234-abc.1"}
    assert started_by_a_command(spawn(env=marked).pid) is True


def test_a_child_outside_this_process_group_without_a_mark_is_a_command(spawn: Spawn) -> None:
    clean = {k: v for k, v in os.environ.items() if k != MARK_NAME}
    assert started_by_a_command(spawn(env=clean, start_new_session=True).pid) is True


def test_a_process_that_is_gone_is_not_a_command() -> None:
    argv = [sys.executable, "-c", "import os; print(os.getpid())"]
    done = subprocess.run(argv, capture_output=True, check=True)
    assert started_by_a_command(int(done.stdout)) is False


async def test_a_moved_command_never_ends_a_child_of_this_process_it_did_not_start(
    spawn: Spawn, tmp_path: Path
) -> None:
    # A server of this process in a session of its own (a test's sshd, an MCP server),
    # started before the command: it is not the command's orphan when the job ends.
    server = spawn(start_new_session=True)
    env = LocalEnv(str(tmp_path))
    move = asyncio.Event()
    move.set()
    result = await asyncio.wait_for(env.exec("sleep 0.2", move=move), WAIT)
    assert result.moved is not None

    assert await asyncio.wait_for(result.moved.wait(), WAIT) == 0
    await env.cleanup()
    assert server.poll() is None


async def test_a_marked_child_started_while_a_command_runs_outlives_it(
    spawn: Spawn, tmp_path: Path
) -> None:
    env = LocalEnv(str(tmp_path))
    call = asyncio.ensure_future(env.exec("sleep 0.5", end_background=True))
    await asyncio.sleep(0.1)
    marked = spawn(start_new_session=True, env={**os.environ, MARK_NAME: "other-run.1"})
    unmarked = spawn(start_new_session=True, env={"PATH": os.environ.get("PATH", "")})

    assert (await asyncio.wait_for(call, WAIT)).exit_code == 0

    assert marked.poll() is None  # a helper of this process, marked as every one is
    assert unmarked.poll() is not None  # what the orphan rule is for: it cleared its mark
