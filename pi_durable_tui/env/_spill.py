"""The spill file of ``exec``: the complete output, once it is too large to keep (R120).

``SpillFile`` holds the combined output in memory until it has more than
``after_bytes`` bytes or more than ``after_lines`` lines (an unterminated last
line counts, so the spill starts exactly when a tool keeping that many would
truncate). It then creates a ``pi-output-*.log`` temp file, writes what it held,
and from then on writes every chunk as it arrives, in the order chunks came from
either stream. Writes are whole chunks (up to the 1 MiB pipe reads), so a
gigabyte of output costs a thousand ``write`` calls.

The file never holds a secret of this process: every value of a secret-looking
environment variable (``secrets``) is written as ``[redacted]`` by the one
``SecretRedactor`` (``ByteStreamRedaction``, beside it in ``_redaction``, keeps
a stream's held-back bytes). A value cut by a chunk boundary is found because
the end of each write that could start a secret (at most ``len(longest) - 1``
bytes) is held back until the next one (or the close).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence

from pi_durable_tui.env._errors import FileError
from pi_durable_tui.env._redaction import ByteStreamRedaction
from pi_durable_tui.env._types import SpillPolicy

SPILL_PREFIX = "pi-output-"
"""The name prefix of the temp files holding a command's complete output (R120)."""


class SpillTrigger:
    """Holds a command's output in memory until it crosses a ``SpillPolicy`` threshold."""

    def __init__(self, policy: SpillPolicy) -> None:
        if policy.after_bytes < 0 or policy.after_lines < 0:
            raise FileError("invalid", "SpillPolicy thresholds must be at least 0")
        self._policy = policy
        self._held: list[bytes] = []
        self._bytes = 0
        self._newlines = 0

    def feed(self, data: bytes, newlines: int) -> bytes | None:
        """Hold the next chunk; once a threshold is crossed, return everything held.

        After it returned the held output, the caller writes every later chunk
        itself and stops feeding.
        """
        self._held.append(data)
        self._bytes += len(data)
        self._newlines += newlines
        lines = self._newlines + (0 if data.endswith(b"\n") else 1)
        if self._bytes > self._policy.after_bytes or lines > self._policy.after_lines:
            held, self._held = self._held, []
            return b"".join(held)
        return None

    def drop(self) -> None:
        """Forget what is held (the command ended below the thresholds)."""
        self._held = []


class SpillFile:
    """Watches one command's output and spills it to a file past the thresholds."""

    def __init__(
        self, policy: SpillPolicy, directory: str | None = None, secrets: Sequence[bytes] = ()
    ) -> None:
        self._trigger = SpillTrigger(policy)
        self._redactor = ByteStreamRedaction(secrets)
        self._directory = directory
        self._fd: int | None = None
        self.path: str | None = None

    @property
    def spilling(self) -> bool:
        """Whether the thresholds were crossed (chunks now go straight to the file)."""
        return self.path is not None

    def feed(self, data: bytes, newlines: int) -> None:
        """Take the next chunk; ``newlines`` is needed only until spilling starts.

        Raises:
            FileError: When the file cannot be created or written.
        """
        if self._fd is not None:
            self._write(data)
            return
        held = self._trigger.feed(data, newlines)
        if held is not None:
            self._start(held)

    def _start(self, held: bytes) -> None:
        try:
            fd, self.path = tempfile.mkstemp(
                prefix=SPILL_PREFIX, suffix=".log", dir=self._directory
            )
        except OSError as error:
            raise FileError(
                "unknown", f"Could not create the full output file: {error.strerror}"
            ) from None
        self._fd = fd
        self._write(held)

    def _write(self, data: bytes, final: bool = False) -> None:
        assert self._fd is not None
        data = self._redactor.redact(data, final=final)
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as error:
            raise FileError(
                "unknown",
                f"Could not write the full output to {self.path}: {error.strerror}",
                self.path,
            ) from None

    def close(self) -> None:
        """Close the file (the path stays valid); drop held output. Idempotent."""
        self._trigger.drop()
        if self._fd is not None and self._redactor.holding:
            with contextlib.suppress(FileError):
                self._write(b"", final=True)
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
