"""kill -9 of ``pidurable -p --env ssh://...`` during a remote command (issue 17).

The real product runs against the real test ``sshd``: a faux script's first
answer calls ``bash`` with a command that records its PID in the remote
working directory and sleeps 300 s. Once that PID is there, the ``pidurable``
process gets SIGKILL. Then the remote command's whole process group must be
gone (its guard saw the channel end), and ``pidurable -c -p --env ...`` must
tell the model the call was interrupted (the script's second answer is chosen
only by a tool result that says so) and exit 0. The server is on this
machine, so the remote processes are in this machine's ``/proc``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.env.sshd_server import Sshd
from tests.env.test_orphan_guard import group_members, running, wait_until

SCRIPT = {
    "responses": [
        {
            "content": [
                {
                    "type": "tool_call",
                    "name": "bash",
                    "arguments": {"command": "echo $$ > started.pid; sleep 300; echo never"},
                }
            ],
            "stop_reason": "toolUse",
        },
        {
            "match": {"tool_result": "interrupted"},
            "content": [{"type": "text", "text": "the remote command was interrupted"}],
            "stop_reason": "stop",
        },
        {"content": [{"type": "text", "text": "no interruption was reported"}]},
    ]
}


def _pidurable(*args: str) -> list[str]:
    return [sys.executable, "-m", "pi_durable_tui", *args]


def test_a_killed_pidurable_leaves_no_remote_command_and_continue_reports_it_interrupted(
    ssh_client: Sshd, tmp_path: Path
) -> None:
    remote = tmp_path / "remote"
    remote.mkdir()
    local = tmp_path / "local"
    local.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    url = ssh_client.url(str(remote))
    environ = {
        **os.environ,
        "HOME": str(ssh_client.home),
        "PIDURABLE_HOME": str(tmp_path / "pidurable-home"),
    }
    environ.pop("SSH_AUTH_SOCK", None)
    first = subprocess.Popen(
        _pidurable(
            "--env",
            url,
            "--faux-script",
            str(script),
            "--model",
            "faux/faux-1",
            "-p",
            "go",
            "--permission-mode",
            "auto",
        ),
        cwd=local,
        env=environ,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        pid_file = remote / "started.pid"
        wait_until(lambda: pid_file.exists() and pid_file.read_text().strip() != "", "the call")
        command = int(pid_file.read_text())
        assert running(command)
        first.send_signal(signal.SIGKILL)
        first.wait()
    finally:
        if first.poll() is None:
            first.kill()
        first.communicate()

    wait_until(lambda: not group_members(command), "the remote command's group to die")

    second = subprocess.run(
        _pidurable("-c", "--env", url, "-p", "--permission-mode", "auto"),
        cwd=local,
        env=environ,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "the remote command was interrupted"
