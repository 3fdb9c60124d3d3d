"""A guard in each command's process group that kills the group when this process dies.

``cleanup()`` kills every command still running when the environment closes
(R120), but a process killed with SIGKILL, or whose terminal closed, runs no
cleanup: its commands (in sessions of their own, so no hangup reaches them) would
run on as orphans, and after ``pidurable --continue`` the model would be told a
``bash`` call was interrupted while it still runs (a test suite, a migration, a
server holding its port).

So every command starts under a small ``/bin/sh`` wrapper that forks a guard into
the command's process group, then ``exec``s the command (same PID, same exit
status, stdin from ``/dev/null`` as always). The guard blocks reading one end of
a pipe (the wrapper's stdin) whose other end only this process holds:

- the command finishes and ``release()`` writes a line: the guard exits quietly;
- this process dies, however it dies: the kernel closes the write end, the guard
  reads end-of-file and, a second later, sends ``SIGKILL`` to its process group,
  command included. The second lets the run guard (``_run_guard``) see the
  command's process tree whole first, so it also finds descendants that left
  the group and cleared their environment (``env -i setsid cmd &``).

A command that cannot be found is started without the wrapper, so its error is
the spawn error it always was; so is every command where ``/bin/sh`` is missing.
A background process a command leaves behind outlives its guard, as it outlives
the command; ``cleanup()`` still kills it when the environment closes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence

SHELL = "/bin/sh"

# REMINDER: the guard's pipe arrives as stdin; it moves to fd 3 (dash knows only
# fds 0-9, and an asynchronous list gets /dev/null as its stdin), the guard reads a
# line there and exits 0 on one (released), and at end-of-file kills its own
# process group (a second later: the run guard goes first). The command gets
# stdin from /dev/null and no fd 3, or it would keep the pipe open for a dead parent.
_SCRIPT = """exec 3<&0 </dev/null
( if read -r _ <&3; then exit 0; fi; sleep 1; kill -KILL 0 ) >/dev/null 2>&1 &
exec "$@" 3<&-
"""


class OrphanGuard:
    """The pipe between this process and the guard of one command."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()  # neither end is inherited by default

    def wrap(
        self, argv: Sequence[str], environ: Mapping[str, str], cwd: str
    ) -> tuple[list[str], int]:
        """Return ``argv`` under the guard's wrapper and the stdin to start it with.

        Where the wrapper cannot run, ``argv`` is returned unchanged with
        ``subprocess.DEVNULL``, the stdin of every command.

        Args:
            argv: The command.
            environ: Its environment (``PATH`` decides whether the program exists).
            cwd: Its working directory (a relative program path starts there).
        """
        if not os.path.exists(SHELL) or not _runnable(argv[0], environ, cwd):
            self.spawned()
            return list(argv), subprocess.DEVNULL
        return [SHELL, "-c", _SCRIPT, "sh", *argv], self._read

    def spawned(self) -> None:
        """Close this process's copy of the guard's end (after the spawn, or without one)."""
        if self._read >= 0:
            os.close(self._read)
            self._read = -1

    def release(self) -> None:
        """Let the guard exit without killing anything: the command is over (idempotent)."""
        self.spawned()
        if self._write < 0:
            return
        with contextlib.suppress(OSError):  # the guard is gone already: a killed group
            os.write(self._write, b"\n")
        os.close(self._write)
        self._write = -1


def _runnable(program: str, environ: Mapping[str, str], cwd: str) -> bool:
    if os.sep in program:
        path = os.path.join(cwd, program)  # an absolute program stays as it is
        return os.path.isfile(path) and os.access(path, os.X_OK)
    return shutil.which(program, path=environ.get("PATH", os.defpath)) is not None
