"""Checkpoints of the SQLite store's WAL, kept off the commit path (R129; DESIGN.md section 2).

Why. A checkpoint copies the pages the WAL holds back into the database file
and flushes that file. SQLite's automatic checkpoint runs it inside the COMMIT
that takes the WAL past 1,000 pages: that one commit costs a few milliseconds
(the copy, and an ``fsync`` even at ``synchronous = NORMAL``) where a commit
costs 0.1, once every 250 to 300 one-entry commits, and the commit latency's
p99 showed it (about 5 ms against a p50 of 0.2).

What runs instead (SQLite's own is off: ``wal_autocheckpoint = 0``):

- **Beside the commits.** After every ``EVERY_FRAMES`` WAL frames written, a
  ``PASSIVE`` checkpoint runs on a thread of the default executor, through a
  second connection of its own. ``PASSIVE`` neither waits for nor blocks the
  writer: commits go on meanwhile on aiosqlite's thread, and the copy and the
  flush happen beside them.
- **A restart, now and then.** SQLite starts the WAL over from its beginning
  only when the next write finds every frame already copied. Under a steady
  stream of commits the checkpoint beside them never catches up (commits land
  while it flushes), so the WAL would grow without bound. When the WAL has
  taken more than ``RESTART_FRAMES`` frames since it last started over, one
  ``PASSIVE`` checkpoint runs on aiosqlite's thread between two commits, where
  no commit can interleave: it copies what is left (the ones beside the commits
  copied most of it already) and the next commit starts the WAL over. About one
  one-entry commit in 2,000 waits behind it. When commits pause, as they do
  between an agent's steps, the checkpoint beside them finishes and the WAL
  starts over on its own.
- At most one checkpoint runs at a time; ``close`` waits for it and truncates
  the WAL.

SQLite does not say how many frames a commit wrote; ``SqliteStorage`` passes an
estimate from the bytes it wrote (``frames_written``), and each checkpoint's
report of the WAL's length corrects the count upward.

The thread. DESIGN.md section 2 keeps harness code on the event loop and
aiosqlite's thread; this adds storage-internal work on the default executor (as
``JsonlStorage`` does for its flushed writes), never harness code.

Durability. The second connection has the store's ``synchronous`` level, so a
checkpoint flushes the database file before the WAL can be reused: at NORMAL
the database survives a power loss intact (losing the newest commits), at FULL
with every commit. A failed checkpoint loses nothing (the WAL stays valid and
the next checkpoint, or the next open, takes it up), so failures are ignored.

``SqliteStorage.open(wal_autocheckpoint=N)`` brings SQLite's own automatic
checkpoint back (every N pages, inside the commit that reaches them) and turns
this off; ``0`` leaves every checkpoint to ``close``.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

EVERY_FRAMES = 512
"""WAL frames (2 MiB of 4 KiB pages) between two checkpoints beside the commits: about
240 one-entry commits. A checkpoint copies each page once however many frames hold
it, so fewer, larger ones cost less in all; on this machine every 64, 256 or 1,024
one-entry commits gave p99s that differed less than two runs of one of them."""
RESTART_FRAMES = 4096
"""WAL frames (16 MiB) past which one checkpoint runs between two commits."""

OnWorker = Callable[[Callable[[sqlite3.Connection], Any]], Awaitable[Any]]
"""Runs a function of the store's connection on aiosqlite's thread, between commits."""


def passive_checkpoint(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """Copy what the WAL holds into the database file without waiting.

    Returns:
        ``(busy, frames, copied)``: whether another checkpoint held it off, the
        frames in the WAL when it started, and how many of them are now copied.
    """
    # REMINDER: fetchall, not fetchone: the statement must finish, or the connection
    # would keep it open.
    busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()[0]
    return int(busy), int(frames), int(copied)


class Checkpoints:
    """When and where one open store checkpoints its WAL; see the module docstring.

    It counts the WAL frames each commit writes as ``SqliteStorage`` estimates them
    (SQLite does not tell), corrected upward by what each checkpoint reports.
    Every method but the checkpoint itself runs on the event loop.
    """

    def __init__(self, path: Path, synchronous: str, on_worker: OnWorker) -> None:
        self._path = path
        self._synchronous = synchronous
        self._on_worker = on_worker
        self._since_beside = 0
        """Frames written since the last checkpoint beside the commits started."""
        self._since_restart = 0
        """Frames written since the WAL last started over (at least)."""
        self._beside: asyncio.Future[int] | None = None
        self._restart: asyncio.Future[tuple[int, int, int]] | None = None
        self._conn: sqlite3.Connection | None = None
        """The second connection; used by one executor job at a time."""
        self._conn_lock = threading.Lock()
        self._closed = False

    def after_commit(self, frames: int) -> None:
        """Count a commit's frames; start a checkpoint, beside or between commits, when due.

        Args:
            frames: About how many WAL frames (pages) the commit wrote.
        """
        if self._closed:
            return
        self._since_beside += frames
        self._since_restart += frames
        if self._beside is not None or self._restart is not None:
            return  # one at a time: a restart while one runs beside would find it busy
        if self._since_restart > RESTART_FRAMES:
            self._restart = asyncio.ensure_future(self._on_worker(passive_checkpoint))
            self._restart.add_done_callback(self._restarted)
        elif self._since_beside >= EVERY_FRAMES:
            self._since_beside = 0
            loop = asyncio.get_running_loop()
            self._beside = loop.run_in_executor(None, self._checkpoint_beside)
            self._beside.add_done_callback(self._done_beside)

    def _checkpoint_beside(self) -> int:
        """Run one PASSIVE checkpoint through the second connection (on an executor thread).

        Returns:
            The frames the WAL held when it started (0 when it could not run).
        """
        try:
            with self._conn_lock:
                if self._closed:
                    return 0
                if self._conn is None:
                    conn = sqlite3.connect(
                        self._path, isolation_level=None, check_same_thread=False
                    )
                    conn.execute(f"PRAGMA synchronous = {self._synchronous}")
                    self._conn = conn
                return passive_checkpoint(self._conn)[1]
        except Exception:
            return 0  # a checkpoint is never needed for correctness; the next one catches up

    def _done_beside(self, future: asyncio.Future[int]) -> None:
        self._beside = None
        if not future.cancelled():
            self._since_restart = max(self._since_restart, future.result())

    def _restarted(self, future: asyncio.Future[tuple[int, int, int]]) -> None:
        self._restart = None
        if future.cancelled() or future.exception() is not None:
            return  # retried at the next commit
        busy, frames, copied = future.result()
        if not busy and copied == frames:
            # Every frame is copied and no commit ran meanwhile: the next one starts
            # the WAL over.
            self._since_restart = self._since_beside = 0

    async def close(self) -> None:
        """Wait for the checkpoints in flight, then close the second connection."""
        self._closed = True
        pending = [f for f in (self._beside, self._restart) if f is not None]
        waiting = asyncio.gather(*pending, return_exceptions=True) if pending else None
        try:
            if waiting is not None:
                # Shielded: a checkpoint goes on in its thread whatever happens to us.
                await asyncio.shield(waiting)
        finally:
            if waiting is None or waiting.done():
                self._close_connection()
            else:  # cancelled while waiting: close the connection once it is free
                waiting.add_done_callback(lambda _: self._close_connection())

    def _close_connection(self) -> None:
        with self._conn_lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
