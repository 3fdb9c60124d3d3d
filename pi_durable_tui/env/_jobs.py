"""Background jobs: commands that run on after the call that started them (issue 13).

A foreground command (``exec``) is ended when its call ends. A job is a
command the user wants to keep running for a while (a dev server, a watcher):
``LocalEnv.start_job`` spawns it as ``exec`` does (``_process.RunningCommand``:
a session and process group of its own, the call's mark, stdin from
``/dev/null``, the command's ``OrphanGuard``, its output read from a pipe on
the event loop; stdout and stderr share the pipe, so the log keeps their
order) and hands it over at once to a ``RunningJob`` (``_running_job``), as
Ctrl+B hands over a foreground command: its output goes, redacted as it is
written (``_job_log``), to a log in this run's directory (``_run_guard``, mode
0700), so a run killed with ``SIGKILL`` leaves none behind; the guards end the
job too. ``keep()`` leaves it running past this process (its log written on by
a relay process, ``_log_relay``).

``KeptJob`` is the handle of a job an earlier run kept: only its mark, leader
PID and log are known; it is running while a process carries its mark (its
relay included), and ``stop()`` ends those.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Protocol

from pi_durable_tui.env._groups import ProcessGroup
from pi_durable_tui.env._process import RunningCommand, end_strays
from pi_durable_tui.env._run_guard import RUN_GUARD
from pi_durable_tui.env._running_job import RunningJob
from pi_durable_tui.env._strays import (
    carrying,
    end_processes,
)

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
        """The file its output goes to (redacted as it is written)."""
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


def spawn_job(
    argv: Sequence[str],
    *,
    cwd: str,
    environ: Mapping[str, str],
    mark: str,
    kill_grace: float,
    groups: set[ProcessGroup],
    marks: set[str],
    secrets: Sequence[bytes] = (),
) -> RunningJob:
    """Start ``argv`` as a job whose output goes, redacted, to a log in this run's directory.

    Raises:
        FileError: A spawn error (``not_found``, ``permission_denied``, ``unknown``).
        OSError: The log cannot be created (the command is ended).
    """
    RUN_GUARD.start()
    command = RunningCommand(on_output=None, spill=None, window=None, kill_grace=kill_grace)
    group = command.start(argv, cwd, environ, one_pipe=True)
    groups.add(group)
    marks.add(mark)

    async def end_leftovers() -> None:
        # What the job left once its leader is gone: its group, its marked processes
        # and their descendants; no orphan rule (``None``): a job runs for hours, and
        # the children this process started meanwhile are not the job's.
        await end_strays(mark, group, None, kill_grace)

    # REMINDER: no await between start and the job: its first output must reach the log.
    try:
        return RunningJob(command, mark, kill_grace, groups, marks, end_leftovers, secrets)
    except OSError:
        command.stop("aborted")
        command.finish()
        raise
