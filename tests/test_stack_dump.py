"""``pi_durable_tui.stack_dump``: a running process writes its stacks on SIGUSR1 (issue 12).

A real child process arms the dump, blocks in an asyncio wait, and gets
SIGUSR1: its stderr shows every thread's stack and the await chain of each task
down to the future it waits on, then the end marker, and the process goes on
(it exits when told to). Without ``PIDURABLE_STACK_DUMP`` nothing is armed.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from pi_durable_tui import stack_dump

CHILD = """
import asyncio, sys
from pi_durable_tui import stack_dump

async def stuck_in_a_wait(event):
    await event.wait()

async def main():
    armed = stack_dump.install()
    event = asyncio.Event()
    waiter = asyncio.ensure_future(stuck_in_a_wait(event))
    loop = asyncio.get_running_loop()
    loop.add_reader(sys.stdin.fileno(), event.set)  # a line on stdin ends the wait
    await asyncio.sleep(0)  # the waiter reaches its wait before the test signals
    print("armed" if armed else "off", flush=True)
    await waiter
    print("done", flush=True)

asyncio.run(main())
"""
DEADLINE = 60.0


def _start(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD],
        cwd=Path(__file__).resolve().parents[1],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _read_until(stream: int, marker: bytes) -> bytes:
    """Read ``stream`` until ``marker`` shows (or the deadline passes)."""
    data = b""
    deadline = time.monotonic() + DEADLINE
    while marker not in data and time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], deadline - time.monotonic())
        if not ready:
            break
        chunk = os.read(stream, 1 << 16)
        if not chunk:
            break
        data += chunk
    return data


def test_sigusr1_writes_every_thread_and_task_stack_and_the_process_goes_on() -> None:
    env = {**os.environ, stack_dump.ENV_VAR: "1"}
    child = _start(env)
    assert child.stdout is not None
    assert child.stderr is not None
    assert child.stdin is not None
    try:
        assert _read_until(child.stdout.fileno(), b"\n") == b"armed\n"
        child.send_signal(stack_dump.SIGNAL)
        dump = _read_until(child.stderr.fileno(), stack_dump.END_MARKER.encode()).decode()
        child.stdin.write(b"go\n")
        child.stdin.flush()
        assert _read_until(child.stdout.fileno(), b"\n") == b"done\n"
        assert child.wait(timeout=DEADLINE) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    # faulthandler: the main thread's frames (where it stands when the signal lands
    # is the machine's timing: the loop's select, or still printing "armed").
    assert "Current thread" in dump
    assert 'File "' in dump[dump.index("Current thread") :]
    assert "asyncio:" in dump
    # The task's await chain ends at the event's future.
    chain = dump[dump.index("in stuck_in_a_wait") :]
    assert "in wait" in chain
    assert "waits on <Future pending" in chain
    assert dump.rstrip().endswith(stack_dump.END_MARKER)


def test_without_the_variable_nothing_is_armed() -> None:
    env = {k: v for k, v in os.environ.items() if k != stack_dump.ENV_VAR}
    child = _start(env)
    assert child.stdout is not None
    assert child.stdin is not None
    try:
        assert _read_until(child.stdout.fileno(), b"\n") == b"off\n"
        child.stdin.write(b"go\n")
        child.stdin.flush()
        assert child.wait(timeout=DEADLINE) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert signal.getsignal(stack_dump.SIGNAL) == signal.SIG_DFL  # this process: untouched
