"""Processes a command left outside its process group, and how they are ended (issue 13).

A command's process group holds what it starts, until something leaves it:
``setsid cmd &`` (a new session), a daemon's double fork, ``nohup``'s children
after the shell is gone. Three things find them all the same:

- the **mark**: every command gets ``PIDURABLE_RUN=<run>.<call>`` in its
  environment (``call_mark``), which every descendant inherits and keeps in
  ``/proc/PID/environ`` whatever process group or session it moves to; ``<run>``
  names this process's run (``run_token``), ``<call>`` the command;
- **descendants**: children of a marked or grouped process (found by walking
  the parent links of ``/proc``);
- **reparenting**: this process is the child subreaper (``_groups``), so an
  orphan that also cleared its environment (``env -i setsid cmd &``) becomes our
  child; a child of ours that is not a command's leader and was not our child
  when the command started came from a command.

``end_processes`` sends ``SIGTERM``, waits up to a grace, sends ``SIGKILL``, and
reaps those that are our children, so nothing is left as a zombie either.

Where ``/proc`` is missing (not Linux), only the process group is ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pi_durable_tui.env._mark import MARK_NAME

_PROC = Path("/proc")
_POLL_SECONDS = 0.005
_FIRST_POLL_SECONDS = 0.0005
_KILL_WAIT_SECONDS = 5.0
_token: str | None = None
_calls = 0


def run_token() -> str:
    """This process's run: its PID and a random part (stable for the process's life)."""
    global _token
    if _token is None or not _token.startswith(f"{os.getpid()}-"):
        _token = f"{os.getpid()}-{secrets.token_hex(6)}"  # a fork gets a run of its own
    return _token


def call_mark() -> str:
    """A new mark for one command: ``<run>.<n>``."""
    global _calls
    _calls += 1
    return f"{run_token()}.{_calls}"


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    """One process as ``/proc`` shows it."""

    pid: int
    ppid: int
    pgid: int
    state: str
    command: str
    """The command line, arguments joined by spaces (the name in brackets when empty)."""


def _read(pid: int, name: str) -> bytes | None:
    # REMINDER: raw os.open/os.read: pathlib costs four times as much, and a search
    # reads every process's stat.
    try:
        fd = os.open(f"/proc/{pid}/{name}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _stat(pid: int) -> tuple[str, str, int, int] | None:
    raw = _read(pid, "stat")
    if raw is None:
        return None
    text = raw.decode("utf-8", "replace")
    name, _, rest = text.partition(" (")[2].rpartition(")")
    fields = rest.split()
    if len(fields) < 3:
        return None
    return name, fields[0], int(fields[1]), int(fields[2])


def describe(pid: int) -> ProcessInfo | None:
    """The process ``pid``, or None when it is gone."""
    found = _stat(pid)
    if found is None:
        return None
    name, state, ppid, pgid = found
    raw = _read(pid, "cmdline") or b""
    command = raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace") or f"[{name}]"
    return ProcessInfo(pid, ppid, pgid, state, command)


def mark_of(pid: int) -> str | None:
    """The mark in a process's environment (None: no mark, or not readable)."""
    environ = _read(pid, "environ")
    if environ is None:
        return None
    key = MARK_NAME.encode() + b"="
    for item in environ.split(b"\0"):
        if item.startswith(key):
            return item[len(key) :].decode("ascii", "replace")
    return None


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir(_PROC) if name.isdigit()]
    except OSError:
        return []


def children_of_this_process() -> set[int]:
    """The PIDs whose parent is this process (what reparenting is compared with)."""
    me = os.getpid()
    found: set[int] = set()
    for pid in _pids():
        stat = _stat(pid)
        if stat is not None and stat[2] == me:
            found.add(pid)
    return found


def processes_of_run(token: str) -> list[ProcessInfo]:
    """Every live process carrying a mark of the run ``token`` (or the exact mark ``token``).

    Args:
        token: A run token (``run_token()`` of some process), or one command's mark.
    """
    prefix = token
    found = []
    for pid in _pids():
        mark = mark_of(pid)
        if mark is None or not (mark == prefix or mark.startswith(prefix + ".")):
            continue
        info = describe(pid)
        if info is not None and info.state not in ("Z", "X"):
            found.append(info)
    return found


def started_by_a_command(pid: int) -> bool:
    """Whether process ``pid`` comes from a command an agent ran (the socket's gate, issue 15).

    True when it or an ancestor carries a mark, or when it descends from this
    process through a child outside this process's group: commands run in groups
    of their own, and an orphan that cleared its mark is reparented to us (the
    subreaper) in the group it had. This process itself, and children it started
    in its own group, are not commands.

    REMINDER: a command that clears its mark, moves into this process's group
    (``setpgid``, same session) and orphans itself passes; the socket's other
    layers (mode 0600, one uid) still hold. Not Linux: always False.

    Args:
        pid: The process to judge, usually a socket peer's (``SO_PEERCRED``).
    """
    me, group = os.getpid(), os.getpgrp()
    for _ in range(64):  # deeper than any real process tree; a loop guard
        if pid == me or pid <= 1:
            return False
        stat = _stat(pid)
        if stat is None:
            return False
        if mark_of(pid) is not None:
            return True
        _, _, parent, pgid = stat
        if parent == me:
            return pgid != group
        pid = parent
    return False


def carrying(marks: set[str]) -> list[int]:
    """The live processes whose mark is one of ``marks``."""
    if not marks:
        return []  # no /proc walk for an environment whose commands left no mark
    found = []
    for pid in _pids():
        if pid != os.getpid() and mark_of(pid) in marks:
            stat = _stat(pid)
            if stat is not None and stat[1] not in ("Z", "X"):
                found.append(pid)
    return found


def strays(
    mark: str,
    group: int,
    *,
    children_before: set[int] | None,
    spared: Iterable[int] = (),
    subreaper: bool = False,
) -> set[int]:
    """The processes one command left: marked, in its group, their descendants, its orphans.

    Args:
        mark: The command's mark.
        group: Its process group.
        children_before: This process's children when the command started; ``None``
            when not taken: then no child of ours counts as an orphan of the command.
        spared: PIDs never counted (leaders of other commands, the run guard).
        subreaper: Whether this process is the child subreaper: then every process a
            command left is a descendant of ours, and only those are looked at (an
            environment read each, the cost of the search).
    """
    me = os.getpid()
    spared_set = set(spared) | {me}
    table: dict[int, tuple[int, int, str]] = {}
    for pid in _pids():
        stat = _stat(pid)
        if stat is not None:
            table[pid] = (stat[2], stat[3], stat[1])
    candidates = _descendants(table, me) if subreaper else set(table)
    found: set[int] = set()
    for pid, (ppid, pgid, state) in table.items():
        if pid in spared_set or state in ("Z", "X") or pid not in candidates:
            continue
        other_mark = mark_of(pid)
        if other_mark == mark or pgid == group:
            found.add(pid)
        elif (
            children_before is not None
            and ppid == me
            and other_mark is None
            and pid not in children_before
        ):
            found.add(pid)  # an orphan that cleared its environment, reparented to us
    grown = True
    while grown:  # descendants, whatever their group or mark
        grown = False
        for pid, (ppid, _, state) in table.items():
            if ppid in found and pid not in found and pid not in spared_set and state != "Z":
                found.add(pid)
                grown = True
    return found


def _descendants(table: dict[int, tuple[int, int, str]], root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    pending = [root]
    while pending:
        for child in children.get(pending.pop(), ()):
            if child not in found:
                found.add(child)
                pending.append(child)
    return found


def _gone(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)  # a child of ours (reparented) leaves no zombie
    stat = _stat(pid)
    return stat is None or stat[1] in ("Z", "X")


def _signal(pids: Iterable[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


async def end_processes(pids: Iterable[int], grace: float) -> None:
    """``SIGTERM`` to each, up to ``grace`` seconds, ``SIGKILL`` to the rest; reap ours."""
    left = {pid for pid in pids if not _gone(pid)}
    if not left:
        return
    _signal(left, signal.SIGTERM)
    polls = 0
    for signum, seconds in ((signal.SIGKILL, grace), (None, _KILL_WAIT_SECONDS)):
        deadline = time.monotonic() + seconds
        while left and time.monotonic() < deadline:
            # Most die within a millisecond of SIGTERM: look often at first.
            polls += 1
            await asyncio.sleep(_FIRST_POLL_SECONDS if polls <= 10 else _POLL_SECONDS)
            left = {pid for pid in left if not _gone(pid)}
        if not left:
            return
        if signum is not None:
            _signal(left, signum)


def end_processes_now(pids: Iterable[int]) -> None:
    """``SIGKILL`` to each and reap ours, without waiting (for a process about to exit)."""
    chosen = list(pids)
    _signal(chosen, signal.SIGKILL)
    deadline = time.monotonic() + 1.0
    while chosen and time.monotonic() < deadline:
        chosen = [pid for pid in chosen if not _gone(pid)]
        if chosen:
            time.sleep(_POLL_SECONDS)
