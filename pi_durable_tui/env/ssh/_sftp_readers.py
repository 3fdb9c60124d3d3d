"""Open files and directories of ``SshEnv``: positional reads, line scans, paged listings.

``SftpBinaryReader`` holds one SFTP file handle, which the server holds as one
open descriptor, so every read sees the file that was opened even when the
path is replaced meanwhile (as ``LocalBinaryReader``). ``scan_lines`` reads 1
MiB blocks (asyncssh splits each into parallel requests) and selects lines
with the same ``LineSelection`` as the local reader. ``SftpDirReader`` pages
through one SFTP directory listing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Self

import asyncssh

from pi_durable_tui.env._errors import FileError, aborted
from pi_durable_tui.env._files import READ_BLOCK
from pi_durable_tui.env._readers import LineSelection
from pi_durable_tui.env._types import DirEntry, FileInfo, LineScan
from pi_durable_tui.env.ssh._sftp_errors import TRANSPORT_ERRORS, classify
from pi_durable_tui.env.ssh._sftp_files import entry_of, info_of, read_block


class _ClosedOnExit:
    async def close(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()


class SftpBinaryReader(_ClosedOnExit):
    """A ``BinaryReader`` over one open SFTP file handle."""

    def __init__(
        self, sftp: asyncssh.SFTPClient, handle: asyncssh.SFTPClientFile, path: str
    ) -> None:
        self._sftp = sftp
        self._handle: asyncssh.SFTPClientFile | None = handle
        self._path = path

    @property
    def path(self) -> str:
        """The absolute path that was opened."""
        return self._path

    def _open_handle(self) -> asyncssh.SFTPClientFile:
        if self._handle is None:
            raise FileError("invalid", f"The reader of {self._path} is closed", self._path)
        return self._handle

    async def read(self, offset: int, size: int) -> bytes:
        """Read up to ``size`` bytes at ``offset``; fewer (or none) at the end of the file."""
        handle = self._open_handle()
        if offset < 0 or size < 0:
            raise FileError(
                "invalid", f"offset and size must be at least 0, got {offset}, {size}", self._path
            )
        if size == 0:
            return b""
        try:
            return await read_block(handle, size, offset)
        except asyncssh.SFTPError as error:
            raise await classify(self._sftp, error, self._path, "read") from None

    async def info(self) -> FileInfo:
        """The opened file's kind, size and mtime, now (``fstat`` on the handle)."""
        handle = self._open_handle()
        try:
            return info_of(await handle.stat())
        except asyncssh.SFTPError as error:
            raise await classify(self._sftp, error, self._path, "stat") from None

    async def scan_lines(
        self,
        *,
        start_line: int = 0,
        max_lines: int | None = None,
        max_bytes: int | None = None,
        abort: asyncio.Event | None = None,
    ) -> LineScan:
        """Select lines from ``start_line`` and count all lines, decoding nothing."""
        handle = self._open_handle()
        if abort is not None and abort.is_set():
            raise aborted(self._path)
        selection = LineSelection.checked(self._path, start_line, max_lines, max_bytes)
        newlines = offset = 0
        try:
            while True:
                if abort is not None and abort.is_set():
                    raise aborted(self._path)
                block = await read_block(handle, READ_BLOCK, offset)
                if not block:
                    break
                offset += len(block)
                newlines += block.count(b"\n")
                if selection.stopped is None:
                    selection.feed(block)
        except asyncssh.SFTPError as error:
            raise await classify(self._sftp, error, self._path, "read") from None
        return selection.result(newlines)

    async def close(self) -> None:
        """Release the handle. Idempotent."""
        handle, self._handle = self._handle, None
        if handle is not None:
            with contextlib.suppress(*TRANSPORT_ERRORS):
                await handle.close()


class SftpDirReader(_ClosedOnExit):
    """A ``DirReader`` over one SFTP directory listing."""

    def __init__(self, sftp: asyncssh.SFTPClient, path: str, page_size: int) -> None:
        if page_size < 1:
            raise FileError("invalid", f"page_size must be at least 1, got {page_size}", path)
        self._sftp = sftp
        self._path = path
        self._page_size = page_size
        self._names: AsyncIterator[asyncssh.SFTPName] | None = None

    def open(self) -> None:
        """Start the listing (the caller checked that the path is a directory)."""
        self._names = aiter(self._sftp.scandir(self._path))

    async def read_page(self) -> list[DirEntry]:
        """The next page of entries; an empty list once every entry was returned."""
        names = self._names
        if names is None:
            return []
        page: list[DirEntry] = []
        try:
            while len(page) < self._page_size:
                try:
                    name = await anext(names)
                except StopAsyncIteration:
                    break
                entry = entry_of(name)
                if entry is not None:
                    page.append(entry)
        except asyncssh.SFTPError as error:
            raise await classify(self._sftp, error, self._path, "list") from None
        if not page:
            await self.close()
        return page

    async def close(self) -> None:
        """Release the listing's handle. Idempotent."""
        names, self._names = self._names, None
        closing = getattr(names, "aclose", None)
        if closing is not None:
            with contextlib.suppress(*TRANSPORT_ERRORS):
                await closing()
