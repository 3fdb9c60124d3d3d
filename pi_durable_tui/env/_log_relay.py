"""A kept job's relay: the process that drains the job's pipes into its log, redacted (issue 13).

A job the user keeps runs on after pidurable exits; ``_relay_start`` hands its
pipes, its log and the secrets to a process of pidurable's own that runs this
module's ``main`` (why it is started as it is, and what it never shows, is
written there). ``main`` reads the secrets and the bytes each stream held back
from stdin (``relay_input`` writes them), then ``relay`` copies every pipe
through its ``ByteStreamRedaction`` into stdout, the log. It exits when every
pipe reached end of file (every writer of the job is gone), after writing what
it held back.

One such process runs per kept job, for as long as the job, so it loads only
what it runs: this module imports the standard library's ``selectors`` and
``_redaction`` (with the ``_secrets`` it stands on), nothing else of the
package, and its process does not run the package's ``__init__`` files
(``_relay_start._BOOT``). ``append_to_log`` is also the writer of a job's log
while pidurable runs (``JobLog``).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import sys
from collections.abc import Sequence

from pi_durable_tui.env._redaction import ByteStreamRedaction

_READ_SIZE = 1 << 20
_SECRET = b"secret"
_HELD = b"held"


def relay_input(secrets: Sequence[bytes], held: Sequence[bytes]) -> bytes:
    """What the relay reads on its stdin: one line per secret, one per pipe's held bytes.

    Each line is a tag and the value in hex (``secret 6b6579``, ``held ``), so
    any bytes pass and no JSON parser is loaded to read them.

    Args:
        secrets: The values the log must never hold.
        held: The bytes held back for each pipe, in the order of the pipes.
    """
    lines = [_SECRET + b" " + value.hex().encode("ascii") for value in secrets]
    lines += [_HELD + b" " + value.hex().encode("ascii") for value in held]
    return b"".join(line + b"\n" for line in lines)


def _read_input(data: bytes) -> tuple[list[bytes], list[bytes]]:
    """The secrets and the held bytes of each pipe, from ``relay_input``'s lines."""
    secrets: list[bytes] = []
    held: list[bytes] = []
    for line in data.splitlines():
        tag, _, value = line.partition(b" ")
        if tag in (_SECRET, _HELD):
            (secrets if tag == _SECRET else held).append(bytes.fromhex(value.decode("ascii")))
    return secrets, held


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (``os.write`` may write part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def append_to_log(log: int, data: bytes) -> None:
    """Append ``data`` to a job's log (the relay's, and ``JobLog``'s while we run)."""
    # REMINDER: a log that cannot be written (a full disk) loses those bytes, but the
    # pipes are still drained: a writer that stopped reading would block the job.
    with contextlib.suppress(OSError):
        write_all(log, data)


def relay(fds: Sequence[int], streams: Sequence[ByteStreamRedaction], log: int) -> None:
    """Copy every pipe into ``log`` through its redaction until each reaches end of file.

    Args:
        fds: The read ends (blocking or not).
        streams: The redaction state of each.
        log: Where the redacted bytes go.
    """
    selector = selectors.DefaultSelector()
    for fd, stream in zip(fds, streams, strict=True):
        selector.register(fd, selectors.EVENT_READ, stream)
    while selector.get_map():
        for key, _ in selector.select():
            stream = key.data
            try:
                data = os.read(key.fd, _READ_SIZE)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if data:
                append_to_log(log, stream.redact(data))
                continue
            append_to_log(log, stream.redact(b"", final=True))
            selector.unregister(key.fd)
            os.close(key.fd)


def main(arguments: Sequence[str]) -> None:
    """The relay process: read the secrets from stdin, then relay the pipes to stdout."""
    secrets, held = _read_input(sys.stdin.buffer.read())
    os.close(0)
    fds = [int(argument) for argument in arguments]
    held += [b""] * (len(fds) - len(held))
    relay(fds, [ByteStreamRedaction(secrets, h) for h in held[: len(fds)]], 1)
