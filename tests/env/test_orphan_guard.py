"""A command's process group dies with the process that started it (``_orphan_guard``).

``cleanup()`` kills running commands when an environment closes (R120); a process
killed with SIGKILL runs no cleanup, so each command carries a guard that kills
its group when that process is gone. These tests kill a real process with
SIGKILL while its command runs, and check that a finished command leaves no
guard behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from pi_durable_tui.env import LocalEnv
from pi_durable_tui.env.conformance import Captured

DEADLINE_S = 10.0


def running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not exited (a zombie has exited)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return fields[0] not in ("Z", "X")


def group_members(pgid: int) -> list[int]:
    """The processes of a process group that have not exited."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            members.append(int(entry.name))
    return members


def wait_until(test: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not test():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {DEADLINE_S:.0f} s for {what}")
        time.sleep(0.02)


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[LocalEnv]:
    environment = LocalEnv(str(tmp_path), kill_grace=0.1)
    yield environment
    await environment.cleanup()


@pytest.fixture
def parent(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """A real Python process whose ``LocalEnv`` runs a long command; killed after the test."""
    pid_file = tmp_path / "command.pid"
    script = textwrap.dedent(
        f"""
        import asyncio
        from pi_durable_tui.env import LocalEnv

        async def main():
            env = LocalEnv({str(tmp_path)!r})
            await env.exec("echo $$ > {pid_file}.tmp; mv {pid_file}.tmp {pid_file}; sleep 300")

        asyncio.run(main())
        """
    )
    process = subprocess.Popen([sys.executable, "-c", script])
    yield process, pid_file
    if process.poll() is None:
        process.kill()
    process.wait()


def test_a_running_command_is_killed_when_its_process_is_killed_with_sigkill(
    parent: tuple[subprocess.Popen[bytes], Path],
) -> None:
    process, pid_file = parent
    wait_until(pid_file.exists, "the command to start")
    command = int(pid_file.read_text())
    time.sleep(0.3)
    assert running(command), "the guard must not kill a command whose process lives"

    os.kill(process.pid, signal.SIGKILL)
    process.wait()

    wait_until(lambda: not group_members(command), "the command's group to die")


async def test_a_finished_command_leaves_no_guard_in_its_group(env: LocalEnv) -> None:
    captured = Captured()

    result = await env.exec("echo $$", on_output=captured)

    assert result.exit_code == 0
    pgid = int(captured.text())
    wait_until(lambda: not group_members(pgid), "the guard to leave")


async def test_a_command_keeps_its_pid_exit_status_and_empty_stdin_under_the_guard(
    env: LocalEnv,
) -> None:
    captured = Captured()

    result = await env.exec(
        ["sh", "-c", 'if read -r line; then echo "read $line"; else echo eof; fi; exit 7'],
        on_output=captured,
    )

    assert (result.exit_code, captured.text()) == (7, "eof\n")


async def test_a_command_sees_only_its_own_standard_descriptors(env: LocalEnv) -> None:
    captured = Captured()

    await env.exec(["sh", "-c", "ls /proc/$$/fd"], on_output=captured)

    assert sorted(captured.text().split()) == ["0", "1", "2"]


async def test_a_program_given_relative_to_the_working_directory_runs_guarded(
    env: LocalEnv, tmp_path: Path
) -> None:
    script = tmp_path / "children.sh"
    # ``read`` is a builtin: the only child the script has is its guard, if any.
    script.write_text('#!/bin/sh\nread -r kids < /proc/$$/task/$$/children; echo "[$kids]"\n')
    script.chmod(0o755)
    captured = Captured()

    result = await env.exec(["./children.sh"], on_output=captured)

    assert result.exit_code == 0
    assert captured.text().strip() not in ("[]", ""), "the command has no guard"
