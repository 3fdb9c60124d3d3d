"""Run a server as the child of a Linux child subreaper that collects every orphan.

Usage: ``python sshd_reaper.py PROGRAM ARGS...``. The test's ``sshd`` runs under
it, so processes its sessions leave behind are reaped here as ``init`` reaps
them on a real host. SIGTERM stops the server, then kills what its sessions
left running in this process's descendants; the reaper exits when none is left.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys

PR_SET_CHILD_SUBREAPER = 36


def _descendants() -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found: list[int] = []
    pending = [os.getpid()]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


def _kill(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


def main(argv: list[str]) -> int:
    """Start ``argv`` and reap until it and every adopted orphan are gone."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    server = os.fork()
    if server == 0:
        os.setsid()
        os.execv(argv[0], argv)
    stopping = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True
        _kill([server], signal.SIGTERM)
        _kill([pid for pid in _descendants() if pid != server], signal.SIGKILL)

    signal.signal(signal.SIGTERM, stop)
    status = 0
    while True:
        try:
            pid, code = os.waitpid(-1, 0)
        except ChildProcessError:
            return status
        if pid == server:
            status = os.waitstatus_to_exitcode(code)
        if stopping:
            _kill(_descendants(), signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
