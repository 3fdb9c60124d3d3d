"""Start a command in a real pseudo-terminal and time it until the screen shows a marker.

``launch_until(command, marker, cwd=..., env=...)`` opens a pseudo-terminal of
120x40 (``TIOCSWINSZ``, ``TERM=xterm-256color``), starts ``command`` on it, reads
what the command writes to the terminal until ``marker`` appears, and returns a
``Launch``: the seconds from just before the spawn to the read that completed the
marker, and the child's peak RSS at that moment (``VmHWM`` of
``/proc/<pid>/status``). Then it ends the child: SIGTERM, the terminal drained
meanwhile (a child blocked on a full terminal would never exit), ``waitpid`` with
a deadline, SIGKILL as the last resort, and the terminal closed.

The marker is searched in the output with its escape sequences removed, since a
screen may place a colour or cursor change between any two characters of a line.
A marker without spaces is the safe choice: terminal programs may paint a run of
blanks with a cursor move instead of spaces.

It never hangs: when the marker has not appeared after ``deadline_s`` seconds (60
by default), or the child ends without painting it, ``MarkerNotSeen`` is raised,
naming the marker and showing the last 2,000 characters of the output.

The child gets a new session with the terminal as its standard streams but not as
its controlling terminal: ``subprocess`` starts it without a fork of this
(possibly threaded) process running Python code, and the window size is set
before the spawn, so the first frame already has its final size. Stop signals
are sent to the child by its pid, so no controlling terminal is needed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

COLUMNS, ROWS = 120, 40
TAIL_CHARS = 2_000
_ESCAPES = re.compile(
    rb"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, modes
    rb"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: titles, colour queries
    rb"|\x1b[P_^X][^\x1b]*\x1b\\"  # DCS, APC, PM, SOS strings
    rb"|\x1b[ -/]*[0-~]"  # the other escapes: charsets, keypad modes, save/restore
)
_OVERLAP = 4_096
"""Raw bytes before a new chunk searched again with it: a marker may straddle reads."""


class MarkerNotSeen(RuntimeError):
    """The command did not paint the marker in time, or ended without painting it."""


@dataclass(frozen=True, slots=True)
class Launch:
    """One command timed from its spawn to the marker on its terminal."""

    paint_s: float
    """Seconds from just before the spawn to the read that completed the marker."""
    rss_mib: float
    """The child's peak RSS (``VmHWM``) when the marker was seen, in MiB."""
    pid: int
    """The child's process id (reaped when ``launch_until`` returns)."""
    returncode: int
    """The child's exit status (negative: the signal that ended it)."""
    killed: bool
    """Whether the child outlived SIGTERM and its grace period and was killed."""


def strip_escapes(output: bytes) -> str:
    """The text of terminal output, its escape sequences removed."""
    return _ESCAPES.sub(b"", output).decode("utf-8", "replace")


def launch_until(
    command: Sequence[str],
    marker: str,
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str],
    deadline_s: float = 60.0,
    stop_grace_s: float = 5.0,
) -> Launch:
    """Run ``command`` in a 120x40 pseudo-terminal until ``marker`` is painted, then end it.

    Args:
        command: The program and its arguments.
        marker: Text the command's screen shows; searched with escapes removed.
        cwd: The child's working directory.
        env: The child's environment; ``TERM`` is set to ``xterm-256color`` and
            ``COLUMNS``/``LINES`` are dropped (they would override the window size).
        deadline_s: How long to wait for the marker.
        stop_grace_s: How long the child may take to exit after SIGTERM.

    Returns:
        The timing and peak RSS at the marker, and how the child ended.

    Raises:
        MarkerNotSeen: The marker did not appear within ``deadline_s``, or the
            child ended first.
    """
    needle = marker.encode("utf-8")
    child_env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}
    child_env["TERM"] = "xterm-256color"
    master, slave = os.openpty()
    try:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        started = time.perf_counter()
        process = subprocess.Popen(
            list(command),
            cwd=cwd,
            env=child_env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            close_fds=True,
        )
    except BaseException:
        os.close(master)
        os.close(slave)
        raise
    # Only the child holds the terminal's other end now, so its exit shows as EIO here.
    os.close(slave)
    output = bytearray()
    try:
        paint_s = _read_until(master, process, output, needle, started, started + deadline_s)
        if paint_s is None:
            raise MarkerNotSeen(_not_seen(command, marker, deadline_s, process, output))
        rss_mib = _peak_rss_mib(process.pid)
    finally:
        killed = _end(master, process, stop_grace_s)
    return Launch(paint_s, rss_mib, process.pid, process.returncode, killed)


def _read_until(
    master: int,
    process: subprocess.Popen[bytes],
    output: bytearray,
    needle: bytes,
    started: float,
    deadline: float,
) -> float | None:
    """Read into ``output`` until ``needle`` shows; its time after ``started``, or None."""
    while True:
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            return None
        ready, _, _ = select.select([master], [], [], min(remaining, 0.5))
        if not ready:
            if process.poll() is not None:
                return None  # ended without painting the marker (and without a final EIO)
            continue
        try:
            chunk = os.read(master, 65_536)
        except OSError:  # EIO: the child closed the terminal
            chunk = b""
        if not chunk:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(0.5)  # it is exiting: its status tells why there was no marker
            return None
        at = time.perf_counter()
        window_start = max(0, len(output) - _OVERLAP)
        output += chunk
        if needle in _ESCAPES.sub(b"", bytes(output[window_start:])):
            return at - started


def _peak_rss_mib(pid: int) -> float:
    """``VmHWM`` of ``pid`` in MiB (0 when the process already ended)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _end(master: int, process: subprocess.Popen[bytes], grace_s: float) -> bool:
    """SIGTERM the child, drain its terminal until it exits (SIGKILL after ``grace_s``).

    Returns:
        Whether SIGKILL was needed.
    """
    killed = False
    try:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        deadline = time.perf_counter() + grace_s
        while process.poll() is None:
            if time.perf_counter() >= deadline:
                process.kill()
                killed = True
                break
            _drain(master, 0.05)
        # After SIGKILL the exit is immediate; the wait reaps it (no zombie).
        process.wait()
    finally:
        os.close(master)
    return killed


def _drain(master: int, timeout_s: float) -> None:
    """Read and drop what the child wrote, so it never blocks on a full terminal."""
    ready, _, _ = select.select([master], [], [], timeout_s)
    if ready:
        try:
            os.read(master, 65_536)
        except OSError:
            time.sleep(timeout_s)  # the terminal's other end is closed: just wait


def _not_seen(
    command: Sequence[str],
    marker: str,
    deadline_s: float,
    process: subprocess.Popen[bytes],
    output: bytearray,
) -> str:
    status = process.poll()
    how = (
        f"the command ended with status {status}"
        if status is not None
        else f"not within {deadline_s:g} s"
    )
    tail = strip_escapes(bytes(output[-8 * TAIL_CHARS :]))[-TAIL_CHARS:]
    return f"marker {marker!r} not seen ({how}) from {' '.join(command)}; last output:\n{tail}"
