"""Counting the tool effects of an agent crash trial exactly, from outside the product.

Reliability.md 15, rows K1 and K3: "every fake tool writes to an effect ledger
... so effects can be counted exactly". The agent runs the real tools, so the
ledger is kept three ways (``agent_scenario`` arranges the files):

- ``bash``: the command itself appends ``<call id> <pid>`` to ``ledger.txt``
  and syncs it; ``read_ledger`` returns the call IDs line by line.
- ``write`` and ``edit``: each call owns one file, which the environment
  replaces atomically (temp file, then rename onto it), so an inotify
  ``IN_MOVED_TO`` event naming the file is one execution.
- ``read``: each call reads its own file, and ``IN_OPEN`` events of it show an
  execution. One execution may open the file more than once, and inotify merges
  identical events queued back to back, so opens are not counted: a process
  runs a call at most once, and the queue is drained after every process, so
  the number of processes that opened the file is the number of executions.

``EffectWatch`` is one inotify instance per trial, created before the first
process starts and read after every event: its file descriptor is what the
runner's ``select`` waits on, so a kill can follow an effect within
microseconds (the effect-window kills of row K3).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

IN_OPEN = 0x020
IN_MOVED_TO = 0x080
IN_CLOSE_WRITE = 0x008
IN_Q_OVERFLOW = 0x4000
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000
_HEADER = struct.Struct("iIII")

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def _check(result: int, what: str) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")
    return result


@dataclass(frozen=True, slots=True)
class Effect:
    """One observed event: ``kind`` is ``read``, ``write``, ``edit`` or ``ledger``."""

    kind: str
    name: str
    """The file name: ``<call id>.txt``, or the ledger's name."""

    @property
    def call_id(self) -> str:
        return self.name.removesuffix(".txt")


class EffectWatch:
    """An inotify watch of a trial's effect files (see the module docstring).

    Args:
        workspace: The agent's working directory (holding ``r/``, ``w/``, ``e/``).
        ledger: The bash ledger file (its directory is watched for writes to it).

    Raises:
        OSError: When inotify is not available.
    """

    def __init__(self, workspace: Path, ledger: Path) -> None:
        self._fd = _check(_libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC), "inotify_init1")
        self._ledger = ledger.name
        self._kinds: dict[int, str] = {}
        self.counts: Counter[tuple[str, str]] = Counter()
        """Events seen so far, by ``(kind, call id)`` (exact for renames and the ledger)."""
        self.overflowed = False
        watches = {
            "read": (workspace / "r", IN_OPEN),
            "write": (workspace / "w", IN_MOVED_TO),
            "edit": (workspace / "e", IN_MOVED_TO),
            "ledger": (ledger.parent, IN_CLOSE_WRITE),
        }
        for kind, (directory, mask) in watches.items():
            path = os.fsencode(directory)
            wd = _check(_libc.inotify_add_watch(self._fd, path, mask), f"watch {directory}")
            self._kinds[wd] = kind

    def fileno(self) -> int:
        return self._fd

    def drain(self) -> list[Effect]:
        """Read every queued event (never blocks) and add them to ``counts``."""
        found: list[Effect] = []
        while True:
            try:
                data = os.read(self._fd, 64 * 1024)
            except BlockingIOError:
                return found
            for effect in self._parse(data):
                found.append(effect)
                self.counts[(effect.kind, effect.call_id)] += 1

    def _parse(self, data: bytes) -> Iterator[Effect]:
        offset = 0
        while offset < len(data):
            wd, mask, _cookie, size = _HEADER.unpack_from(data, offset)
            raw = data[offset + _HEADER.size : offset + _HEADER.size + size]
            offset += _HEADER.size + size
            if mask & IN_Q_OVERFLOW:
                self.overflowed = True
                continue
            name = raw.rstrip(b"\0").decode()
            kind = self._kinds.get(wd)
            if not name or kind is None or (kind == "ledger" and name != self._ledger):
                continue
            yield Effect(kind, name)

    def close(self) -> None:
        os.close(self._fd)


def read_ledger(ledger: Path) -> list[str]:
    """The call IDs of the bash ledger, one per line written (a torn last line is kept)."""
    if not ledger.exists():
        return []
    return [line.split(" ")[0] for line in ledger.read_text().splitlines() if line.strip()]
