"""Where a session is served, and who may connect: the socket beside the store (issue 15).

The rendezvous is ``<store>.sock`` in the store's own directory, so whoever can
name a session (``--session PATH``, ``-c``) finds its host without a registry.
Binding it is only ever done by the holder of the store's single-writer lock
(DESIGN.md section 4), so a socket file left by a killed host is stale by
construction and the next host replaces it.

Security, in two layers:

1. the socket file is mode 0600 (and the session directory is the user's): no
   other user can even connect;
2. every accepted peer's credentials (``SO_PEERCRED``: pid, uid, gid, given by
   the kernel, not by the peer) are checked, and a peer of another uid is
   refused before it reads one byte. The second layer is what holds when the
   first is weakened (a chmod, a copied directory, root's umask).

A Unix socket path is limited to about 107 bytes, and session paths under a
deep ``$PIDURABLE_HOME`` are longer; ``short_address`` names the same file
through ``/proc/self/fd/<dir fd>/<name>`` while a descriptor of its directory
is open, which binds and connects to the same inode.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SUFFIX = ".sock"
MAX_PATH = 100
"""Socket paths longer than this go through ``/proc/self/fd`` (the kernel limit is 107)."""


def socket_path(store: Path | str) -> Path:
    """The socket beside a store: ``<store>.sock``."""
    return Path(f"{store}{SUFFIX}")


@contextlib.contextmanager
def short_address(path: Path) -> Iterator[str]:
    """A path naming ``path`` that fits a Unix socket address, valid inside the block."""
    text = os.fspath(path)
    if len(text.encode()) <= MAX_PATH:
        yield text
        return
    directory = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{directory}/{path.name}"
    finally:
        os.close(directory)


@dataclass(frozen=True, slots=True)
class Peer:
    """Who is on the other end of a Unix socket, as the kernel says."""

    pid: int
    uid: int
    gid: int


def peer_of(sock: socket.socket) -> Peer:
    """The peer credentials of a connected Unix socket (``SO_PEERCRED``)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", raw)
    return Peer(pid, uid, gid)


def bind_socket(path: Path) -> socket.socket:
    """A listening socket at ``path``, mode 0600, replacing a stale one.

    REMINDER: call only while holding the store's lock: the lock, not the socket
    file, says who hosts, so an existing file is a dead host's and is removed.
    """
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with short_address(path) as address:
            sock.bind(address)
        os.chmod(path, 0o600)
        sock.listen(64)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def connect_socket(path: Path) -> socket.socket:
    """A connected, non-blocking client socket to ``path``.

    Raises:
        OSError: Nobody serves there (``ConnectionRefusedError`` for a dead
            host's file, ``FileNotFoundError`` for none).
    """
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with short_address(path) as address:
            sock.connect(address)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock
