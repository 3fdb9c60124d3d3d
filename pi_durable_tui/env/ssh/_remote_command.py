"""One running command of ``SshEnv.exec``: a session channel, its output, its end (R120).

``run_remote`` opens a session channel running the wrapper of
``_remote_shell``, writes the header, and routes what arrives the way
``_process`` routes pipe output: stdout (after the ready line) and stderr go to
the spill file (``RemoteSpill``), then to the tail window or ``on_output``.

The command is finished when its exit status (or signal, as ``128 + n``) has
arrived and the channel is closed. As locally, a background process that keeps
the output open does not hold the call: 100 ms after the exit status the
client closes the channel (the background process keeps running in its group,
which ``cleanup()`` kills).

A timeout, an abort, a failing callback and the cancellation of the caller
all stop the command the same way: ``stop`` goes to the guard, which kills the
whole process group; the output written before it died is still delivered, and
only then does ``run_remote`` raise. Should the guard not answer (a command
that killed it), the group is killed by number over a new channel and the
channel is closed, which ends the guard's wait too.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal, TypeVar

import asyncssh

from pi_durable_tui.env._errors import FileError
from pi_durable_tui.env._process import LINGER_SECONDS, format_seconds
from pi_durable_tui.env._types import (
    ExecResult,
    OutputCallback,
    OutputStream,
    OutputWindow,
    SpillPolicy,
)
from pi_durable_tui.env._window import TailWindow
from pi_durable_tui.env.ssh._remote_shell import COMMAND_LINE, READY_MARK, READY_STATES
from pi_durable_tui.env.ssh._remote_spill import RemoteSpill, SpillOpener

StopReason = Literal["timeout", "aborted", "cancelled", "failed"]
GroupKiller = Callable[[int], Awaitable[None]]

START_SECONDS = 30.0
"""How long a command with a timeout may take to start (login shell, wrapper) on top."""

GUARD_ANSWER_SECONDS = 3.0
"""How long past the grace the guard may take to end a stopped command's channel."""

LOST_EXIT_CODE = 255
"""The exit code of a command whose channel closed without a status (as ``ssh`` reports)."""

SESSION_WAIT_SECONDS = 30.0
"""How long a channel open refused by the server's session limit is retried."""

_T = TypeVar("_T")
_MAX_READY_PREFIX = 1 << 20
BATCH_BYTES = 1 << 20
"""Most bytes of packets joined before they are routed."""


def exit_code_of_signal(name: str) -> int:
    """``128 + n`` for a signal named like ``KILL`` (``ssh`` names signals without SIG)."""
    try:
        return 128 + int(signal.Signals[f"SIG{name}"])
    except KeyError:
        return LOST_EXIT_CODE


class _Session(asyncssh.SSHClientSession[bytes]):
    """asyncssh's callbacks, forwarded to the command."""

    def __init__(self, command: RemoteCommand) -> None:
        self._command = command

    def data_received(self, data: bytes, datatype: asyncssh.DataType) -> None:
        stream: OutputStream = "stderr" if datatype == asyncssh.EXTENDED_DATA_STDERR else "stdout"
        self._command.received(data, stream)

    def exit_status_received(self, status: int) -> None:
        self._command.exited(status)

    def exit_signal_received(self, signal: str, core_dumped: bool, msg: str, lang: str) -> None:
        self._command.exited(exit_code_of_signal(signal))

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._command.closed(exc)


class RemoteCommand:
    """The state of one remote command between its channel's opening and its last byte."""

    def __init__(
        self,
        *,
        on_output: OutputCallback | None,
        spill: SpillPolicy | None,
        open_spill: SpillOpener,
        secrets: Sequence[bytes],
        window: OutputWindow | None,
        kill_grace: float,
        kill_group: GroupKiller,
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self._on_output = on_output
        self._spill = None
        if spill is not None:
            self._spill = RemoteSpill(
                spill, open_spill, secrets=secrets, pause=self.pause, resume=self.resume
            )
        deliver = on_output or (lambda data, stream, skipped: None)
        self._window = None if window is None else TailWindow(window, deliver)
        self._window_timer: asyncio.TimerHandle | None = None
        self._kill_grace = kill_grace
        self._kill_group = kill_group
        self._channel: asyncssh.SSHClientChannel[bytes] | None = None
        self._prefix = b""
        self._pending: list[tuple[OutputStream, bytearray]] = []
        self._pending_bytes = 0
        self._flush_handle: asyncio.Handle | None = None
        self._ready: asyncio.Future[str] = self._loop.create_future()
        self._done: asyncio.Future[None] = self._loop.create_future()
        self._linger: asyncio.TimerHandle | None = None
        self._fallback: asyncio.Task[None] | None = None
        self.pid: int | None = None
        self.exit_code: int | None = None
        self.stop_reason: StopReason | None = None
        self.error: BaseException | None = None
        self.lost: Exception | None = None

    # -- start -------------------------------------------------------------------

    async def start(self, connection: asyncssh.SSHClientConnection, header: bytes) -> None:
        """Open the channel and send the header (the command starts on the remote)."""
        channel, _ = await when_a_session_is_free(
            lambda: connection.create_session(lambda: _Session(self), COMMAND_LINE, encoding=None)
        )
        self._channel = channel
        channel.write(header)

    @property
    def ready(self) -> asyncio.Future[str]:
        """Resolved with the wrapper's status line (or ``lost``)."""
        return self._ready

    @property
    def done(self) -> asyncio.Future[None]:
        """Resolved once the channel is closed."""
        return self._done

    @property
    def state(self) -> str:
        """The wrapper's status: ``ok``, why nothing ran (``no-dir``...), or ``lost``."""
        return self._ready.result() if self._ready.done() else "lost"

    # -- output ------------------------------------------------------------------

    def received(self, data: bytes, stream: OutputStream) -> None:
        """Take a packet; stdout waits for the ready line, dropping what came before it.

        Packets (32 KiB at most) are joined per stream until the event loop's next
        turn, so the window and the spill file see large chunks, as from a pipe.
        """
        if stream == "stdout" and not self._ready.done():
            data = self._take_ready(data)
            if not data:
                return
        pending = self._pending
        if pending and pending[-1][0] == stream:
            pending[-1][1].extend(data)
        else:
            pending.append((stream, bytearray(data)))
        self._pending_bytes += len(data)
        if self._pending_bytes >= BATCH_BYTES:
            self.flush()
        elif self._flush_handle is None:
            self._flush_handle = self._loop.call_soon(self.flush)

    def flush(self) -> None:
        """Route the joined packets received so far, in the order they came."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        pending, self._pending, self._pending_bytes = self._pending, [], 0
        for stream, data in pending:
            self._route(stream, bytes(data))

    def _take_ready(self, data: bytes) -> bytes:
        buffered = self._prefix + data
        start = buffered.find(READY_MARK)
        end = buffered.find(b"\n", start) if start >= 0 else -1
        if end < 0:
            # Keep only what may still be the start of the mark (a login script's noise goes).
            self._prefix = buffered[-_MAX_READY_PREFIX:]
            return b""
        self._prefix = b""
        words = buffered[start + len(READY_MARK) : end].decode("ascii", "replace").split()
        state = words[0] if words and words[0] in READY_STATES else "no-shell"
        if state == "ok" and len(words) > 1 and words[1].isdigit():
            self.pid = int(words[1])
        self._ready.set_result(state)
        return buffered[end + 1 :]

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

    def pause(self) -> None:
        """Stop reading the channel (the spill file is behind); SSH flow control holds."""
        if self._channel is not None:
            self._channel.pause_reading()

    def resume(self) -> None:
        """Read the channel again."""
        if self._channel is not None:
            self._channel.resume_reading()

    # -- ending ------------------------------------------------------------------

    def exited(self, code: int) -> None:
        """The leader ended: release its guard and give late output a moment."""
        if self.exit_code is None:
            self.exit_code = code
        self._send(b"release\n")
        if self._linger is None and not self._done.done():
            self._linger = self._loop.call_later(LINGER_SECONDS, self._close_channel)

    def closed(self, error: Exception | None) -> None:
        """The channel is closed: the command is over (a status may never have come)."""
        self.flush()
        if not self._ready.done():
            self._ready.set_result("lost")
        if self.exit_code is None:
            self.lost = error or ConnectionError("the channel closed without an exit status")
            self.exit_code = LOST_EXIT_CODE
        if not self._done.done():
            self._done.set_result(None)

    def _send(self, data: bytes) -> None:
        channel = self._channel
        if channel is not None and not self._done.done():
            with contextlib.suppress(*_CHANNEL_GONE):
                channel.write(data)

    def _close_channel(self) -> None:
        if self._channel is not None:
            self._channel.close()

    def stop(self, reason: StopReason) -> None:
        """Kill the process group for ``reason`` (the first reason wins)."""
        if self.stop_reason is not None:
            return
        self.stop_reason = reason
        self.kill()

    def kill(self) -> None:
        """Have the guard kill the whole group; fall back to killing it by number."""
        if self._done.done() or self._fallback is not None:
            return
        self._send(b"stop\n")
        self._fallback = self._loop.create_task(self._unanswered())

    async def _unanswered(self) -> None:
        try:
            await asyncio.wait_for(
                asyncio.shield(self._done), self._kill_grace + GUARD_ANSWER_SECONDS
            )
            return
        except TimeoutError:
            pass
        if self.pid is not None:
            with contextlib.suppress(FileError, *_CHANNEL_GONE):
                await self._kill_group(self.pid)
        self._close_channel()

    async def wait(self) -> None:
        """Wait until the command is over (its channel closed)."""
        await asyncio.shield(self._done)

    async def finish(self) -> str | None:
        """Deliver what the window holds, complete the spill file; return its path."""
        self.flush()
        for handle in (self._window_timer, self._linger):
            if handle is not None:
                handle.cancel()
        if self._fallback is not None and not self._fallback.done():
            self._fallback.cancel()
        self._close_channel()
        try:
            if self._window is not None and self.error is None:
                self._window.deliver(self._loop.time())
        finally:
            spill_path = None if self._spill is None else await self._spill.finish()
        return spill_path


_CHANNEL_GONE = (asyncssh.Error, OSError, BrokenPipeError)


async def run_remote(
    connection: asyncssh.SSHClientConnection,
    header: bytes,
    *,
    cwd: str,
    program: str,
    timeout: float | None,
    on_output: OutputCallback | None,
    spill: SpillPolicy | None,
    open_spill: SpillOpener,
    window: OutputWindow | None,
    abort: asyncio.Event | None,
    kill_grace: float,
    kill_group: GroupKiller,
    started: Callable[[RemoteCommand], None],
    secrets: Sequence[bytes] = (),
) -> ExecResult:
    """Run one command to its end, or kill its group on timeout, abort or cancellation.

    Args:
        connection: The SSH connection.
        header: The wrapper's header (``encode_header``).
        cwd: The working directory (named when it is missing).
        program: The program (named when it is missing).
        timeout: Seconds before the command is killed (validated), or None.
        on_output: Receives output chunks.
        spill: When to also write the complete output to a remote file.
        open_spill: Creates the remote spill file.
        window: The kept tail (R105).
        abort: Kills the command when set.
        kill_grace: Seconds between ``SIGTERM`` and ``SIGKILL``.
        kill_group: Kills a process group by number over a new channel.
        started: Called with the command once its channel is open (for ``cleanup``).
        secrets: Values the spill file must never hold.

    Raises:
        FileError: ``timeout``/``aborted`` (with ``spill_path``), a start failure,
            or ``unknown`` when the connection was lost.
        asyncio.CancelledError: After the group was killed, when the caller was cancelled.
    """
    command = RemoteCommand(
        on_output=on_output,
        spill=spill,
        open_spill=open_spill,
        secrets=secrets,
        window=window,
        kill_grace=kill_grace,
        kill_group=kill_group,
    )
    await command.start(connection, header)
    started(command)
    loop = asyncio.get_running_loop()
    timer = None
    if timeout is not None:
        # The clock starts when the command does (the ready line), not when the login shell
        # does; a remote that never gets there is stopped START_SECONDS later.
        timer = loop.call_later(timeout + START_SECONDS, command.stop, "timeout")

        def restart(_: object) -> None:
            nonlocal timer
            if timer is not None:
                timer.cancel()
            timer = loop.call_later(timeout, command.stop, "timeout")

        command.ready.add_done_callback(restart)
    watcher = None
    if abort is not None:
        watcher = loop.create_task(abort.wait())
        watcher.add_done_callback(
            lambda waited: None if waited.cancelled() else command.stop("aborted")
        )
    try:
        try:
            await command.wait()
        except asyncio.CancelledError:
            command.stop("cancelled")
            await command.wait()
            raise
    finally:
        if timer is not None:
            timer.cancel()
        if watcher is not None:
            watcher.cancel()
        spill_path = await command.finish()
    state = command.state
    start_error = _start_error(state, cwd, program)
    if start_error is not None:
        raise start_error
    if command.error is not None:
        raise command.error
    if command.stop_reason == "timeout":
        assert timeout is not None
        message = f"Command timed out after {format_seconds(timeout)} seconds"
        raise FileError("timeout", message, spill_path=spill_path)
    if command.stop_reason == "aborted":
        raise FileError("aborted", "Command aborted", spill_path=spill_path)
    if command.lost is not None and state == "lost":
        raise FileError("unknown", f"The SSH connection failed before {program} started")
    assert command.exit_code is not None
    return ExecResult(command.exit_code, spill_path)


def _start_error(state: str, cwd: str, program: str) -> FileError | None:
    if state == "no-dir":
        return FileError("not_found", f"Working directory does not exist: {cwd}", cwd)
    if state == "no-program":
        return FileError("not_found", f"Command not found: {program}", program)
    if state == "not-exec":
        return FileError("permission_denied", f"Command is not executable: {program}", program)
    if state == "no-shell":
        return FileError(
            "shell_unavailable", "No shell found: install bash or sh, or put one on PATH"
        )
    return None


async def when_a_session_is_free(open_channel: Callable[[], Awaitable[_T]]) -> _T:
    """Open a channel, waiting while the server's session limit refuses it.

    ``SharedLink.channels`` keeps the commands under OpenSSH's ``MaxSessions``,
    but a session the client has closed still counts on the server until the
    server's side of the close arrives, and a kill of a group opens one more: on
    a loaded machine an open can meet a full server for a moment. That refusal
    (``ChannelOpenError``) is transient, so the open is tried again, backing off,
    for ``SESSION_WAIT_SECONDS``; then the error stands.

    Args:
        open_channel: Opens the channel (called once per try).

    Returns:
        What ``open_channel`` returned.

    Raises:
        asyncssh.ChannelOpenError: The server still refused after the wait.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SESSION_WAIT_SECONDS
    pause = 0.02
    while True:
        try:
            return await open_channel()
        except asyncssh.ChannelOpenError:
            if loop.time() + pause > deadline:
                raise
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.5)
