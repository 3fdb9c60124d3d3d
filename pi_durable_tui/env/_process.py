"""One running command of ``LocalEnv.exec``: pipes, output routing, exit, timeout, abort (R120).

``run_command`` starts ``argv`` as the leader of a new session with stdin from
``/dev/null`` and stdout and stderr on two pipes of its own (1 MiB each where
the system allows, so a fast writer is read in large chunks). It reads both
pipes from the event loop (``add_reader``, no threads), counts newlines once
per chunk, and routes each chunk to the spill file, then to the tail window or
straight to ``on_output``. The leader's exit is watched through a pidfd.

Every command runs under an ``OrphanGuard`` (``_orphan_guard``): if this process
dies without ``cleanup()`` (SIGKILL, a closed terminal), the guard kills the
command's process group.

The command is finished when its leader has exited and both pipes are closed.
A background process that keeps a pipe open (``server &``) does not hold the
call: 100 ms after the leader exits, what is left in the pipes is read and the
pipes are closed; the process keeps running in its group, which the
environment kills on ``cleanup()``.

With ``end_background`` (what the ``bash`` tool asks for, issue 13) the call
ends nothing short of everything it started: once the leader is gone, the
processes it left (its group, and those that left the group: ``setsid``,
daemons, reparented orphans; found by ``_strays``) are ended before the call
returns, also after a timeout, an abort or a cancellation.

A background job (``_running_job``) is a ``RunningCommand`` too: from its
start (``_jobs.spawn_job``, stdout and stderr on one pipe) or from a Ctrl+B
(``exec(..., move=event)``) its output goes to the job's log writer instead of
the call (``move_output``), through this same reader; a kept job hands its
pipes over to a relay (``open_pipes``, ``drop_pipes``).

A timeout, an abort, a failing callback and the cancellation of the awaiting
coroutine all stop the command the same way: the whole process group is killed
(``ProcessGroup.kill``), the output it wrote before dying is still read and
delivered, and only then does ``run_command`` raise. A second cancellation
while the group is dying leaves the kill running to its end.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import subprocess
from collections.abc import Mapping, Sequence
from typing import Literal

from pi_durable_tui.env._errors import FileError
from pi_durable_tui.env._groups import (
    ProcessGroup,
    become_subreaper,
    live_groups,
    reap_finished_groups,
)
from pi_durable_tui.env._mark import MARK_NAME
from pi_durable_tui.env._orphan_guard import OrphanGuard
from pi_durable_tui.env._run_guard import RUN_GUARD
from pi_durable_tui.env._running_job import RunningJob
from pi_durable_tui.env._spill import SpillFile
from pi_durable_tui.env._strays import (
    children_of_this_process,
    end_processes,
    strays,
)
from pi_durable_tui.env._types import (
    ExecResult,
    OutputCallback,
    OutputStream,
    OutputWindow,
    SpillPolicy,
)
from pi_durable_tui.env._window import TailWindow

READ_SIZE = 1 << 20
"""Bytes asked for per pipe read; the pipes are sized to match."""

LINGER_SECONDS = 0.1
"""How long pipes stay open after the leader exits, for its last output."""

_F_SETPIPE_SZ = 1031
_EXIT_POLL_SECONDS = 0.02

StopReason = Literal["timeout", "aborted", "cancelled", "failed"]


def format_seconds(seconds: float) -> str:
    """``0.2`` -> ``0.2``, ``5.0`` -> ``5``: seconds as people write them."""
    return f"{seconds:.3f}".rstrip("0").rstrip(".")


def _open_pipe() -> tuple[int, int]:
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    with contextlib.suppress(OSError):  # a smaller pipe only means smaller reads
        fcntl.fcntl(write_end, _F_SETPIPE_SZ, READ_SIZE)
    os.set_blocking(read_end, False)
    return read_end, write_end


class _Pipe:
    def __init__(self, stream: OutputStream, fd: int) -> None:
        self.stream: OutputStream = stream
        self.fd: int | None = fd


class RunningCommand:
    """The state of one command between spawn and its last delivered byte."""

    def __init__(
        self,
        *,
        on_output: OutputCallback | None,
        spill: SpillPolicy | None,
        window: OutputWindow | None,
        kill_grace: float,
        secrets: Sequence[bytes] = (),
        spill_directory: str | None = None,
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self._on_output = on_output
        self._spill = None if spill is None else SpillFile(spill, spill_directory, secrets=secrets)
        deliver = on_output or (lambda data, stream, skipped: None)
        self._window = None if window is None else TailWindow(window, deliver)
        self._window_timer: asyncio.TimerHandle | None = None
        self._kill_grace = kill_grace
        self._pipes: list[_Pipe] = []
        self._group: ProcessGroup | None = None
        self._pidfd: int | None = None
        self._exit_poll: asyncio.TimerHandle | None = None
        self._linger: asyncio.TimerHandle | None = None
        self._done: asyncio.Future[None] = self._loop.create_future()
        self._guard: OrphanGuard | None = None
        self.stop_reason: StopReason | None = None
        self.error: BaseException | None = None

    @property
    def spill_path(self) -> str | None:
        """The spill file, once output crossed the thresholds."""
        return None if self._spill is None else self._spill.path

    # -- start -------------------------------------------------------------------

    def start(
        self, argv: Sequence[str], cwd: str, environ: Mapping[str, str], *, one_pipe: bool = False
    ) -> ProcessGroup:
        """Spawn the command; return its process group (to track for ``cleanup``).

        ``one_pipe`` gives stderr the stdout pipe (a job's log keeps their exact order).
        """
        become_subreaper()
        reap_finished_groups()
        out_read, out_write = _open_pipe()
        err_read, err_write = (None, out_write) if one_pipe else _open_pipe()
        try:
            pid, self._guard = spawn_guarded(argv, cwd, environ, out_write, err_write)
        except FileError:
            for fd in (out_read, err_read):
                if fd is not None:
                    os.close(fd)
            raise
        finally:
            os.close(out_write)
            if not one_pipe:
                os.close(err_write)
        self._group = ProcessGroup(pid)
        self._pipes = [_Pipe("stdout", out_read)]
        if err_read is not None:
            self._pipes.append(_Pipe("stderr", err_read))
        for pipe in self._pipes:
            assert pipe.fd is not None
            self._loop.add_reader(pipe.fd, self._on_readable, pipe)
        self._watch_exit(pid)
        return self._group

    def _watch_exit(self, pid: int) -> None:
        try:
            self._pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self._exit_poll = self._loop.call_later(_EXIT_POLL_SECONDS, self._poll_exit)
            return
        self._loop.add_reader(self._pidfd, self._check_exit)

    def _poll_exit(self) -> None:
        self._check_exit()
        if self._group is not None and self._group.exit_code is None:
            self._exit_poll = self._loop.call_later(_EXIT_POLL_SECONDS, self._poll_exit)

    def _check_exit(self) -> None:
        group = self._group
        assert group is not None
        group.reap()
        if group.exit_code is None:
            return
        if self._guard is not None:
            self._guard.release()  # the command is over: its guard leaves the group
        if self._pidfd is not None:
            self._loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        if any(pipe.fd is not None for pipe in self._pipes) and self._linger is None:
            self._linger = self._loop.call_later(LINGER_SECONDS, self._detach_pipes)
        self._maybe_done()

    # -- output ------------------------------------------------------------------

    def _on_readable(self, pipe: _Pipe) -> None:
        assert pipe.fd is not None
        try:
            data = os.read(pipe.fd, READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._close_pipe(pipe)
            self._maybe_done()
            return
        self._route(pipe.stream, data)

    def _route(self, stream: OutputStream, data: bytes) -> None:
        if self.error is not None:
            return
        spill, window = self._spill, self._window
        try:
            counting = window is not None or (spill is not None and not spill.spilling)
            newlines = data.count(b"\n") if counting else 0
            if spill is not None:
                spill.feed(data, newlines)
            if window is not None:
                if window.feed(stream, data, newlines, self._loop.time()):
                    self._schedule_window()
            elif self._on_output is not None:
                self._on_output(data, stream, None)
        except Exception as error:
            self.error = error
            self.stop("failed")

    def _schedule_window(self) -> None:
        if self._window_timer is None and self._window is not None:
            self._window_timer = self._loop.call_at(self._window.next_due, self._window_due)

    def _window_due(self) -> None:
        self._window_timer = None
        if self._window is None or self.error is not None:
            return
        try:
            self._window.deliver(self._loop.time())
        except Exception as error:
            self.error = error
            self.stop("failed")

    def _close_pipe(self, pipe: _Pipe) -> None:
        if pipe.fd is not None:
            self._loop.remove_reader(pipe.fd)
            os.close(pipe.fd)
            pipe.fd = None

    def _detach_pipes(self) -> None:
        """Read what is left in the pipes without waiting, then close them."""
        for pipe in self._pipes:
            for _ in range(2 * READ_SIZE // 65536):  # bounded: a writer may never stop
                if pipe.fd is None:
                    break
                try:
                    data = os.read(pipe.fd, READ_SIZE)
                except OSError:
                    break
                if not data:
                    break
                self._route(pipe.stream, data)
            self._close_pipe(pipe)
        self._maybe_done()

    # -- moving to the background (issue 13) --------------------------------------

    def move_output(self, write: OutputCallback) -> None:
        """From now on, send the output to ``write`` (a job's log) instead of the call.

        What the window still holds goes to the callback first (the call's result
        shows the output up to the move).
        """
        if self._window_timer is not None:
            self._window_timer.cancel()
            self._window_timer = None
        if self._window is not None and self.error is None:
            self._window.deliver(self._loop.time())
        self._window = None
        if self._spill is not None:
            self._spill.close()  # its file holds the output up to the move; the log, the rest
        self._spill = None
        self._on_output = write

    def open_pipes(self) -> list[tuple[OutputStream, int]]:
        """The read ends still open, by stream (a kept job hands them to its relay)."""
        return [(pipe.stream, pipe.fd) for pipe in self._pipes if pipe.fd is not None]

    def drop_pipes(self) -> None:
        """Stop reading the pipes and close this process's read ends."""
        for pipe in self._pipes:
            self._close_pipe(pipe)

    @property
    def group(self) -> ProcessGroup | None:
        """The command's process group, once started."""
        return self._group

    @property
    def guard(self) -> OrphanGuard | None:
        """The command's orphan guard, once started."""
        return self._guard

    # -- ending ------------------------------------------------------------------

    def stop(self, reason: StopReason) -> None:
        """Kill the process group for ``reason`` (the first reason wins)."""
        if self.stop_reason is not None or self._group is None:
            return
        self.stop_reason = reason
        killing = self._group.kill(self._kill_grace)
        killing.add_done_callback(lambda _: self._check_exit())

    @property
    def finished(self) -> bool:
        """Whether the leader exited and both pipes are closed."""
        return self._done.done()

    def _maybe_done(self) -> None:
        group = self._group
        if self._done.done() or group is None or group.exit_code is None:
            return
        if any(pipe.fd is not None for pipe in self._pipes):
            return
        self._done.set_result(None)

    async def wait(self) -> None:
        """Wait until the command finished (or was stopped and its group is gone)."""
        await asyncio.shield(self._done)
        if self.stop_reason is not None and self._group is not None:
            await asyncio.shield(self._group.kill(self._kill_grace))

    def finish(self) -> None:
        """Deliver what the window holds, close the spill file, drop every handle."""
        if self._guard is not None:
            self._guard.release()
        for handle in (self._window_timer, self._exit_poll, self._linger):
            if handle is not None:
                handle.cancel()
        for pipe in self._pipes:
            self._close_pipe(pipe)
        if self._pidfd is not None:
            self._loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        try:
            if self._window is not None and self.error is None:
                self._window.deliver(self._loop.time())
        finally:
            if self._spill is not None:
                self._spill.close()


async def _moved_first(command: RunningCommand, move: asyncio.Event) -> bool:
    """Wait until the command ends or ``move`` is set; whether it is to move."""
    if move.is_set():
        return not command.finished
    waiting = asyncio.ensure_future(command.wait())
    moving = asyncio.ensure_future(move.wait())
    try:
        await asyncio.wait({waiting, moving}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        moving.cancel()
        if not waiting.done():
            waiting.cancel()
    return not command.finished and move.is_set()


def spawn_guarded(
    argv: Sequence[str], cwd: str, environ: Mapping[str, str], stdout: int, stderr: int
) -> tuple[int, OrphanGuard]:
    """Start ``argv`` in a session of its own under its ``OrphanGuard``; return its PID.

    Raises:
        FileError: The spawn error (``not_found``, ``permission_denied``, ``unknown``).
    """
    guard = OrphanGuard()
    command, stdin = guard.wrap(argv, environ, cwd)
    try:
        process = subprocess.Popen(
            command,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            cwd=cwd,
            env=dict(environ),
            start_new_session=True,
            close_fds=True,
        )
    except OSError as error:
        guard.release()
        raise _spawn_error(error, argv[0]) from None
    finally:
        guard.spawned()
    # REMINDER: this module reaps the child itself (ProcessGroup.reap); marking the Popen
    # finished keeps its __del__ from warning and from waiting on the pid later.
    process.returncode = 0
    return process.pid, guard


def _spawn_error(error: OSError, program: str) -> FileError:
    if isinstance(error, FileNotFoundError):
        return FileError("not_found", f"Command not found: {program}", program)
    if isinstance(error, PermissionError):
        return FileError("permission_denied", f"Command is not executable: {program}", program)
    return FileError("unknown", f"Could not run {program}: {error.strerror or error}", program)


async def end_strays(
    mark: str,
    group: ProcessGroup,
    children_before: set[int] | None,
    grace: float,
) -> None:
    """End what a finished command left running (its group and its strays), and reap them.

    ``children_before``: this process's children when the command started; ``None``
    when they were not taken, and then no child of ours counts as the command's
    orphan (an empty set would make every one of them one).
    """
    spared = {known.leader for known in live_groups() if known is not group}
    if RUN_GUARD.pid is not None:
        spared.add(RUN_GUARD.pid)
    left = strays(
        mark,
        group.leader,
        children_before=children_before,
        spared=spared,
        subreaper=become_subreaper(),
    )
    await end_processes(left, grace)
    group.alive()  # reaps the group's members, forgets an empty group


async def run_command(
    argv: Sequence[str],
    *,
    cwd: str,
    environ: Mapping[str, str],
    timeout: float | None,
    on_output: OutputCallback | None,
    spill: SpillPolicy | None,
    window: OutputWindow | None,
    abort: asyncio.Event | None,
    kill_grace: float,
    groups: set[ProcessGroup],
    secrets: Sequence[bytes] = (),
    end_background: bool = False,
    move: asyncio.Event | None = None,
    marks: set[str] | None = None,
) -> ExecResult:
    """Run ``argv`` to its end, or kill its group on timeout, abort or cancellation.

    Args:
        argv: Program and arguments.
        cwd: Absolute working directory (checked by the caller).
        environ: The complete environment of the child.
        timeout: Seconds before the command is killed (already validated), or None.
        on_output: Receives output chunks (see ``OutputCallback``).
        spill: When to also write the complete output to a file.
        window: The kept tail, letting output be skipped (R105).
        abort: Kills the command when set.
        kill_grace: Seconds between ``SIGTERM`` and ``SIGKILL``.
        groups: The environment's live process groups; this one is added while alive.
        secrets: Values a spill file must never hold (written ``[redacted]``).
        end_background: End every process the command left once its leader is gone.
        move: When set while the command runs, the call returns at once with the
            command as a background job (``ExecResult.moved``, issue 13).
        marks: The environment's marks (a moved job's is forgotten when it is kept).

    Returns:
        The exit code and the spill file, if any; or the moved job.

    Raises:
        FileError: ``timeout`` or ``aborted`` (with ``spill_path``), or a spawn error.
        asyncio.CancelledError: After the group was killed, when the caller was cancelled.
    """
    RUN_GUARD.start()
    command = RunningCommand(
        on_output=on_output,
        spill=spill,
        window=window,
        kill_grace=kill_grace,
        secrets=secrets,
        spill_directory=RUN_GUARD.spill_directory(),
    )
    mark = environ.get(MARK_NAME)
    # REMINDER: without this baseline the orphan rule must not run: every child of
    # ours (an MCP server, a test's server) would count as the command's orphan.
    children_before = children_of_this_process() if end_background else None
    group = command.start(argv, cwd, environ)
    for finished in [known for known in groups if not known.alive()]:
        groups.discard(finished)
    groups.add(group)
    loop = asyncio.get_running_loop()
    timer = None if timeout is None else loop.call_later(timeout, command.stop, "timeout")
    watcher = None
    if abort is not None:
        watcher = loop.create_task(abort.wait())
        watcher.add_done_callback(
            lambda waited: None if waited.cancelled() else command.stop("aborted")
        )
    moved: RunningJob | None = None
    try:
        try:
            if move is not None and await _moved_first(command, move):
                moved = RunningJob(
                    command,
                    mark or "",
                    kill_grace,
                    groups,
                    marks if marks is not None else set(),
                    lambda: end_strays(mark or "", group, children_before, kill_grace),
                    secrets,
                )
                return ExecResult(-1, command.spill_path, moved=moved)
            await command.wait()
        except asyncio.CancelledError:
            command.stop("cancelled")
            await command.wait()
            raise
        finally:
            if end_background and mark is not None and moved is None:
                await asyncio.shield(end_strays(mark, group, children_before, kill_grace))
    finally:
        if timer is not None:
            timer.cancel()
        if watcher is not None:
            watcher.cancel()
        if moved is None:
            if not group.alive():
                groups.discard(group)
            command.finish()
    if command.error is not None:
        raise command.error
    if command.stop_reason == "timeout":
        assert timeout is not None
        message = f"Command timed out after {format_seconds(timeout)} seconds"
        raise FileError("timeout", message, spill_path=command.spill_path)
    if command.stop_reason == "aborted":
        raise FileError("aborted", "Command aborted", spill_path=command.spill_path)
    assert group.exit_code is not None
    return ExecResult(group.exit_code, command.spill_path)
