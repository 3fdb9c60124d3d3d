"""The file operations of ``SshEnv`` over one SFTP session (R119, issue 17).

``SftpFiles`` does each R119 operation on an absolute remote path with SFTP
requests, the way ``_files`` does it with ``os`` calls, and raises the same
``FileError`` codes (``_sftp_errors`` makes OpenSSH's coarse version 3 status
codes precise). What SFTP changes:

- Reads first ``stat`` the path and refuse anything but a regular file before
  opening it: OpenSSH's server opens without ``O_NONBLOCK``, so opening a FIFO
  would block the whole SFTP session. A FIFO swapped in between the ``stat``
  and the ``open`` still could; nothing in SFTP closes that window.
- ``write_file`` writes a temp file beside the target (``O_EXCL``), fsyncs it
  (``fsync@openssh.com``), then renames it over the target with
  ``posix-rename@openssh.com`` (atomic, replacing). A reader never sees a half
  written file and a crash leaves the old or the new content. SFTP cannot fsync
  a directory, so the rename itself is durable only once the remote file system
  commits it (a few seconds on ext4), not when ``write_file`` returns.
- Modification times have one-second resolution (protocol version 3).
- Path checks happen per request on the server, in the server's own path
  resolution: a symlink swapped into a path by a remote process between two
  requests is followed. ``SshEnv`` adds no workspace confinement of its own.
"""

from __future__ import annotations

import contextlib
import posixpath
import secrets
import stat
from collections.abc import Awaitable, Callable

import asyncssh

from pi_durable_tui.env._errors import FileError, aborted
from pi_durable_tui.env._files import READ_BLOCK
from pi_durable_tui.env._types import DirEntry, FileInfo, FileKind
from pi_durable_tui.env.ssh._sftp_errors import classify, explain_missing, file_error

AbortCheck = Callable[[], bool]


def kind_of(attrs: asyncssh.SFTPAttrs) -> FileKind:
    """The ``FileKind`` of SFTP attributes (the type comes from the permission bits)."""
    mode = attrs.permissions or 0
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


def info_of(attrs: asyncssh.SFTPAttrs) -> FileInfo:
    """A ``FileInfo`` from SFTP attributes."""
    if attrs.mtime_ns is not None:
        mtime_ms = attrs.mtime_ns / 1e6
    else:
        mtime_ms = float(attrs.mtime or 0) * 1000
    return FileInfo(kind_of(attrs), attrs.size or 0, mtime_ms)


class SftpFiles:
    """R119's file operations on one SFTP client; every path is absolute and normalized.

    Args:
        sftp: The session's SFTP client.
        temp_dir: The remote directory temp files and directories go to.
    """

    def __init__(self, sftp: asyncssh.SFTPClient, temp_dir: str) -> None:
        self.sftp = sftp
        self.temp_dir = temp_dir

    async def fail(self, error: asyncssh.SFTPError, path: str, action: str) -> FileError:
        """The ``FileError`` of a failed request on ``path`` (``_sftp_errors.classify``)."""
        return await classify(self.sftp, error, path, action)

    # -- facts -------------------------------------------------------------------

    async def lstat(self, path: str, action: str = "stat") -> asyncssh.SFTPAttrs:
        """The attributes of ``path`` itself (a final symlink is not followed)."""
        try:
            return await self.sftp.lstat(path)
        except asyncssh.SFTPError as error:
            raise await self.fail(error, path, action) from None

    async def stat(self, path: str, action: str = "stat") -> asyncssh.SFTPAttrs:
        """The attributes of what ``path`` names, symlinks followed."""
        try:
            return await self.sftp.stat(path)
        except asyncssh.SFTPError as error:
            raise await self.fail(error, path, action) from None

    async def file_info(self, path: str) -> FileInfo:
        """Describe ``path`` without following a final symlink."""
        return info_of(await self.lstat(path))

    async def exists(self, path: str) -> bool:
        """Whether ``lstat`` finds ``path``; a missing parent or a file as parent is False."""
        try:
            await self.sftp.lstat(path)
        except asyncssh.SFTPNoSuchFile:
            return False
        except asyncssh.SFTPError as error:
            raise await self.fail(error, path, "stat") from None
        return True

    async def canonical_path(self, path: str) -> str:
        """The real path of an existing ``path`` (OpenSSH resolves a missing last name too)."""
        try:
            real = await self.sftp.realpath(path)
        except asyncssh.SFTPError as error:
            raise await self.fail(error, path, "resolve") from None
        try:
            await self.sftp.lstat(real)
        except asyncssh.SFTPError as error:
            raise await self.fail(error, path, "resolve") from None
        return real

    async def list_dir(self, path: str) -> list[DirEntry]:
        """Every entry of the directory ``path``, sorted by name."""
        entries: list[DirEntry] = []
        try:
            async for name in self.sftp.scandir(path):
                entry = entry_of(name)
                if entry is not None:
                    entries.append(entry)
        except asyncssh.SFTPError as error:
            raise await self._directory_error(error, path) from None
        entries.sort(key=lambda entry: entry.name)
        return entries

    async def _directory_error(self, error: asyncssh.SFTPError, path: str) -> FileError:
        if error.code == asyncssh.FX_NO_SUCH_FILE:
            try:
                attrs = await self.sftp.stat(path)
            except asyncssh.SFTPError:
                return file_error(await explain_missing(self.sftp, path), path, "list")
            if not stat.S_ISDIR(attrs.permissions or 0):
                return file_error("not_directory", path, "list")
        return await self.fail(error, path, "list")

    async def check_directory(self, path: str) -> None:
        """Raise ``not_found`` or ``not_directory`` unless ``path`` is a directory."""
        attrs = await self.stat(path, "list")
        if not stat.S_ISDIR(attrs.permissions or 0):
            raise file_error("not_directory", path, "list")

    # -- reading -----------------------------------------------------------------

    async def open_for_reading(
        self, path: str, *, no_follow: bool = False
    ) -> asyncssh.SFTPClientFile:
        """Open a regular file for reading; refuse directories, FIFOs, devices (and links)."""
        attrs = await (self.lstat(path, "open") if no_follow else self.stat(path, "open"))
        mode = attrs.permissions or 0
        if stat.S_ISLNK(mode):
            raise FileError("invalid", f"Could not open {path}: it is a symbolic link", path)
        if stat.S_ISDIR(mode):
            raise FileError("is_directory", f"Could not read {path}: Is a directory", path)
        if not stat.S_ISREG(mode):
            raise FileError("not_supported", f"Could not read {path}: not a regular file", path)
        try:
            return await self.sftp.open(path, "rb")
        except asyncssh.SFTPError as error:
            raise await self.fail(error, path, "open") from None

    async def read_bytes(self, path: str, max_bytes: int | None, should_abort: AbortCheck) -> bytes:
        """Read a file whole, or its first ``max_bytes`` bytes, checking abort per block."""
        if max_bytes is not None and max_bytes < 0:
            raise FileError("invalid", f"max_bytes must be at least 0, got {max_bytes}", path)
        handle = await self.open_for_reading(path)
        parts: list[bytes] = []
        offset = 0
        try:
            while max_bytes is None or offset < max_bytes:
                if should_abort():
                    raise aborted(path)
                size = READ_BLOCK if max_bytes is None else min(READ_BLOCK, max_bytes - offset)
                part = await read_block(handle, size, offset)
                if not part:
                    break
                parts.append(part)
                offset += len(part)
        except asyncssh.SFTPError as error:
            raise await self.fail(error, path, "read") from None
        finally:
            await _close(handle)
        return b"".join(parts)

    async def read_head_lines(self, path: str, max_lines: int, should_abort: AbortCheck) -> bytes:
        """The bytes of the first ``max_lines`` lines, newlines included, reading no further."""
        if max_lines < 0:
            raise FileError("invalid", f"max_lines must be at least 0, got {max_lines}", path)
        handle = await self.open_for_reading(path)
        parts: list[bytes] = []
        found = offset = 0
        try:
            while found < max_lines:
                if should_abort():
                    raise aborted(path)
                part = await read_block(handle, READ_BLOCK, offset)
                if not part:
                    break
                offset += len(part)
                newlines = part.count(b"\n")
                if found + newlines >= max_lines:
                    cut = -1
                    for _ in range(max_lines - found):
                        cut = part.index(b"\n", cut + 1)
                    parts.append(part[: cut + 1])
                    break
                found += newlines
                parts.append(part)
        except asyncssh.SFTPError as error:
            raise await self.fail(error, path, "read") from None
        finally:
            await _close(handle)
        return b"".join(parts)

    # -- writing -----------------------------------------------------------------

    async def _existing(self, path: str) -> tuple[str, asyncssh.SFTPAttrs | None]:
        """Where a write of ``path`` goes (a symlink's target) and what is there now."""
        try:
            attrs = await self.sftp.lstat(path)
        except asyncssh.SFTPNoSuchFile:
            return path, None
        except asyncssh.SFTPError as error:
            raise await self.fail(error, path, "write") from None
        if not stat.S_ISLNK(attrs.permissions or 0):
            return path, attrs
        target = await self.sftp.realpath(path)
        try:
            return target, await self.sftp.stat(target)
        except asyncssh.SFTPNoSuchFile:
            return target, None  # a dangling link: its target is created
        except asyncssh.SFTPError as error:
            raise await self.fail(error, path, "write") from None

    async def make_dirs(self, path: str) -> None:
        """Create ``path`` and its missing parents; a file in the way is ``not_directory``."""
        try:
            attrs = await self.sftp.stat(path)
        except asyncssh.SFTPNoSuchFile:
            attrs = None
        except asyncssh.SFTPError as error:
            raise await self.fail(error, path, "create directory") from None
        if attrs is not None:
            if not stat.S_ISDIR(attrs.permissions or 0):
                raise FileError(
                    "not_directory", f"Could not create {path}: a file is in the way", path
                )
            return
        parent = posixpath.dirname(path)
        if parent != path:
            await self.make_dirs(parent)
        try:
            await self.sftp.mkdir(path)
        except asyncssh.SFTPError as error:
            with contextlib.suppress(asyncssh.SFTPError):
                if stat.S_ISDIR((await self.sftp.stat(path)).permissions or 0):
                    return  # made meanwhile by someone else
            raise await self.fail(error, path, "create directory") from None

    async def write_file(self, path: str, data: bytes, should_abort: AbortCheck) -> None:
        """Replace (or create) ``path`` atomically with ``data``, creating parents."""
        target, existing = await self._existing(path)
        if existing is not None and stat.S_ISDIR(existing.permissions or 0):
            raise FileError("is_directory", f"Could not write {path}: Is a directory", path)
        directory, name = posixpath.split(target)
        if existing is None:
            await self.make_dirs(directory)
        await self.replace(path, directory, name, existing, data, should_abort)

    async def replace(
        self,
        path: str,
        directory: str,
        name: str,
        existing: asyncssh.SFTPAttrs | None,
        data: bytes,
        should_abort: AbortCheck,
        check_temp: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        """Write ``data`` to a temp file in ``directory`` and rename it over ``name``.

        Args:
            path: The path the caller asked for (named by errors).
            directory: The existing directory the file is in.
            name: The file's name in it.
            existing: What is there now (its mode is kept), or None.
            data: The new content.
            should_abort: Checked before the rename.
            check_temp: Awaited with the temp file's path once it exists; raising
                removes it and stops the write (``_sftp_beneath`` checks where it is).
        """
        mode = 0o666 if existing is None else stat.S_IMODE(existing.permissions or 0o644)
        temp = posixpath.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
        try:
            handle = await self.sftp.open(temp, "xb", asyncssh.SFTPAttrs(permissions=mode))
        except asyncssh.SFTPError as error:
            raise await self.fail(error, path, "write") from None
        try:
            try:
                if check_temp is not None:
                    await check_temp(temp)
                if existing is not None:
                    # REMINDER: the server's umask narrowed the new mode; restore the old one.
                    await handle.chmod(mode)
                if data:
                    await handle.write(data, 0)
                with contextlib.suppress(asyncssh.SFTPOpUnsupported):
                    await handle.fsync()
            finally:
                await _close(handle)
            if should_abort():
                raise aborted(path)
            await self.sftp.posix_rename(temp, posixpath.join(directory, name))
        except BaseException as error:
            with contextlib.suppress(asyncssh.SFTPError, *_GONE):
                await self.sftp.remove(temp)
            if isinstance(error, asyncssh.SFTPError):
                raise await self.fail(error, path, "write") from None
            raise

    async def append_file(self, path: str, data: bytes) -> None:
        """Append ``data`` to ``path``, creating it and its parents when missing."""
        await self.make_dirs(posixpath.dirname(path))
        try:
            handle = await self.sftp.open(path, "ab")
            try:
                if data:
                    await handle.write(data)
            finally:
                await _close(handle)
        except asyncssh.SFTPError as error:
            raise await self.fail(error, path, "append to") from None

    async def truncate_file(self, path: str, size: int) -> None:
        """Set an existing file's length to ``size`` (zeros when it grows)."""
        if size < 0:
            raise FileError("invalid", f"Could not truncate {path}: size {size} is negative", path)
        try:
            await self.sftp.truncate(path, size)
        except asyncssh.SFTPError as error:
            raise await self.fail(error, path, "truncate") from None

    async def flush_file(self, path: str) -> None:
        """Fsync an existing regular file (``fsync@openssh.com``)."""
        handle = await self.open_for_reading(path)
        try:
            await handle.fsync()
        except asyncssh.SFTPOpUnsupported:
            pass  # the server cannot: the remote kernel writes it back in its own time
        except asyncssh.SFTPError as error:
            raise await self.fail(error, path, "flush") from None
        finally:
            await _close(handle)

    async def rename_file(self, source: str, target: str) -> None:
        """Move ``source`` over ``target`` atomically; a failure names the source (R119)."""
        try:
            await self.sftp.posix_rename(source, target)
        except asyncssh.SFTPError as error:
            failed = await self.fail(error, source, "rename")
            reason = failed.message.rsplit(": ", 1)[-1]
            raise FileError(
                failed.code, f"Could not rename {source} to {target}: {reason}", source
            ) from None

    async def create_dir(self, path: str, recursive: bool) -> None:
        """Create a directory (and its parents with ``recursive``)."""
        if recursive:
            await self.make_dirs(path)
            return
        try:
            await self.sftp.mkdir(path)
        except asyncssh.SFTPError as error:
            if error.code == asyncssh.FX_FAILURE and await self.exists(path):
                raise FileError(
                    "already_exists", f"Could not create directory {path}: it already exists", path
                ) from None
            raise await self.fail(error, path, "create directory") from None

    async def remove(self, path: str, recursive: bool, force: bool) -> None:
        """Remove a file, symlink or directory; a link is removed, never its target."""
        try:
            attrs = await self.sftp.lstat(path)
        except asyncssh.SFTPNoSuchFile:
            if force:
                return
            raise FileError("not_found", f"Could not remove {path}: No such file", path) from None
        except asyncssh.SFTPError as error:
            raise await self.fail(error, path, "remove") from None
        try:
            if not stat.S_ISDIR(attrs.permissions or 0):
                await self.sftp.remove(path)
            elif recursive:
                await self._remove_tree(path)
            else:
                await self.sftp.rmdir(path)
        except asyncssh.SFTPError as error:
            if error.code == asyncssh.FX_FAILURE and stat.S_ISDIR(attrs.permissions or 0):
                raise FileError(
                    "not_empty", f"Could not remove {path}: Directory not empty", path
                ) from None
            raise await self.fail(error, path, "remove") from None

    async def _remove_tree(self, path: str) -> None:
        # Entries carry lstat attributes: a symlink to a directory is unlinked, not entered.
        async for name in self.sftp.scandir(path):
            entry = entry_of(name)
            if entry is None:
                continue
            child = posixpath.join(path, entry.name)
            if entry.kind == "directory":
                await self._remove_tree(child)
            else:
                await self.sftp.remove(child)
        await self.sftp.rmdir(path)

    async def create_temp_dir(self, prefix: str) -> str:
        """A new directory (mode 0700) in the remote temp directory."""
        for _ in range(100):
            path = posixpath.join(self.temp_dir, prefix + secrets.token_hex(5))
            try:
                await self.sftp.mkdir(path, asyncssh.SFTPAttrs(permissions=0o700))
            except asyncssh.SFTPFailure:
                if await self.exists(path):
                    continue
                raise file_error("unknown", self.temp_dir, "create a directory in") from None
            except asyncssh.SFTPError as error:
                raise await self.fail(error, self.temp_dir, "create a directory in") from None
            return path
        raise file_error("already_exists", self.temp_dir, "create a directory in")

    async def create_temp_file(self, prefix: str, suffix: str) -> str:
        """A new empty file (mode 0600) in the remote temp directory."""
        return await _close_opened(await self.open_temp_file(prefix, suffix))

    async def open_temp_file(self, prefix: str, suffix: str) -> tuple[str, asyncssh.SFTPClientFile]:
        """Create a new file (mode 0600) in the remote temp directory and keep it open."""
        for _ in range(100):
            path = posixpath.join(self.temp_dir, prefix + secrets.token_hex(5) + suffix)
            try:
                handle = await self.sftp.open(path, "xb", asyncssh.SFTPAttrs(permissions=0o600))
            except asyncssh.SFTPFailure:
                if await self.exists(path):
                    continue
                raise file_error("unknown", self.temp_dir, "create a file in") from None
            except asyncssh.SFTPError as error:
                raise await self.fail(error, self.temp_dir, "create a file in") from None
            return path, handle
        raise file_error("already_exists", self.temp_dir, "create a file in")


_GONE = (asyncssh.Error, OSError)


def entry_of(name: asyncssh.SFTPName) -> DirEntry | None:
    """A ``DirEntry`` from a listing entry (``.`` and ``..`` give None)."""
    filename = name.filename if isinstance(name.filename, str) else name.filename.decode()
    if filename in (".", ".."):
        return None
    return DirEntry(filename, kind_of(name.attrs))


async def read_block(handle: asyncssh.SFTPClientFile, size: int, offset: int) -> bytes:
    """Up to ``size`` bytes at ``offset`` of a file opened in binary mode."""
    data: str | bytes = await handle.read(size, offset)
    if isinstance(data, str):  # asyncssh's stubs say str; files are opened in binary mode
        return data.encode("utf-8", "surrogateescape")
    return data


async def _close(handle: asyncssh.SFTPClientFile) -> None:
    with contextlib.suppress(*_GONE):
        await handle.close()


async def _close_opened(opened: tuple[str, asyncssh.SFTPClientFile]) -> str:
    path, handle = opened
    await _close(handle)
    return path
