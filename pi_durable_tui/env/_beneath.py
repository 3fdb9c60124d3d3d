"""Writes that cannot leave a root directory: the check and the use are one walk (issue 13).

``write_file(..., beneath=root)`` (DESIGN.md section 7) must never create or
replace anything outside ``root``, even while another process swaps symlinks
in the path. A check of the path followed by a write by path cannot promise
that: the path may mean another file by the time it is used (18 of 200 writes
landed outside in the issue's race). So nothing here opens a path by name
from ``/``. The walk starts from a descriptor of ``root`` and opens one
component at a time relative to the previous directory's descriptor, with
``O_NOFOLLOW`` so the kernel never follows a link on its own:

- a directory component is opened (``O_DIRECTORY | O_NOFOLLOW``) and becomes
  the next descriptor; a missing one is made with ``mkdir(dir_fd=...)`` first
  (R119: writes create parents), then opened the same way;
- a symlink component is read (``readlink(dir_fd=...)``) and its target is
  walked in its place, from the link's own directory (relative target) or from
  ``root`` (absolute target naming a place under ``root``); an absolute target
  anywhere else, or a ``..`` that would climb above ``root``, is refused. So
  links inside the workspace that point inside stay usable, a link pointing out
  (dangling or not, to a file or to a directory) is refused, naming the path;
- ``..`` pops the descriptor stack instead of asking the kernel, so it means
  the directory the walk came from;
- the temporary file is created in the final directory's descriptor
  (``O_CREAT | O_EXCL | O_NOFOLLOW``) and renamed within that same descriptor
  (``rename(src_dir_fd=fd, dst_dir_fd=fd)``), which replaces a name and never
  follows one: a link swapped in at the last moment is replaced, not followed.

A component that turns into a link between its ``lstat`` and its ``open`` fails
the ``O_NOFOLLOW`` open and is looked at again (counted like a link, so a swap
loop cannot keep the walk going forever: ``MAX_LINKS``). ``openat2`` with
``RESOLVE_BENEATH`` would do the walk in the kernel, but it refuses absolute
links that point inside and Python has no binding for it; the walk costs one
``lstat`` and one ``open`` per component. What the walk cannot stop: a process
that renames a whole directory of the workspace to a place outside it while a
write holds that directory's descriptor (the write then lands in the moved
directory); doing that needs write access outside the workspace, where no
confinement of a tool's own writes helps anyway.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable

from pi_durable_tui.env._errors import FileError, aborted, file_error_from_os
from pi_durable_tui.env._files import write_all

MAX_LINKS = 40
"""Links (and component swaps) one walk follows before it fails, as the kernel's limit."""

_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def outside_error(path: str, root: str, through: str | None = None) -> FileError:
    """The refusal of a write that would land outside ``root``, naming the path.

    Args:
        path: The absolute path the caller asked for.
        root: The directory writes must stay beneath.
        through: The symbolic link that points out, when one does.
    """
    via = "" if through is None else f" through the symbolic link {through}"
    return FileError(
        "permission_denied",
        f"Refusing to write {path}: it resolves outside {root}{via}",
        path,
    )


def relative_to(path: str, roots: tuple[str, ...]) -> list[str] | None:
    """The components of absolute ``path`` below the first of ``roots`` holding it, or None."""
    normal = os.path.normpath(path)
    for root in roots:
        if normal == root:
            return []
        prefix = root.rstrip("/") + "/"
        if normal.startswith(prefix):
            return normal[len(prefix) :].split("/")
    return None


class _Walk:
    """One descriptor-relative walk of a path beneath a root (see the module docstring)."""

    def __init__(self, root: str, path: str) -> None:
        self.root = root
        self.path = path
        self.roots = (root, os.path.realpath(root))
        try:
            root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as error:
            raise file_error_from_os(error, root, "open the working directory") from None
        self.stack = [root_fd]
        self.links = 0
        self.shown = root  # the path walked so far, for messages
        self.last_link: str | None = None  # the link whose target is being walked

    def close(self) -> None:
        """Close every descriptor of the walk."""
        for fd in self.stack:
            os.close(fd)
        self.stack.clear()

    def _count_link(self) -> None:
        self.links += 1
        if self.links > MAX_LINKS:
            raise FileError(
                "invalid",
                f"Could not write {self.path}: too many levels of symbolic links",
                self.path,
            )

    def lstat(self, name: str) -> os.stat_result | None:
        """``lstat`` of ``name`` in the current directory; None when it is missing."""
        try:
            return os.stat(name, dir_fd=self.stack[-1], follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise file_error_from_os(error, self.path, "write") from None

    def _follow(self, name: str, pending: list[str]) -> bool:
        """Put the target of the link ``name`` in its place; False when it is no link now."""
        self._count_link()
        link = os.path.join(self.shown, name)
        self.last_link = link
        try:
            target = os.readlink(name, dir_fd=self.stack[-1])
        except OSError:
            return False
        if target.startswith("/"):
            below = relative_to(target, self.roots)
            if below is None:
                raise outside_error(self.path, self.root, link)
            while len(self.stack) > 1:
                os.close(self.stack.pop())
            self.shown = self.root
            pending.extend(reversed(below))
        else:
            pending.extend(reversed(target.split("/")))
        return True

    def _enter(self, name: str, create: bool) -> bool:
        """Open the directory ``name`` (made first when missing); False to look again."""
        if create:
            try:
                os.mkdir(name, 0o777, dir_fd=self.stack[-1])
            except FileExistsError:
                pass  # made meanwhile, or something else is there: the open decides
            except OSError as error:
                shown = os.path.join(self.shown, name)
                raise file_error_from_os(error, shown, "create directory") from None
        try:
            fd = os.open(name, _DIRECTORY_FLAGS, dir_fd=self.stack[-1])
        except OSError as error:
            if error.errno in (errno.ENOTDIR, errno.ELOOP, errno.ENOENT):
                return False  # swapped since the lstat (or a file): look again
            raise file_error_from_os(error, os.path.join(self.shown, name), "write") from None
        self.stack.append(fd)
        self.shown = os.path.join(self.shown, name)
        return True

    def locate(self, *, create_parents: bool) -> str:
        """Walk to the final component; return its name in the last directory of ``stack``.

        Raises:
            FileError: ``permission_denied`` for a path or link leading outside the
                root, ``not_directory`` for a file in the way, ``is_directory`` for a
                path that names a directory, ``not_found`` for a missing parent
                when ``create_parents`` is False.
        """
        below = relative_to(self.path, self.roots)
        if below is None:
            raise outside_error(self.path, self.root)
        pending = list(reversed(below))
        while pending:
            name = pending.pop()
            if name in ("", "."):
                continue
            if name == "..":
                if len(self.stack) == 1:
                    raise outside_error(self.path, self.root, self.last_link)
                os.close(self.stack.pop())
                self.shown = os.path.dirname(self.shown)
                continue
            found = self.lstat(name)
            if found is not None and stat.S_ISLNK(found.st_mode):
                if not self._follow(name, pending):
                    pending.append(name)  # no longer a link: look at it again
                continue
            if not pending:
                if found is not None and stat.S_ISDIR(found.st_mode):
                    break
                return name
            if found is not None and not stat.S_ISDIR(found.st_mode):
                shown = os.path.join(self.shown, name)
                raise FileError(
                    "not_directory",
                    f"Could not write {self.path}: {shown} is not a directory",
                    self.path,
                )
            if found is None and not create_parents:
                raise FileError(
                    "not_found",
                    f"Could not write {self.path}: No such file or directory",
                    self.path,
                )
            if not self._enter(name, create_parents):
                self._count_link()
                pending.append(name)
        raise FileError("is_directory", f"Could not write {self.path}: Is a directory", self.path)


def write_beneath(root: str, path: str, data: bytes, should_abort: Callable[[], bool]) -> None:
    """Replace (or create) ``path`` atomically with ``data``, never outside ``root``.

    Parents are created inside ``root``; a symlink resolving inside is written
    through (the link stays); the old file's mode is kept. The temp file lives
    in the target's directory (by descriptor) and is gone whatever happens.

    Args:
        root: The absolute directory every write must stay beneath.
        path: The absolute, normalized path to write.
        data: The new content.
        should_abort: Checked before the rename; True aborts with no change.

    Raises:
        FileError: ``permission_denied`` naming the path when it resolves outside
            ``root``, and the codes of an ordinary write.
    """
    walk = _Walk(root, path)
    try:
        name = walk.locate(create_parents=True)
        directory = walk.stack[-1]
        existing = walk.lstat(name)
        if existing is not None and stat.S_ISDIR(existing.st_mode):
            raise FileError("is_directory", f"Could not write {path}: Is a directory", path)
        if existing is not None and stat.S_ISLNK(existing.st_mode):
            existing = None  # swapped in since the walk: the rename replaces the link itself
        mode = 0o666 if existing is None else stat.S_IMODE(existing.st_mode)
        temp = f".{name}.{secrets.token_hex(6)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(temp, flags, mode, dir_fd=directory)
        except OSError as error:
            raise file_error_from_os(error, path, "write") from None
        try:
            try:
                if existing is not None:
                    # REMINDER: the umask narrowed the temp file's mode; restore the old one.
                    os.fchmod(fd, mode)
                write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            if should_abort():
                raise aborted(path)
            os.rename(temp, name, src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException as error:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=directory)
            if isinstance(error, OSError):
                raise file_error_from_os(error, path, "write") from None
            raise
        with contextlib.suppress(OSError):  # some file systems refuse a directory fsync
            os.fsync(directory)
    finally:
        walk.close()
