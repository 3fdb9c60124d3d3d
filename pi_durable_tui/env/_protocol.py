"""The environment protocol: what tools and the harness may do to files and processes.

``ExecutionEnv`` (R119, R120) is a ``typing.Protocol``, so an environment is
anything with these members: ``LocalEnv`` for this machine, and later perhaps a
container or a remote host. Every operation is async, raises ``FileError`` on
failure, resolves paths as ``absolute_path`` says, and takes an optional
``abort`` event: an event that is already set makes the operation raise
``FileError("aborted")`` before it has any effect. ``BinaryReader`` and
``DirReader`` are what ``open_binary_reader`` and ``open_dir_reader`` return.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Literal, Protocol, Self

from pi_durable_tui.env._types import (
    DirEntry,
    ExecResult,
    FileInfo,
    LineScan,
    OutputCallback,
    OutputWindow,
    SpillPolicy,
)

TextErrors = Literal["strict", "replace"]
"""How text reads treat bytes that are not UTF-8: fail with ``invalid``, or U+FFFD."""


class Closeable(Protocol):
    """A handle to close when done, directly or with ``async with``."""

    async def close(self) -> None:
        """Release the handle; later use raises ``FileError("invalid")``. Idempotent."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None: ...


class BinaryReader(Closeable, Protocol):
    """Positional reads of one opened file; close it (or use ``async with``)."""

    @property
    def path(self) -> str:
        """The absolute path that was opened."""
        ...

    async def read(self, offset: int, size: int) -> bytes:
        """Read up to ``size`` bytes at ``offset``; fewer (or none) at the end of the file."""
        ...

    async def info(self) -> FileInfo:
        """The opened file's kind, size and mtime, now (a change since opening shows here)."""
        ...

    async def scan_lines(
        self,
        *,
        start_line: int = 0,
        max_lines: int | None = None,
        max_bytes: int | None = None,
        abort: asyncio.Event | None = None,
    ) -> LineScan:
        """Select lines from ``start_line`` and count all lines, decoding nothing.

        The scan reads the file in large blocks and keeps only the selected bytes,
        so a tool can show the head of a huge file cheaply. ``LineScan`` says how
        lines are split and where the selection stops.
        """
        ...


class DirReader(Closeable, Protocol):
    """Pages of one directory's entries, in no particular order."""

    async def read_page(self) -> list[DirEntry]:
        """The next page of entries; an empty list once every entry was returned."""
        ...


class ExecutionEnv(Protocol):
    """Files and processes as a tool sees them (R119, R120).

    Paths: ``~`` and ``~/...`` resolve against the home directory, ``file://``
    URLs to their path, relative paths against ``cwd``; results are absolute and
    normalized. Failures raise ``FileError``; ``abort`` events already set raise
    ``FileError("aborted")`` without side effects.
    """

    @property
    def cwd(self) -> str:
        """The absolute working directory relative paths resolve against."""
        ...

    @property
    def id(self) -> str:
        """A stable identity: equal ids mean the same files (keys R121's queue)."""
        ...

    def absolute_path(self, path: str) -> str:
        """Resolve ``path`` lexically (no symlinks), as every operation does."""
        ...

    def join_path(self, *parts: str) -> str:
        """Join path parts and normalize the result (nothing is resolved)."""
        ...

    async def canonical_path(self, path: str, *, abort: asyncio.Event | None = None) -> str:
        """The real path of an existing file, every symlink resolved."""
        ...

    async def file_info(self, path: str, *, abort: asyncio.Event | None = None) -> FileInfo:
        """Kind, size and mtime of ``path``; a final symlink is described, not followed."""
        ...

    async def exists(self, path: str, *, abort: asyncio.Event | None = None) -> bool:
        """Whether ``file_info`` would succeed (a dangling symlink exists)."""
        ...

    async def list_dir(self, path: str, *, abort: asyncio.Event | None = None) -> list[DirEntry]:
        """Every entry of a directory, sorted by name."""
        ...

    async def open_dir_reader(
        self, path: str, *, page_size: int = 256, abort: asyncio.Event | None = None
    ) -> DirReader:
        """Open a directory for paged reading, for directories too large to list at once."""
        ...

    async def read_text_file(
        self, path: str, *, errors: TextErrors = "strict", abort: asyncio.Event | None = None
    ) -> str:
        """A whole file decoded as UTF-8."""
        ...

    async def read_text_lines(
        self,
        path: str,
        *,
        max_lines: int,
        errors: TextErrors = "strict",
        abort: asyncio.Event | None = None,
    ) -> list[str]:
        """The first ``max_lines`` lines, without newlines, reading no further.

        Lines are conventional: a final newline ends the last line and does not
        start an empty one (unlike ``BinaryReader.scan_lines``).
        """
        ...

    async def read_binary_file(
        self, path: str, *, max_bytes: int | None = None, abort: asyncio.Event | None = None
    ) -> bytes:
        """A whole file's bytes, or only its first ``max_bytes`` (for sniffing a type)."""
        ...

    async def open_binary_reader(
        self, path: str, *, no_follow: bool = False, abort: asyncio.Event | None = None
    ) -> BinaryReader:
        """Open a file for positional reads; ``no_follow`` refuses a final symlink."""
        ...

    async def write_file(
        self,
        path: str,
        content: str | bytes,
        *,
        beneath: str | None = None,
        abort: asyncio.Event | None = None,
    ) -> None:
        """Create or replace a file atomically, creating parents, keeping an old mode.

        ``beneath`` (a directory, normally ``cwd``) confines the write: the path is
        resolved and used in one operation that follows no symlink out of that
        directory (DESIGN.md section 7), and a path, a dangling link, a link to a
        file or directory outside, or a link swapped in during the write ends in
        ``FileError("permission_denied")`` naming the path, with no temp file left.
        Links inside it that point inside it are followed as usual.
        """
        ...

    async def append_file(
        self, path: str, content: str | bytes, *, abort: asyncio.Event | None = None
    ) -> None:
        """Append to a file, creating it and its parents when missing."""
        ...

    async def truncate_file(
        self, path: str, size: int, *, abort: asyncio.Event | None = None
    ) -> None:
        """Cut or extend (with zeros) an existing file to ``size`` bytes; never creates."""
        ...

    async def flush_file(self, path: str, *, abort: asyncio.Event | None = None) -> None:
        """Make an existing file's content durable (fsync)."""
        ...

    async def rename_file(
        self, source: str, target: str, *, abort: asyncio.Event | None = None
    ) -> None:
        """Move ``source`` to ``target``, atomically replacing a file there."""
        ...

    async def create_dir(
        self, path: str, *, recursive: bool = False, abort: asyncio.Event | None = None
    ) -> None:
        """Create a directory; ``recursive`` creates parents and accepts an existing one."""
        ...

    async def remove(
        self,
        path: str,
        *,
        recursive: bool = False,
        force: bool = False,
        abort: asyncio.Event | None = None,
    ) -> None:
        """Remove a file, link or directory; ``force`` accepts a missing path."""
        ...

    async def create_temp_dir(
        self, prefix: str = "pi-", *, abort: asyncio.Event | None = None
    ) -> str:
        """Create a fresh temporary directory whose name starts with ``prefix``."""
        ...

    async def create_temp_file(
        self,
        *,
        prefix: str = "pi-",
        suffix: str = "",
        abort: asyncio.Event | None = None,
    ) -> str:
        """Create a fresh empty temporary file named ``<prefix>...<suffix>``."""
        ...

    async def exec(
        self,
        command: str | Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = True,
        timeout: float | None = None,
        on_output: OutputCallback | None = None,
        spill: SpillPolicy | None = None,
        window: OutputWindow | None = None,
        abort: asyncio.Event | None = None,
        end_background: bool = False,
    ) -> ExecResult:
        """Run a command (a string through the shell, a sequence as argv) and wait for it.

        Raises ``FileError`` with code ``timeout`` or ``aborted`` after killing the
        command's whole process group (also when the awaiting coroutine is
        cancelled, which then propagates), and ``shell_unavailable`` when a string
        command finds no shell.

        Without ``end_background`` a process the command put in the background
        runs on until ``cleanup()`` (R120). With it, the call returns (or raises)
        only after every process the command started is ended: its group, and
        those that left it (``setsid``, ``nohup``, daemons), found by the
        ``PIDURABLE_RUN`` mark every command carries in its environment (issue 13).
        """
        ...

    async def cleanup(self) -> None:
        """End every process this environment started that still runs; delete spill files.

        The spill files are those its commands wrote (issue 13): a result naming
        one stays readable until then.
        """
        ...
