"""A foreground command moved to the background while it runs (Ctrl+B, issue 13).

``exec(..., move=event)``: when ``event`` is set while the command runs, the
call returns at once (``ExecResult.moved``) and the command keeps running as a
``MovedJob``. What the tail window held is delivered to the call first (its
result shows the output up to the move); from then on the command's pipes are
still read by this process, and what they bring is written to a log in the
run's directory (``job-<mark>.log``, mode 0600), as a started job's output is
(``_jobs``). The call's timeout and abort no longer reach it; ``stop()``,
``cleanup()`` and, after a crash, the guards end it.

``keep()`` leaves it running past this process: as for a started job (the
command's guard released, the run guard's ``keep``, the environment forgets
it), and since its output comes through pipes this process holds, one ``cat``
per open pipe (carrying the job's mark, so it is kept too) takes over copying
into the log, which moves to ``pi-kept-job-<mark>.log`` in the temp directory.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Awaitable, Callable
from typing import Literal, Protocol

from pi_durable_tui.env._groups import ProcessGroup
from pi_durable_tui.env._job_base import OwnedJob
from pi_durable_tui.env._orphan_guard import OrphanGuard
from pi_durable_tui.env._run_guard import RUN_GUARD
from pi_durable_tui.env._strays import MARK_NAME


class MovableCommand(Protocol):
    """What a running command of ``_process`` offers a move."""

    @property
    def group(self) -> ProcessGroup | None:
        """Its process group."""
        ...

    @property
    def guard(self) -> OrphanGuard | None:
        """Its orphan guard."""
        ...

    @property
    def finished(self) -> bool:
        """Whether it ended and its pipes closed."""
        ...

    def move_output(self, log: int) -> None:
        """Write the output to ``log`` from now on."""
        ...

    def open_pipes(self) -> list[int]:
        """The read ends still open."""
        ...

    def drop_pipes(self) -> None:
        """Close the read ends."""
        ...

    def stop(self, reason: Literal["aborted"]) -> None:
        """Kill the group."""
        ...

    async def wait(self) -> None:
        """Wait until it ended."""
        ...

    def finish(self) -> None:
        """Drop every handle."""
        ...


class MovedJob(OwnedJob):
    """A command that left its call and runs on as a background job."""

    def __init__(
        self,
        command: MovableCommand,
        mark: str,
        kill_grace: float,
        groups: set[ProcessGroup],
        marks: set[str],
        end_leftovers: Callable[[], Awaitable[None]],
    ) -> None:
        group = command.group
        assert group is not None
        log_path = os.path.join(RUN_GUARD.spill_directory(), f"job-{mark}.log")
        super().__init__(mark, group, log_path, kill_grace, groups, marks)
        self._command = command
        self._end_leftovers = end_leftovers
        self._log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        self._closed = False
        command.move_output(self._log)

    def running(self) -> bool:
        """Whether it has not ended."""
        return not self._command.finished

    async def wait(self) -> int | None:
        """Wait until it ended, end what it left, drop its handles; its exit code."""
        await self._command.wait()
        if not self.kept:
            await self._end_leftovers()
        self._close()
        return self._group.exit_code

    def _close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._command.finish()
        os.close(self._log)
        if not self._group.alive():
            self._groups.discard(self._group)

    async def stop(self) -> None:
        """End the job (its group, then what it left)."""
        self._command.stop("aborted")
        await self.wait()

    def keep(self) -> str:
        """Leave it running past this process; returns its log's new path."""
        environ = {**os.environ, MARK_NAME: self._mark}
        for fd in self._command.open_pipes():
            with contextlib.suppress(OSError):
                # REMINDER: our read ends are non-blocking; cat would stop at EAGAIN.
                os.set_blocking(fd, True)
                drainer = subprocess.Popen(
                    ["cat"],
                    stdin=fd,
                    stdout=self._log,
                    stderr=subprocess.DEVNULL,
                    env=environ,
                    start_new_session=True,
                    close_fds=True,
                )
                drainer.returncode = 0  # REMINDER: it outlives us; never waited on
        self._command.drop_pipes()
        return self.keep_owned(self._command.guard)
