"""Blocking file operations on absolute paths, run by ``LocalEnv`` in a worker thread.

Each function does one R119 operation with plain ``os`` calls and turns
``OSError`` into ``FileError``. They take resolved absolute paths; resolution
and the first abort check happen on the event loop before the hop.

``write_file`` replaces a file atomically: the content goes to a temp file in
the same directory (created with mode ``0o666`` so the umask applies, or with
the existing file's mode), is fsynced, and is renamed over the target; the
directory is then fsynced so the rename survives a crash. A target that is a
symlink is written through: the file it points to is replaced and the link
stays. The owner of a replaced file becomes the writer, and hard links to the
old file keep the old content (the price of never exposing a half-written file).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Callable

from pi_durable_tui.env._errors import FileError, aborted, file_error_from_os
from pi_durable_tui.env._types import DirEntry, FileInfo, FileKind

AbortCheck = Callable[[], bool]
"""Returns True once the operation's abort signal is set (safe to call from a thread)."""

READ_BLOCK = 1 << 20
"""Bytes per read when a file is read in pieces."""


def kind_of(mode: int) -> FileKind:
    """The ``FileKind`` of an ``st_mode``."""
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


def info_of(result: os.stat_result) -> FileInfo:
    """A ``FileInfo`` from a stat result."""
    return FileInfo(kind_of(result.st_mode), result.st_size, result.st_mtime_ns / 1e6)


def file_info(path: str) -> FileInfo:
    """Describe ``path`` without following a final symlink."""
    try:
        return info_of(os.lstat(path))
    except OSError as error:
        raise file_error_from_os(error, path, "stat") from None


def exists(path: str) -> bool:
    """Whether ``lstat`` finds ``path``; a missing parent or a file as parent is False."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as error:
        raise file_error_from_os(error, path, "stat") from None
    return True


def canonical_path(path: str) -> str:
    """The real path of an existing ``path``."""
    try:
        return os.path.realpath(path, strict=True)
    except OSError as error:
        raise file_error_from_os(error, path, "resolve") from None


def entry_of(item: os.DirEntry[str]) -> DirEntry:
    """A ``DirEntry`` from ``os.scandir`` (its type comes with the listing, not a stat)."""
    if item.is_symlink():
        kind: FileKind = "symlink"
    elif item.is_dir(follow_symlinks=False):
        kind = "directory"
    elif item.is_file(follow_symlinks=False):
        kind = "file"
    else:
        kind = "other"
    return DirEntry(item.name, kind)


def list_dir(path: str) -> list[DirEntry]:
    """Every entry of the directory ``path``, sorted by name."""
    try:
        with os.scandir(path) as items:
            entries = [entry_of(item) for item in items]
    except OSError as error:
        raise file_error_from_os(error, path, "list") from None
    entries.sort(key=lambda entry: entry.name)
    return entries


def open_for_reading(path: str, *, no_follow: bool = False) -> int:
    """Open a regular file for reading and return its descriptor.

    ``O_NONBLOCK`` keeps a FIFO from blocking the open; anything but a regular file
    is then refused, since reading a FIFO or ``/dev/zero`` may never end.
    """
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | (os.O_NOFOLLOW if no_follow else 0)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if no_follow and error.errno == errno.ELOOP:
            raise FileError(
                "invalid", f"Could not open {path}: it is a symbolic link", path
            ) from None
        raise file_error_from_os(error, path, "open") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise FileError("is_directory", f"Could not read {path}: Is a directory", path)
        raise FileError("not_supported", f"Could not read {path}: not a regular file", path)
    os.set_blocking(fd, True)
    return fd


def read_bytes(path: str, max_bytes: int | None, should_abort: AbortCheck) -> bytes:
    """Read a file whole, or its first ``max_bytes`` bytes."""
    if max_bytes is not None and max_bytes < 0:
        raise FileError("invalid", f"max_bytes must be at least 0, got {max_bytes}", path)
    fd = open_for_reading(path)
    try:
        if max_bytes is None:
            with os.fdopen(fd, "rb", closefd=False) as stream:
                return stream.read()
        parts: list[bytes] = []
        left = max_bytes
        while left > 0:
            if should_abort():
                raise aborted(path)
            part = os.read(fd, min(left, READ_BLOCK))
            if not part:
                break
            parts.append(part)
            left -= len(part)
        return b"".join(parts)
    except OSError as error:
        raise file_error_from_os(error, path, "read") from None
    finally:
        os.close(fd)


def read_head_lines(path: str, max_lines: int, should_abort: AbortCheck) -> bytes:
    """The bytes of the first ``max_lines`` lines, newlines included, reading no further."""
    if max_lines < 0:
        raise FileError("invalid", f"max_lines must be at least 0, got {max_lines}", path)
    fd = open_for_reading(path)
    parts: list[bytes] = []
    found = 0
    try:
        while found < max_lines:
            if should_abort():
                raise aborted(path)
            part = os.read(fd, READ_BLOCK)
            if not part:
                break
            newlines = part.count(b"\n")
            if found + newlines >= max_lines:
                cut = -1
                for _ in range(max_lines - found):
                    cut = part.index(b"\n", cut + 1)
                parts.append(part[: cut + 1])
                break
            found += newlines
            parts.append(part)
    except OSError as error:
        raise file_error_from_os(error, path, "read") from None
    finally:
        os.close(fd)
    return b"".join(parts)


def decode(data: bytes, path: str, errors: str) -> str:
    """Decode UTF-8, failing with ``invalid`` (naming the byte offset) when strict."""
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError as error:
        raise FileError(
            "invalid",
            f"Could not read {path} as text: invalid UTF-8 at byte {error.start}",
            path,
        ) from None


def _make_parents(path: str) -> None:
    parent = os.path.dirname(path)
    try:
        os.makedirs(parent, exist_ok=True)
    except FileExistsError:
        raise FileError(
            "not_directory", f"Could not create {parent}: a file is in the way", parent
        ) from None
    except OSError as error:
        raise file_error_from_os(error, parent, "create directory") from None


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (``os.write`` may write less at once)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _fsync_directory(path: str) -> None:
    # Best effort: some file systems refuse fsync on a directory; the rename is done.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_file(path: str, data: bytes, should_abort: AbortCheck) -> None:
    """Replace (or create) ``path`` atomically with ``data``, creating parents."""
    try:
        target = os.path.realpath(path) if os.path.islink(path) else path
        existing = os.stat(target)
    except FileNotFoundError:
        existing = None
    except OSError as error:
        raise file_error_from_os(error, path, "write") from None
    if existing is not None and stat.S_ISDIR(existing.st_mode):
        raise FileError("is_directory", f"Could not write {path}: Is a directory", path)
    if existing is None:
        _make_parents(target)
    mode = 0o666 if existing is None else stat.S_IMODE(existing.st_mode)
    directory, name = os.path.split(target)
    temp = os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    except OSError as error:
        raise file_error_from_os(error, path, "write") from None
    try:
        try:
            if existing is not None:
                # REMINDER: the umask narrowed the temp file's mode; restore the old one exactly.
                os.fchmod(fd, mode)
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        if should_abort():
            raise aborted(path)
        os.replace(temp, target)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        if isinstance(error, OSError):
            raise file_error_from_os(error, path, "write") from None
        raise
    _fsync_directory(directory)


def append_file(path: str, data: bytes) -> None:
    """Append ``data`` to ``path``, creating it and its parents when missing."""
    _make_parents(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
    except OSError as error:
        raise file_error_from_os(error, path, "append to") from None


def truncate_file(path: str, size: int) -> None:
    """Set an existing file's length to ``size`` (zeros when it grows)."""
    if size < 0:
        raise FileError("invalid", f"Could not truncate {path}: size {size} is negative", path)
    try:
        os.truncate(path, size)
    except OSError as error:
        raise file_error_from_os(error, path, "truncate") from None


def flush_file(path: str) -> None:
    """Fsync an existing file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as error:
        raise file_error_from_os(error, path, "flush") from None


def rename_file(source: str, target: str) -> None:
    """Move ``source`` over ``target``; a failure names the source (R119)."""
    try:
        os.replace(source, target)
    except OSError as error:
        reason = error.strerror or str(error)
        raise FileError(
            file_error_from_os(error, source, "rename").code,
            f"Could not rename {source} to {target}: {reason}",
            source,
        ) from None


def create_dir(path: str, recursive: bool) -> None:
    """Create a directory (and its parents with ``recursive``)."""
    try:
        if recursive:
            os.makedirs(path, exist_ok=True)
        else:
            os.mkdir(path)
    except FileExistsError:
        if recursive:  # makedirs raises it when a file, not a directory, is there
            raise FileError(
                "not_directory", f"Could not create directory {path}: a file is in the way", path
            ) from None
        raise FileError(
            "already_exists", f"Could not create directory {path}: it already exists", path
        ) from None
    except OSError as error:
        raise file_error_from_os(error, path, "create directory") from None


def remove(path: str, recursive: bool, force: bool) -> None:
    """Remove a file, symlink or directory; a link is removed, never its target."""
    try:
        mode = os.lstat(path).st_mode
        if not stat.S_ISDIR(mode):
            os.unlink(path)
        elif recursive:
            shutil.rmtree(path)
        else:
            os.rmdir(path)
    except FileNotFoundError:
        if not force:
            raise FileError("not_found", f"Could not remove {path}: No such file", path) from None
    except OSError as error:
        raise file_error_from_os(error, path, "remove") from None


def create_temp_dir(prefix: str) -> str:
    """A new directory in the system temp directory."""
    try:
        return tempfile.mkdtemp(prefix=prefix)
    except OSError as error:
        raise file_error_from_os(error, tempfile.gettempdir(), "create a directory in") from None


def create_temp_file(prefix: str, suffix: str) -> str:
    """A new empty file in the system temp directory."""
    try:
        fd, path = tempfile.mkstemp(prefix=prefix, suffix=suffix)
    except OSError as error:
        raise file_error_from_os(error, tempfile.gettempdir(), "create a file in") from None
    os.close(fd)
    return path
