"""A background job's log, redacted as it is written (issue 13).

Every job's output (started with ``background``, or moved there by Ctrl+B)
reaches this process through the command's pipes, read on the event loop as a
foreground command's are (``_process.RunningCommand``), and ``JobLog`` is its
one writer: each stream passes through its own ``ByteStreamRedaction`` (the
streaming redactor of the spill file) before it is appended to
``job-<mark>.log`` in the run's directory (mode 0600). So the file never holds
a secret value, at any moment a reader (``job_output``, a user's ``tail -f``)
looks at it: a value cut between two writes is held back until the next write
shows whether it is one (only an end that could start a secret is held, so a
job's last line shows at once).

Why pipes and not the file itself as the job's stdout (as it was): with the
file, the job's processes write the bytes and nothing can redact them before
they land; the log could only be rewritten after the job ended, and a kept
job's never was.

``keep`` leaves the job writing past this process: the pipes, the log's
descriptor, the secrets and what each stream held back go to a relay process
(``_log_relay``) carrying the job's mark, which goes on redacting into the same
file; the file moves (a rename) to ``pi-kept-job-<mark>.log`` in the temp
directory, which nothing deletes.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence

from pi_durable_tui.env._groups import ProcessGroup
from pi_durable_tui.env._log_relay import append_to_log
from pi_durable_tui.env._redaction import ByteStreamRedaction
from pi_durable_tui.env._relay_start import start_relay
from pi_durable_tui.env._types import OutputStream, SkippedOutput


class JobLog:
    """The log file of one job, written only through the streaming redactor.

    Args:
        path: Where the log is created (appended to when it exists).
        secrets: The values it must never hold.

    Raises:
        OSError: The file cannot be created.
    """

    def __init__(self, path: str, secrets: Sequence[bytes]) -> None:
        self._path = path
        self._secrets = tuple(secrets)
        self._fd: int | None = os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600
        )
        self._streams: dict[OutputStream, ByteStreamRedaction] = {}

    @property
    def path(self) -> str:
        """The log's path (moved by ``keep``)."""
        return self._path

    def write(self, data: bytes, stream: OutputStream, skipped: SkippedOutput | None) -> None:
        """Append the next chunk of ``stream`` (an ``OutputCallback``), redacted."""
        del skipped  # a job has no window: nothing is skipped
        redaction = self._streams.get(stream)
        if redaction is None:
            redaction = self._streams[stream] = ByteStreamRedaction(self._secrets)
        self._append(redaction.redact(data))

    def _append(self, data: bytes) -> None:
        if self._fd is not None and data:
            append_to_log(self._fd, data)

    def close(self) -> None:
        """Write what each stream held back (the job ended) and close the file. Idempotent."""
        for redaction in self._streams.values():
            self._append(redaction.redact(b"", final=True))
        self._streams.clear()
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def keep(self, mark: str, pipes: Sequence[tuple[OutputStream, int]], target: str) -> str:
        """Hand the job's pipes to a relay that writes this log past this process.

        The caller stops reading ``pipes`` at once (no await in between): from
        now on the relay alone reads them (no relay starts when none is open).
        The file moves to ``target`` (where the rename fails, it stays where it
        is).

        Args:
            mark: The job's mark (the relay carries it).
            pipes: The read ends of the job's output, by stream.
            target: The kept log's path.

        Returns:
            The log's path now.

        Raises:
            OSError: The relay could not be started (nothing changed).
        """
        if self._fd is not None and pipes:
            handed = [(fd, self._held(stream)) for stream, fd in pipes]
            # A group of its own (its session): reaped by the next command like any group
            # of ours, and spared by every command's search for what it left (``end_strays``).
            ProcessGroup(start_relay(mark, handed, self._fd, self._secrets))
            self._streams.clear()  # what they held is the relay's now
        self.close()  # with no pipe left, what is held is the end of the output
        with contextlib.suppress(OSError):
            os.rename(self._path, target)
            self._path = target
        return self._path

    def _held(self, stream: OutputStream) -> bytes:
        redaction = self._streams.get(stream)
        return b"" if redaction is None else redaction.held
