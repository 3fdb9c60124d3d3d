"""Background jobs: commands that run on after the call that started them (issue 13).

A foreground command (``exec``) is ended when its call ends. A job is a
command the user wants to keep running for a while (a dev server, a watcher):
``LocalEnv.start_job`` spawns it like ``exec`` does (a session and process
group of its own, the call's mark, stdin from ``/dev/null``, the command's
``OrphanGuard``), but its stdout and stderr go to a log file, not to pipes, so
it never blocks on a reader and its output outlives this process. The log is
in this run's directory (``_run_guard``, mode 0700), so a run killed with
``SIGKILL`` leaves none behind; the guard ends the job too.

``RunningJob`` is this process's handle: ``wait()`` until the command's leader
exits (then what it left is ended, as for a foreground command), ``stop()`` to
end it (its group, then every process carrying its mark), ``keep()`` to leave
it running past this process: its guard is released, the run guard is told to
spare its mark, the environment forgets it (``cleanup()`` spares it) and its
log moves out of the run directory (a rename: the job's open descriptor keeps
writing to it) to ``pi-kept-job-<mark>.log`` in the temp directory, which
nothing deletes.

``KeptJob`` is the handle of a job an earlier run kept: only its mark, leader
PID and log are known; it is running while a process carries its mark, and
``stop()`` ends those.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Mapping, Sequence
from typing import Protocol

from pi_durable_tui.env._errors import FileError
from pi_durable_tui.env._groups import (
    ProcessGroup,
    become_subreaper,
    reap_finished_groups,
)
from pi_durable_tui.env._job_base import OwnedJob
from pi_durable_tui.env._orphan_guard import OrphanGuard
from pi_durable_tui.env._process import end_strays, spawn_guarded
from pi_durable_tui.env._run_guard import RUN_GUARD
from pi_durable_tui.env._strays import (
    carrying,
    children_of_this_process,
    end_processes,
)

_POLL_SECONDS = 0.05
_KEPT_POLL_SECONDS = 1.0


class JobProcess(Protocol):
    """What a job's task needs of its process, started here or kept by an earlier run."""

    @property
    def mark(self) -> str:
        """The mark every process of the job carries."""
        ...

    @property
    def pid(self) -> int:
        """The PID of the command's leader."""
        ...

    @property
    def log_path(self) -> str:
        """The file its stdout and stderr go to."""
        ...

    def running(self) -> bool:
        """Whether the job's command is still running."""
        ...

    async def wait(self) -> int | None:
        """Wait until it ends; its exit code when known."""
        ...

    async def stop(self) -> None:
        """End every process of the job."""
        ...

    def seal_log(self) -> None:
        """Redact the log of the ended job (its last output is committed)."""
        ...


class RunningJob(OwnedJob):
    """A job this process started (``LocalEnv.start_job``)."""

    def __init__(
        self,
        *,
        mark: str,
        group: ProcessGroup,
        guard: OrphanGuard,
        log_path: str,
        kill_grace: float,
        groups: set[ProcessGroup],
        marks: set[str],
    ) -> None:
        super().__init__(mark, group, log_path, kill_grace, groups, marks)
        self._guard = guard
        self._ended = False

    @property
    def exit_code(self) -> int | None:
        """The leader's exit status, once it exited."""
        self._group.reap()
        return self._group.exit_code

    def running(self) -> bool:
        """Whether the leader has not exited yet."""
        return self.exit_code is None

    async def wait(self) -> int | None:
        """Wait for the leader's exit, then end what it left; return its exit code."""
        while self.exit_code is None:
            await asyncio.sleep(_POLL_SECONDS)
        await self._end_leftovers()
        return self._group.exit_code

    async def _end_leftovers(self) -> None:
        if self._ended or self.kept:
            return
        self._ended = True
        self._guard.release()
        await end_strays(self._mark, self._group, children_of_this_process(), self._grace)

    async def stop(self) -> None:
        """End the job: its process group, then every process carrying its mark."""
        self.kept = False
        await asyncio.shield(self._group.kill(self._grace))
        await end_processes(carrying({self._mark}), self._grace)
        await self._end_leftovers()

    def keep(self) -> str:
        """Leave the job running past this process; returns its log's new path."""
        return self.keep_owned(self._guard)


class KeptJob:
    """A job an earlier run left running (the user chose to keep it)."""

    def __init__(self, mark: str, pid: int, log_path: str, kill_grace: float = 0.5) -> None:
        self._mark = mark
        self._pid = pid
        self._log_path = log_path
        self._grace = kill_grace

    @property
    def mark(self) -> str:
        """The mark every process of the job carries."""
        return self._mark

    @property
    def pid(self) -> int:
        """The PID its leader had."""
        return self._pid

    @property
    def log_path(self) -> str:
        """The job's log."""
        return self._log_path

    def running(self) -> bool:
        """Whether a process still carries the job's mark."""
        return bool(carrying({self._mark}))

    async def wait(self) -> int | None:
        """Wait until no process carries the mark (its exit code is not ours to know)."""
        while self.running():
            await asyncio.sleep(_KEPT_POLL_SECONDS)
        return None

    async def stop(self) -> None:
        """End every process carrying the job's mark."""
        await end_processes(carrying({self._mark}), self._grace)

    def seal_log(self) -> None:
        """Nothing: a kept job's log lives on outside the run (``keep``), as the user chose."""


def spawn_job(
    argv: Sequence[str],
    *,
    cwd: str,
    environ: Mapping[str, str],
    mark: str,
    kill_grace: float,
    groups: set[ProcessGroup],
    marks: set[str],
) -> RunningJob:
    """Start ``argv`` as a job whose output goes to a log in this run's directory.

    Raises:
        FileError: A spawn error (``not_found``, ``permission_denied``, ``unknown``).
    """
    become_subreaper()
    reap_finished_groups()
    directory = RUN_GUARD.spill_directory()
    log_path = os.path.join(directory, f"job-{mark}.log")
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        pid, guard = spawn_guarded(argv, cwd, environ, log, log)
    except FileError:
        with contextlib.suppress(OSError):
            os.unlink(log_path)
        raise
    finally:
        os.close(log)
    group = ProcessGroup(pid)
    groups.add(group)
    marks.add(mark)
    return RunningJob(
        mark=mark,
        group=group,
        guard=guard,
        log_path=log_path,
        kill_grace=kill_grace,
        groups=groups,
        marks=marks,
    )
