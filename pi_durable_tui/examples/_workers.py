"""How the crash examples run a worker process: start it, kill it with SIGKILL, start it again."""

from __future__ import annotations

import signal
import subprocess


def kill_and_rerun(command: list[str], kill_at: str) -> None:
    """Run a worker twice on the same store: killed mid-way, then to the end.

    The first run's lines are printed as ``worker 1: ...`` until one starts with
    ``kill_at``; the worker is then killed with SIGKILL (no cleanup of any kind
    runs). The second run goes to the end and its lines are printed as
    ``worker 2: ...``.

    Args:
        command: The worker's command line.
        kill_at: The beginning of the output line at which to kill the first run.

    Raises:
        subprocess.CalledProcessError: The second run failed.
    """
    first = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert first.stdout is not None
    for line in first.stdout:
        print("worker 1:", line.rstrip())
        if line.startswith(kill_at):
            first.send_signal(signal.SIGKILL)
            break
    first.wait()
    first.stdout.close()
    print("worker 1 was killed with SIGKILL")
    second = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
    for line in second.stdout.splitlines():
        print("worker 2:", line)
