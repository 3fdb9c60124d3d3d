"""Process groups of ``exec``: reaping every member and killing the whole group (R120).

Each command runs as the leader of a new session, so its process group holds
the command and everything it starts (unless something calls ``setsid``).
Killing means ``SIGTERM`` to the group, a short grace, then ``SIGKILL``, until
no member is left.

No zombies: when a shell dies, its children are re-parented, normally to PID 1,
which on some machines (containers, micro-VMs) never reaps them, so a killed
``sleep`` would stay a zombie and ``kill(pid, 0)`` would still find it. The
first ``exec`` therefore makes this process a child subreaper (Linux
``PR_SET_CHILD_SUBREAPER``): orphans of our commands become our children, and
``reap`` collects every exited child whose process group is one of ours with
``waitid(P_PGID)``. Children of other code are never touched: their process
groups are not ours. Where ``prctl`` is missing, orphans go to PID 1 as usual.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import sys
import time

_PR_SET_CHILD_SUBREAPER = 36
_subreaper: bool | None = None

KILL_POLL_SECONDS = 0.005
"""How often a dying group is checked; members die within a few milliseconds."""

LOST_EXIT_CODE = 255
"""The exit code reported when another part of the process reaped the command."""

KILL_WAIT_SECONDS = 5.0
"""How long to wait after ``SIGKILL`` for members that cannot be reaped here."""


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (once; Linux only).

    Returns:
        Whether orphans of our commands now come to this process.
    """
    global _subreaper
    if _subreaper is None:
        _subreaper = False
        if sys.platform.startswith("linux"):
            with contextlib.suppress(OSError, AttributeError):
                libc = ctypes.CDLL(None, use_errno=True)
                _subreaper = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    return _subreaper


def exit_code_of(si_code: int, si_status: int) -> int:
    """An exit status from ``waitid`` fields; a fatal signal ``n`` gives ``128 + n``."""
    if si_code == os.CLD_EXITED:
        return si_status
    return 128 + si_status


_live: set[ProcessGroup] = set()


def live_groups() -> list[ProcessGroup]:
    """Every group of this process not yet known to be empty (whichever environment started it)."""
    return list(_live)


def reap_finished_groups() -> None:
    """Reap exited members of every group still known in this process, and forget empty ones.

    Background processes of commands that returned (``sleep 9 &``) become
    zombies of this process when they end; each new command collects them, so
    they never pile up, whichever environment object started them.
    """
    for group in list(_live):
        group.alive()


class ProcessGroup:
    """One command's process group: its leader's exit status and its remaining members."""

    def __init__(self, leader: int) -> None:
        self.leader = leader
        self.exit_code: int | None = None
        self._killing: asyncio.Task[None] | None = None
        _live.add(self)

    def reap(self) -> None:
        """Collect every exited child in the group (the leader's status is kept)."""
        while True:
            try:
                result = os.waitid(os.P_PGID, self.leader, os.WEXITED | os.WNOHANG)
            except ChildProcessError:
                if self.exit_code is None:
                    # The leader is no child of ours any more: something else reaped it
                    # (SIGCHLD ignored, a stray waitpid(-1)). Its status is lost.
                    self.exit_code = LOST_EXIT_CODE
                return
            if result is None:
                return
            if result.si_pid == self.leader:
                self.exit_code = exit_code_of(result.si_code, result.si_status)

    def alive(self) -> bool:
        """Whether any process (zombies included) is still in the group."""
        self.reap()
        try:
            os.killpg(self.leader, 0)
        except ProcessLookupError:
            _live.discard(self)
            return False
        except PermissionError:
            return True
        return True

    def _signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.leader, signum)

    async def _wait_empty(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while self.alive():
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(KILL_POLL_SECONDS)
        return True

    async def _kill(self, grace: float) -> None:
        self._signal(signal.SIGTERM)
        if await self._wait_empty(grace):
            return
        self._signal(signal.SIGKILL)
        await self._wait_empty(KILL_WAIT_SECONDS)

    def kill(self, grace: float) -> asyncio.Task[None]:
        """Start killing the group (``SIGTERM``, ``grace`` seconds, ``SIGKILL``), once.

        Returns:
            The task that ends when no member is left (or after a last bounded wait).
        """
        if self._killing is None:
            self._killing = asyncio.get_running_loop().create_task(self._kill(grace))
        return self._killing
