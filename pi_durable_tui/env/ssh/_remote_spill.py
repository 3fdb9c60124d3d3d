"""The spill file of a remote command: the complete output, in a file on the remote host.

The spill file must be where the tools can read it, so for ``SshEnv`` it is a
``pi-output-*.log`` file in the remote temp directory, written through SFTP.
The thresholds (``SpillTrigger``) and the secret redaction (``ByteStreamRedaction``)
are the local spill file's; redaction happens here, before a byte leaves this
process, with this process's secret values and the remote secret-looking
variables' values.

Output arrives on the event loop faster than SFTP may write it, so chunks queue
for one writer task, which writes what has queued (up to 4 MiB) at once: one
request per 32 KiB packet would wait a round trip each, while asyncssh sends a
large write as parallel requests. Past ``PAUSE_BYTES`` queued, the channel
stops being read (``pause``), so SSH flow control slows the command instead of
memory growing; under ``RESUME_BYTES`` it is read again. ``finish`` waits for
the last write.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable, Sequence

import asyncssh

from pi_durable_tui.env._errors import FileError
from pi_durable_tui.env._redaction import ByteStreamRedaction
from pi_durable_tui.env._spill import SpillTrigger
from pi_durable_tui.env._types import SpillPolicy

SpillOpener = Callable[[], Awaitable[tuple[str, asyncssh.SFTPClientFile]]]
"""Creates the remote spill file and returns its path and open handle."""

PAUSE_BYTES = 16 << 20
RESUME_BYTES = 4 << 20
WRITE_BYTES = 4 << 20


class RemoteSpill:
    """Watches one remote command's output and spills it to a remote file past the thresholds."""

    def __init__(
        self,
        policy: SpillPolicy,
        open_file: SpillOpener,
        *,
        secrets: Sequence[bytes] = (),
        pause: Callable[[], None],
        resume: Callable[[], None],
    ) -> None:
        self._trigger = SpillTrigger(policy)
        self._redactor = ByteStreamRedaction(secrets)
        self._open_file = open_file
        self._pause, self._resume = pause, resume
        self._queue: deque[bytes] = deque()
        self._queued = 0
        self._paused = False
        self._wake = asyncio.Event()
        self._closing = False
        self._writer: asyncio.Task[str] | None = None

    @property
    def spilling(self) -> bool:
        """Whether the thresholds were crossed (chunks now go to the file)."""
        return self._writer is not None

    def feed(self, data: bytes, newlines: int) -> None:
        """Take the next chunk; ``newlines`` is needed only until spilling starts."""
        if self._writer is None:
            held = self._trigger.feed(data, newlines)
            if held is None:
                return
            self._writer = asyncio.get_running_loop().create_task(self._write_all())
            data = held
        self._enqueue(self._redactor.redact(data))

    def _enqueue(self, data: bytes) -> None:
        if data:
            self._queue.append(data)
            self._queued += len(data)
        self._wake.set()
        if self._queued > PAUSE_BYTES and not self._paused:
            self._paused = True
            self._pause()

    def _take(self) -> bytes:
        """Up to ``WRITE_BYTES`` of queued chunks, joined into one write."""
        parts = [self._queue.popleft()]
        size = len(parts[0])
        while self._queue and size + len(self._queue[0]) <= WRITE_BYTES:
            parts.append(self._queue.popleft())
            size += len(parts[-1])
        return b"".join(parts)

    async def _write_all(self) -> str:
        try:
            path, handle = await self._open_file()
        except FileError as error:
            raise FileError("unknown", f"Could not create the full output file: {error}") from None
        offset = 0
        try:
            while True:
                while self._queue:
                    data = self._take()
                    await handle.write(data, offset)
                    offset += len(data)
                    self._queued -= len(data)
                    if self._paused and self._queued < RESUME_BYTES:
                        self._paused = False
                        self._resume()
                if self._closing:
                    return path
                self._wake.clear()
                await self._wake.wait()
        except (asyncssh.Error, OSError) as error:
            raise FileError(
                "unknown", f"Could not write the full output to {path}: {error}", path
            ) from None
        finally:
            if self._paused:
                self._paused = False
                self._resume()
            with contextlib.suppress(asyncssh.Error, OSError):
                await handle.close()

    async def finish(self) -> str | None:
        """Write what is left and close the file; its path, or None below the thresholds."""
        self._trigger.drop()
        if self._writer is None:
            return None
        if not self._closing:
            self._closing = True
            self._enqueue(self._redactor.redact(b"", final=True))
        return await asyncio.shield(self._writer)
