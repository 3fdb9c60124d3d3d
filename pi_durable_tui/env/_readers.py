"""Open files and directories of ``LocalEnv``: positional reads, line scans, paged listings.

``LocalBinaryReader`` holds one descriptor, so every read sees the same file
even if the path is replaced meanwhile (the read tool compares ``info()`` before
and after to notice a change). ``scan_lines`` reads in 1 MiB blocks and keeps
only the selected lines, so showing the head of a 1 GiB log costs one pass of
``bytes.count`` over it (for the total) and no decoding. ``LocalDirReader``
wraps one ``os.scandir`` iterator. Blocking calls run in a worker thread.
"""

from __future__ import annotations

import asyncio
import os
from types import TracebackType
from typing import Literal, Self

from pi_durable_tui.env._errors import FileError, aborted, file_error_from_os
from pi_durable_tui.env._files import READ_BLOCK, AbortCheck, entry_of, info_of
from pi_durable_tui.env._types import DirEntry, FileInfo, LineScan


def _never() -> bool:
    return False


def cut_at_character(data: bytes, limit: int) -> bytes:
    """The first ``limit`` bytes of ``data``, shortened so no UTF-8 character is split."""
    if len(data) <= limit:
        return data
    cut = limit
    while cut > 0 and data[cut] & 0xC0 == 0x80:
        cut -= 1
    return data[:cut]


class LineSelection:
    """The state of one ``scan_lines`` pass: which line we are in and what was kept."""

    def __init__(self, start_line: int, max_lines: int | None, max_bytes: int | None) -> None:
        self.start_line = start_line
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.line = 0  # index of the line the next byte belongs to
        self.lines: list[bytes] = []
        self.used = 0  # selected bytes, newlines between selected lines included
        self.current: list[bytes] = []
        self.current_len = 0  # full length of the line being collected
        self.kept_len = 0  # how much of it ``current`` holds
        self.first_line_bytes = 0
        self.stopped: Literal["end", "lines", "bytes"] | None = None

    def _budget(self) -> int | None:
        # Bytes of the current line worth keeping: one more than can fit tells "too long",
        # and the first line keeps what a cut on a character boundary needs.
        if self.max_bytes is None:
            return None
        room = self.max_bytes - (self.used + 1 if self.lines else 0)
        return max(room, 0) + 1

    def _collect(self, piece: bytes) -> None:
        self.current_len += len(piece)
        budget = self._budget()
        if budget is not None and self.kept_len >= budget:
            return
        if budget is not None and self.kept_len + len(piece) > budget:
            piece = piece[: budget - self.kept_len]
        self.current.append(piece)
        self.kept_len += len(piece)

    def _finish_line(self, *, final: bool) -> None:
        if self.max_lines == 0:  # a line exists to select, but none may be
            self.stopped = "lines"
            return
        line = b"".join(self.current)
        full = self.current_len
        self.current, self.current_len, self.kept_len = [], 0, 0
        self.line += 1
        if not self.lines:
            self.first_line_bytes = full
            if self.max_bytes is not None and full > self.max_bytes:
                self.lines.append(cut_at_character(line, self.max_bytes))
                self.stopped = "bytes"
                return
            self.lines.append(line)
            self.used = full
        elif self.max_bytes is not None and self.used + 1 + full > self.max_bytes:
            self.stopped = "bytes"
            return
        else:
            self.lines.append(line)
            self.used += 1 + full
        if not final and self.max_lines is not None and len(self.lines) >= self.max_lines:
            self.stopped = "lines"

    def feed(self, block: bytes) -> None:
        """Take the next block of the file."""
        pos = 0
        if self.line < self.start_line:
            need = self.start_line - self.line
            ahead = block.count(b"\n")
            if ahead < need:
                self.line += ahead  # the whole block belongs to skipped lines
                return
            for _ in range(need):
                pos = block.index(b"\n", pos) + 1
            self.line = self.start_line
        if self.max_lines == 0:
            self._finish_line(final=False)
        while self.stopped is None:
            newline = block.find(b"\n", pos)
            self._collect(block[pos : len(block) if newline < 0 else newline])
            if newline < 0:
                return
            self._finish_line(final=False)
            pos = newline + 1

    def end(self) -> None:
        """The file ended: the last piece (maybe empty) is a line too."""
        if self.stopped is None and self.line >= self.start_line:
            self._finish_line(final=True)

    @classmethod
    def checked(
        cls, path: str, start_line: int, max_lines: int | None, max_bytes: int | None
    ) -> LineSelection:
        """A selection for ``scan_lines`` arguments, refusing negative ones (``invalid``)."""
        for name, value in (("start_line", start_line), ("max_lines", max_lines)):
            if value is not None and value < 0:
                raise FileError("invalid", f"{name} must be at least 0, got {value}", path)
        if max_bytes is not None and max_bytes < 0:
            raise FileError("invalid", f"max_bytes must be at least 0, got {max_bytes}", path)
        return cls(start_line, max_lines, max_bytes)

    def result(self, newlines: int) -> LineScan:
        """End the selection at the end of a file holding ``newlines`` newlines."""
        self.end()
        return LineScan(
            lines=self.lines,
            start_line=self.start_line,
            total_lines=newlines + 1,
            stopped=self.stopped or "end",
            first_line_bytes=self.first_line_bytes,
        )


def scan_bytes(
    data: bytes,
    *,
    start_line: int = 0,
    max_lines: int | None = None,
    max_bytes: int | None = None,
    path: str = "",
) -> LineScan:
    """Select lines of ``data``, a whole file's bytes, as ``BinaryReader.scan_lines`` does.

    For a file already read whole (a small one): the same selection, with no
    further call of the environment.

    Args:
        data: Every byte of the file.
        start_line: Index (0-based) of the first line to select.
        max_lines: Most lines to select (None: no limit).
        max_bytes: Most selected bytes, newlines between lines included.
        path: The file's path, for the error of a negative argument.

    Returns:
        The selection and the file's line count.

    Raises:
        FileError: ``invalid`` for a negative argument.
    """
    selection = LineSelection.checked(path, start_line, max_lines, max_bytes)
    if data:
        selection.feed(data)
    return selection.result(data.count(b"\n"))


def scan_lines(
    fd: int,
    path: str,
    start_line: int,
    max_lines: int | None,
    max_bytes: int | None,
    should_abort: AbortCheck,
) -> LineScan:
    """Select lines of the open file ``fd`` and count all of them (see ``LineScan``)."""
    selection = LineSelection.checked(path, start_line, max_lines, max_bytes)
    newlines = 0
    offset = 0
    try:
        while True:
            if should_abort():
                raise aborted(path)
            block = os.pread(fd, READ_BLOCK, offset)
            if not block:
                break
            offset += len(block)
            newlines += block.count(b"\n")
            if selection.stopped is None:
                selection.feed(block)
    except OSError as error:
        raise file_error_from_os(error, path, "read") from None
    return selection.result(newlines)


class _ClosedOnExit:
    """``async with`` support for handles with an async ``close``."""

    async def close(self) -> None:
        """Release the handle. Idempotent."""
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


class LocalBinaryReader(_ClosedOnExit):
    """A ``BinaryReader`` over one open local file descriptor."""

    def __init__(self, fd: int, path: str) -> None:
        self._fd: int | None = fd
        self._path = path

    @property
    def path(self) -> str:
        """The absolute path that was opened."""
        return self._path

    def _open_fd(self) -> int:
        if self._fd is None:
            raise FileError("invalid", f"The reader of {self._path} is closed", self._path)
        return self._fd

    async def read(self, offset: int, size: int) -> bytes:
        """Read up to ``size`` bytes at ``offset``; fewer (or none) at the end of the file.

        Raises:
            FileError: ``invalid`` for a negative offset or size or a closed reader.
        """
        fd = self._open_fd()
        if offset < 0 or size < 0:
            raise FileError(
                "invalid", f"offset and size must be at least 0, got {offset}, {size}", self._path
            )
        try:
            return await asyncio.to_thread(os.pread, fd, size, offset)
        except OSError as error:
            raise file_error_from_os(error, self._path, "read") from None

    async def info(self) -> FileInfo:
        """The opened file's kind, size and mtime, now."""
        fd = self._open_fd()
        try:
            return info_of(await asyncio.to_thread(os.fstat, fd))
        except OSError as error:
            raise file_error_from_os(error, self._path, "stat") from None

    async def scan_lines(
        self,
        *,
        start_line: int = 0,
        max_lines: int | None = None,
        max_bytes: int | None = None,
        abort: asyncio.Event | None = None,
    ) -> LineScan:
        """Select lines from ``start_line`` and count all lines, decoding nothing.

        Args:
            start_line: Index (0-based) of the first line to select.
            max_lines: Most lines to select (None: no limit).
            max_bytes: Most selected bytes, newlines between lines included.
            abort: Stops the scan between blocks with ``FileError("aborted")``.

        Returns:
            The selection and the file's line count.
        """
        fd = self._open_fd()
        if abort is not None and abort.is_set():
            raise aborted(self._path)
        check = _never if abort is None else abort.is_set
        return await asyncio.to_thread(
            scan_lines, fd, self._path, start_line, max_lines, max_bytes, check
        )

    async def close(self) -> None:
        """Release the descriptor. Idempotent."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:
        if self._fd is not None:
            os.close(self._fd)


class LocalDirReader(_ClosedOnExit):
    """A ``DirReader`` over one ``os.scandir`` iterator."""

    def __init__(self, path: str, page_size: int) -> None:
        if page_size < 1:
            raise FileError("invalid", f"page_size must be at least 1, got {page_size}", path)
        self._path = path
        self._page_size = page_size
        self._items: os._ScandirIterator[str] | None = None

    def open(self) -> None:
        """Open the directory (blocking; call it in a worker thread)."""
        try:
            self._items = os.scandir(self._path)
        except OSError as error:
            raise file_error_from_os(error, self._path, "list") from None

    def _page(self) -> list[DirEntry]:
        items = self._items
        if items is None:
            return []
        page: list[DirEntry] = []
        try:
            for item in items:
                page.append(entry_of(item))
                if len(page) >= self._page_size:
                    break
        except OSError as error:
            raise file_error_from_os(error, self._path, "list") from None
        return page

    async def read_page(self) -> list[DirEntry]:
        """The next page of entries; an empty list once every entry was returned."""
        page = await asyncio.to_thread(self._page)
        if not page:
            await self.close()
        return page

    async def close(self) -> None:
        """Release the directory handle. Idempotent."""
        items, self._items = self._items, None
        if items is not None:
            items.close()
