"""A remote command's process group dies with the process that started it (issue 17).

The remote guard of ``_remote_shell`` kills the group when the channel's stdin
ends while the command runs. These tests SIGKILL a real Python process whose
``SshEnv`` runs a long command on the test ``sshd`` (on this machine, so the
remote processes are in this machine's ``/proc``), and check that the command
and the background process it started die, that a command whose client lives
is left alone, and that stdin and descriptors look as they do locally.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from pi_durable_tui.env.conformance import Captured
from pi_durable_tui.env.ssh import SshEnv
from tests.env.sshd_server import Sshd
from tests.env.test_orphan_guard import group_members, running, wait_until


@pytest.fixture
async def env(ssh_client: Sshd, tmp_path: Path) -> AsyncIterator[SshEnv]:
    environment = await SshEnv.connect(ssh_client.url(str(tmp_path)), kill_grace=0.1)
    yield environment
    await environment.close()


@pytest.fixture
def parent(ssh_client: Sshd, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """A real Python process whose ``SshEnv`` runs a long remote command; killed after."""
    pid_file = tmp_path / "command.pid"
    script = textwrap.dedent(
        f"""
        import asyncio
        from pi_durable_tui.env.ssh import SshEnv

        async def main():
            env = await SshEnv.connect({ssh_client.url(str(tmp_path))!r})
            await env.exec(
                "sleep 300 & a=$!; setsid sleep 300 & "
                "echo $$ $a $! > {pid_file}.tmp; mv {pid_file}.tmp {pid_file}; wait"
            )

        asyncio.run(main())
        """
    )
    environ = {**os.environ, "HOME": str(ssh_client.home)}
    process = subprocess.Popen([sys.executable, "-c", script], env=environ)
    yield process, pid_file
    if process.poll() is None:
        process.kill()
    process.wait()


def test_a_running_remote_command_and_what_it_setsid_are_killed_when_its_client_is_killed(
    parent: tuple[subprocess.Popen[bytes], Path],
) -> None:
    process, pid_file = parent
    wait_until(pid_file.exists, "the remote command to start")
    shell, sleeper, detached = (int(pid) for pid in pid_file.read_text().split())
    time.sleep(0.3)
    assert running(shell), "the guard must not kill a live client's command"
    assert running(sleeper)
    assert running(detached)

    os.kill(process.pid, signal.SIGKILL)
    process.wait()

    wait_until(lambda: not group_members(shell), "the remote command's group to die")
    assert not running(sleeper)
    wait_until(lambda: not running(detached), "the setsid process (by its mark, issue 13)")


async def test_a_remote_command_keeps_its_exit_status_and_empty_stdin_under_the_guard(
    env: SshEnv,
) -> None:
    captured = Captured()

    result = await env.exec(
        ["sh", "-c", 'if read -r line; then echo "read $line"; else echo eof; fi; exit 7'],
        on_output=captured,
    )

    assert (result.exit_code, captured.text()) == (7, "eof\n")


async def test_a_remote_command_sees_only_its_own_standard_descriptors(env: SshEnv) -> None:
    captured = Captured()

    await env.exec(["sh", "-c", "ls /proc/$$/fd"], on_output=captured)

    assert sorted(captured.text().split()) == ["0", "1", "2"]


async def test_a_stopped_remote_command_takes_its_whole_group_with_it(env: SshEnv) -> None:
    captured = Captured()
    with pytest.raises(Exception) as caught:
        await env.exec("trap '' TERM; sleep 300 & echo $$; wait", timeout=0.5, on_output=captured)
    assert getattr(caught.value, "code", None) == "timeout"
    group = int(captured.first_line())
    wait_until(lambda: not group_members(group), "a TERM-proof group to be killed")
