"""The single-writer lock of a store (DESIGN.md section 4; reliability.md 9.4, 15 row L1).

One process writes a store at a time. Opening a store takes an exclusive
``flock`` on a sidecar file, ``<store path>.lock``, and holds it until the store
is closed; a second opener, in another process or in the same one, fails at once
with ``StoreLocked("Session is already open in another process: <path>")``.

Why ``flock`` on a separate file:

- the kernel drops a ``flock`` when the last descriptor of its open file
  description closes, so a holder killed with ``kill -9`` leaves no stale lock;
- POSIX ``fcntl``/``lockf`` locks on the database itself would be dropped as soon
  as any descriptor of that file closes in the process (how-to-corrupt: "POSIX
  advisory locks cancelled by a separate thread doing close()");
- a lock taken through a new ``open()`` conflicts with every other open file
  description, including one of the same process, so a second open in the same
  process is refused too.

The lock file holds the holder's PID for people reading it, and for the refusal
(``StoreLocked.pid``, ``holder_pid``: ``pidurable export`` names the process to
quit); it is never deleted.
The PID is written in place with a fixed width, and not at all when the file
already names this process: truncating the file first (what a rewrite would do)
made ext4 commit a journal transaction, and cost about 3 ms of a 7 ms reopen.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from pathlib import Path

from pi_durable_tui.storage.errors import StoreLocked

LOCK_SUFFIX = ".lock"
_PID_WIDTH = 10
"""Digits of the PID line; wider than any PID, and than the lines older versions wrote."""


class StoreLock:
    """An exclusive lock on a store, held from ``acquire`` until ``release``."""

    __slots__ = ("_fd", "path")

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        """The store the lock protects (not the lock file)."""
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, path: str | os.PathLike[str]) -> StoreLock:
        """Lock the store at ``path`` through ``<path>.lock``, without waiting.

        Args:
            path: The store (a database file or a store directory).

        Returns:
            The held lock.

        Raises:
            StoreLocked: Another open file description, in this process or
                another one, holds the lock.
            OSError: The lock file cannot be created (missing directory, rights).
        """
        store = Path(path)
        lock_file = store.with_name(store.name + LOCK_SUFFIX)
        # REMINDER: O_CLOEXEC, so the processes that tools spawn never inherit the
        # descriptor: a child holding it would keep the store locked after we die.
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            os.close(fd)
            if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise StoreLocked(
                    f"Session is already open in another process: {store}",
                    pid=holder_pid(store),
                ) from None
            raise
        with contextlib.suppress(OSError):  # the PID is a courtesy to people; flock locks
            _note_holder(fd)
        return cls(store, fd)

    @property
    def held(self) -> bool:
        """Whether the lock is still held."""
        return self._fd is not None

    def release(self) -> None:
        """Release the lock; idempotent."""
        fd, self._fd = self._fd, None
        if fd is not None:
            # REMINDER: closing the descriptor releases the flock. The file is left in
            # place: unlinking it would let a waiter lock a deleted inode while a newer
            # opener locks a fresh file, and both would think they own the store.
            os.close(fd)

    def __repr__(self) -> str:
        state = "held" if self.held else "released"
        return f"StoreLock({str(self.path)!r}, {state})"


def holder_pid(path: str | os.PathLike[str]) -> int | None:
    """The PID the holder of ``path``'s lock wrote into its lock file, if it wrote one.

    Only meaningful while the lock is held (a released lock file keeps the last
    holder's PID): read it when ``acquire`` was refused.
    """
    store = Path(path)
    try:
        text = store.with_name(store.name + LOCK_SUFFIX).read_text("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def _note_holder(fd: int) -> None:
    """Write this process's PID into the lock file, in place, unless it is already there."""
    line = f"{os.getpid():>{_PID_WIDTH}}\n".encode()
    if os.pread(fd, len(line) + 1, 0) != line:
        # REMINDER: no ftruncate (see the module docstring); a fixed-width line covers
        # every shorter line an older holder wrote, so what is left reads as one PID.
        os.pwrite(fd, line, 0)
