"""The single-writer lock of a PostgreSQL store: an advisory lock on the writer's connection.

DESIGN.md sections 4 and 8; reliability.md 9.4. One process writes a store at a
time, as with SQLite's ``flock``: opening a store takes the session-level
advisory lock ``(LOCK_CLASS, store id)`` on the store's own connection, with
``pg_try_advisory_lock``, which never waits. The server holds it for as long as
that backend lives, so:

- ``kill -9`` of the writer closes its socket, the backend ends, and the lock is
  gone: no stale lock, nothing to clean up;
- a writer whose machine vanished from the network is noticed by TCP keepalives
  (the store's connection asks for them: ``KEEPALIVES``), so its lock is freed
  within about half a minute instead of the system's two hours;
- a second opener, on any machine, is refused at once with
  ``Session is already open in another process: <store> in <database> (held by
  <host> pid <pid>)``: the holder writes who it is into its ``stores`` row right
  after taking the lock, and the refusal reads it back (the backend's
  ``application_name`` says the same to a DBA reading ``pg_stat_activity``).

One wait is allowed: when the row names a process of *this* host that no
longer exists, its backend is about to notice the closed socket and end
(milliseconds after a kill), so the opener retries for up to ``DEAD_HOLDER_WAIT``
seconds rather than refusing a session that nobody holds.

``release`` unlocks explicitly before the connection closes: a closed socket
frees the lock only when the server's backend gets round to ending, and a
reopen right after ``close`` must not find it still held.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time

import asyncpg

from pi_durable_tui.storage.errors import StoreLocked
from pi_durable_tui.storage.postgres._schema import LOCK_CLASS, SCHEMA

DEAD_HOLDER_WAIT = 5.0
"""Seconds to wait for the lock of a holder on this host whose process is gone."""
_POLL = 0.02
KEEPALIVES = {
    "tcp_keepalives_idle": "10",
    "tcp_keepalives_interval": "5",
    "tcp_keepalives_count": "3",
}
"""Server-side keepalives of the store's TCP connection (ignored on a Unix socket)."""


def identity() -> str:
    """Return how this process names itself as a holder: ``<host> pid <pid>``."""
    return f"{socket.gethostname()} pid {os.getpid()}"


def _dead_here(holder: str | None) -> bool:
    """Whether ``holder`` names a process of this host that no longer exists."""
    if holder is None:
        return False
    host, _, pid = holder.rpartition(" pid ")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


async def acquire(conn: asyncpg.Connection, store: int, name: str, where: str) -> None:
    """Take the store's advisory lock on ``conn`` and record this process as its holder.

    Args:
        conn: The store's connection; the lock lives as long as its backend.
        store: The store's ID.
        name: The store's name, for the refusal.
        where: The database as messages name it (no password).

    Raises:
        StoreLocked: Another live connection holds it.
    """
    deadline: float | None = None
    while True:
        row = await conn.fetchrow(_TAKE, LOCK_CLASS, store, identity())
        assert row is not None  # the statement returns one row
        taken, holder = row
        if taken:
            return
        if deadline is None and _dead_here(holder):
            deadline = time.monotonic() + DEAD_HOLDER_WAIT
        if deadline is None or time.monotonic() >= deadline:
            held_by = f" (held by {holder})" if holder else ""
            raise StoreLocked(
                f"Session is already open in another process: {name} in {where}{held_by}"
            )
        await asyncio.sleep(_POLL)


_TAKE = (
    # REMINDER: ``lock`` calls a volatile function, so PostgreSQL runs it exactly once;
    # the final SELECT reads the row as it was before ``mark``: the previous holder.
    "WITH lock AS (SELECT pg_try_advisory_lock($1, $2) AS taken),"
    f" mark AS (UPDATE {SCHEMA}.stores SET holder = $3, opened = now()"
    " WHERE id = $2 AND (SELECT taken FROM lock) RETURNING id)"
    f" SELECT taken, (SELECT holder FROM {SCHEMA}.stores WHERE id = $2) FROM lock"
)
"""One round trip: try the lock, name this process as the holder if it was taken, and
return whether it was and who held it before."""


async def release(conn: asyncpg.Connection, store: int) -> None:
    """Release the store's advisory lock on ``conn`` (before the connection closes)."""
    await conn.execute("SELECT pg_advisory_unlock($1, $2)", LOCK_CLASS, store)
