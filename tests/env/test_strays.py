"""Which processes came from a command an agent ran (``env._strays``, issues 13 and 15)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

from pi_durable_tui.env import MARK_NAME, started_by_a_command

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
