"""A background job this process runs: started as one, or moved there by Ctrl+B (issue 13).

Both kinds are one ``RunningCommand`` of ``_process`` whose output goes to the
job's log instead of a call: ``LocalEnv.start_job`` starts the command and
hands it over at once (``_jobs.spawn_job``); ``exec(..., move=event)`` hands
over a foreground command when ``event`` is set while it runs (the call then
returns at once, ``ExecResult.moved``, its result showing the output up to the
move: what the tail window held is delivered to the call first). From then on
the command's pipes are still read on the event loop, and what they bring goes
through ``JobLog`` (redacted as it is written) into ``job-<mark>.log`` in the
run's directory. The call's timeout and abort no longer reach it; ``stop()``,
``cleanup()`` and, after a crash, the guards end it.

``RunningJob`` is this process's handle: ``wait()`` until the command ended
(then what it left is ended, as for a foreground command), ``stop()`` to end it
(its group, then every process carrying its mark), ``keep()`` to leave it
running past this process: the command's orphan guard is released, the run
guard is told to spare its mark, the environment forgets its group and mark
(``cleanup()`` spares it), and the log's writing passes to a relay process
(``JobLog.keep``, ``_log_relay``) that carries the job's mark (so it is kept,
found and stopped with the job) and goes on redacting into the log, moved to
``pi-kept-job-<mark>.log`` in the temp directory.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal, Protocol

from pi_durable_tui.env._groups import ProcessGroup
from pi_durable_tui.env._job_log import JobLog
from pi_durable_tui.env._orphan_guard import OrphanGuard
from pi_durable_tui.env._run_guard import KEPT_LOG_PREFIX, RUN_GUARD
from pi_durable_tui.env._strays import carrying, end_processes
from pi_durable_tui.env._types import OutputCallback, OutputStream


class JobCommand(Protocol):
    """What a job needs of its running command (``_process.RunningCommand``)."""

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

    def move_output(self, write: OutputCallback) -> None:
        """Send the output to ``write`` from now on."""
        ...

    def open_pipes(self) -> list[tuple[OutputStream, int]]:
        """The read ends still open, by stream."""
        ...

    def drop_pipes(self) -> None:
        """Stop reading and close the read ends."""
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


class RunningJob:
    """A job this process runs (started by ``LocalEnv.start_job`` or moved by Ctrl+B).

    Args:
        command: The running command (its output goes to the log from now on).
        mark: The mark every process of the job carries.
        kill_grace: Seconds between ``SIGTERM`` and ``SIGKILL``.
        groups: The environment's live groups (the job's is in it until kept).
        marks: The environment's marks (the job's is in it until kept).
        end_leftovers: Ends what the command left once it ended.
        secrets: The values its log must never hold.

    Raises:
        OSError: The log cannot be created.
    """

    def __init__(
        self,
        command: JobCommand,
        mark: str,
        kill_grace: float,
        groups: set[ProcessGroup],
        marks: set[str],
        end_leftovers: Callable[[], Awaitable[None]],
        secrets: Sequence[bytes] = (),
    ) -> None:
        group = command.group
        assert group is not None
        self._command = command
        self._mark = mark
        self._group = group
        self._grace = kill_grace
        self._groups = groups
        self._marks = marks
        self._end_leftovers = end_leftovers
        self._log = JobLog(os.path.join(RUN_GUARD.spill_directory(), f"job-{mark}.log"), secrets)
        self._closed = False
        self.kept = False
        """Whether ``keep()`` left it running past this process."""
        command.move_output(self._log.write)

    @property
    def mark(self) -> str:
        """The mark every process of the job carries."""
        return self._mark

    @property
    def pid(self) -> int:
        """The PID of the command's leader."""
        return self._group.leader

    @property
    def log_path(self) -> str:
        """The job's log (moved by ``keep()``)."""
        return self._log.path

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
        self._log.close()  # what the log's streams held back: the job's last bytes
        if not self._group.alive():
            self._groups.discard(self._group)

    async def stop(self) -> None:
        """End the job: its group, every process carrying its mark (a kept job's relay too)."""
        self.kept = False
        self._command.stop("aborted")
        await self._command.wait()  # its group first: the leader's exit status is reaped
        await end_processes(carrying({self._mark}), self._grace)
        await self.wait()

    def keep(self) -> str:
        """Leave it running past this process; returns its log's new path.

        Raises:
            OSError: Its log's relay could not be started (it is not kept).
        """
        target = os.path.join(tempfile.gettempdir(), f"{KEPT_LOG_PREFIX}{self._mark}.log")
        # REMINDER: no await from here to drop_pipes: the relay alone reads the pipes now.
        path = self._log.keep(self._mark, self._command.open_pipes(), target)
        self._command.drop_pipes()
        self.kept = True
        guard = self._command.guard
        if guard is not None:
            guard.release()
        RUN_GUARD.keep(self._mark)
        self._groups.discard(self._group)
        self._marks.discard(self._mark)
        return path
