"""A kept job's relay: it drains the job's pipes into its log, redacted, past our exit (issue 13).

A job's output comes through pipes this process reads (``_job_log``). A job
the user keeps runs on after this process exits, so someone must keep reading
those pipes (a job whose pipe nobody reads blocks, or dies of ``SIGPIPE``) and
keep the log free of secrets. ``start_relay`` hands the read ends to a small
process of pidurable's own, started at keep time:

- ``python -I -S -c <boot> <package root> <fd>...``: isolated (no
  ``PYTHON*`` variable, no site) and importing this very module from the
  package that started it, so it redacts with the same ``ByteStreamRedaction``
  (not ``python -m``: that would find whatever ``pi_durable_tui`` the
  environment's path holds, and ``-I`` ignores ``PYTHONPATH``);
- its environment is nothing but the job's mark (``MARK_NAME``), so the run
  guard spares it with the job (``keep``), ``KeptJob.running`` counts it and
  ``stop`` ends it with the job;
- the secret values, and the bytes the job's writer held back (the possible
  start of a secret, ``ByteStreamRedaction.held``), arrive on its stdin, a pipe
  written once and closed: never in its argv or environment, which
  ``/proc/<pid>/cmdline`` and ``environ`` show to every process of the user;
- its stdout is the log (the writer's own descriptor, opened for appending),
  its working directory ``/`` (it holds no workspace busy), its session its own
  (no hangup of the terminal reaches it).

It exits when every pipe reached end of file (every writer of the job is
gone), after writing what it held back.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import subprocess
import sys
from collections.abc import Sequence

from pi_durable_tui.env._spill import ByteStreamRedaction
from pi_durable_tui.env._strays import MARK_NAME

_READ_SIZE = 1 << 20
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from pi_durable_tui.env._log_relay import main; main(sys.argv[2:])"
)


def start_relay(
    mark: str, pipes: Sequence[tuple[int, bytes]], log: int, secrets: Sequence[bytes]
) -> int:
    """Start the relay of a kept job; return its PID.

    Args:
        mark: The job's mark (the relay carries it).
        pipes: Each read end of the job's output and the bytes held back for it.
        log: The log's descriptor (open for appending): the relay's stdout.
        secrets: The values the log must never hold.

    Raises:
        OSError: The relay could not be started (the job is then not kept).
    """
    config = json.dumps(
        {"secrets": [value.hex() for value in secrets], "held": [held.hex() for _, held in pipes]}
    ).encode("ascii")
    read_end, write_end = os.pipe()
    fds = [fd for fd, _ in pipes]
    try:
        process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _BOOT, _ROOT, *map(str, fds)],
            stdin=read_end,
            stdout=log,
            stderr=subprocess.DEVNULL,
            cwd="/",
            env={MARK_NAME: mark},
            start_new_session=True,
            pass_fds=fds,
            close_fds=True,
        )
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    # REMINDER: the relay outlives us on purpose; marking the Popen finished keeps its
    # __del__ from warning or waiting (``JobLog.keep`` makes it a ``ProcessGroup``, reaped here).
    process.returncode = 0
    try:
        _write_all(write_end, config)
    finally:
        os.close(write_end)
    return process.pid


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def append_to_log(log: int, data: bytes) -> None:
    """Append ``data`` to a job's log (the relay's, and ``JobLog``'s while we run)."""
    # REMINDER: a log that cannot be written (a full disk) loses those bytes, but the
    # pipes are still drained: a writer that stopped reading would block the job.
    with contextlib.suppress(OSError):
        _write_all(log, data)


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
    config = json.loads(sys.stdin.buffer.read() or b"{}")
    os.close(0)
    secrets = [bytes.fromhex(value) for value in config.get("secrets", [])]
    held = [bytes.fromhex(value) for value in config.get("held", [])]
    fds = [int(argument) for argument in arguments]
    held += [b""] * (len(fds) - len(held))
    relay(fds, [ByteStreamRedaction(secrets, h) for h in held[: len(fds)]], 1)
