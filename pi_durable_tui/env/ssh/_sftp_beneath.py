"""``SshEnv``'s confined writes: ``write_file(..., beneath=root)`` over SFTP (issue 13).

SFTP has no directory descriptors: every request names a path the server
resolves on its own, following links. So the local walk (``env._beneath``)
cannot be done as one operation; this module does the closest thing, in the
same shape, with the same refusals:

- the walk goes component by component from the real path of ``root``,
  ``lstat``-ing each one; a link's target (``readlink``) is walked in its place,
  relative to the link's directory or, when absolute, only if it names a place
  under ``root``; anything else is refused naming the path, as locally. A
  missing parent is made with ``mkdir`` and then checked again (``lstat`` and
  ``realpath``); one made outside by a swap is removed and the write refused;
- the temp file is created (``O_EXCL``, which never follows a final link), then
  its ``realpath`` must lie under the root's real path before any byte is
  written; otherwise it is removed and the write refused;
- the rename names the temp file by the same directory path: if a link was
  swapped into that path after the check, the rename's source resolves
  elsewhere, where no file of that random name exists, and the write fails
  with nothing moved (the temp file is removed).

What remains open (no SFTP request can close it): a swap between the
``realpath`` check and the ``rename``, back again before the rename's own
lookups, so both source and target resolve outside yet find the temp file,
needs the swapped link to point at the directory that holds it; and an empty
directory can exist outside for the moment between its ``mkdir`` and its
removal. The conformance suite's racing-swap case runs on ``SshEnv`` too.
"""

from __future__ import annotations

import contextlib
import posixpath
import stat

import asyncssh

from pi_durable_tui.env._beneath import MAX_LINKS, outside_error, relative_to
from pi_durable_tui.env._errors import FileError
from pi_durable_tui.env.ssh._sftp_files import AbortCheck, SftpFiles


class _SftpWalk:
    """One component-by-component walk of a remote path beneath a root."""

    def __init__(self, files: SftpFiles, root: str, real_root: str, path: str) -> None:
        self.files = files
        self.sftp = files.sftp
        self.root = root
        self.real_root = real_root
        self.roots = (root, real_root)
        self.path = path
        self.stack = [real_root]  # paths without links, at the time they were looked at
        self.links = 0
        self.last_link: str | None = None

    def _count_link(self) -> None:
        self.links += 1
        if self.links > MAX_LINKS:
            raise FileError(
                "invalid",
                f"Could not write {self.path}: too many levels of symbolic links",
                self.path,
            )

    async def lstat(self, name: str) -> asyncssh.SFTPAttrs | None:
        """``lstat`` of ``name`` in the current directory; None when it is missing."""
        try:
            return await self.sftp.lstat(posixpath.join(self.stack[-1], name))
        except asyncssh.SFTPNoSuchFile:
            return None
        except asyncssh.SFTPError as error:
            raise await self.files.fail(error, self.path, "write") from None

    async def check_inside(self, remote: str) -> None:
        """Refuse when the server resolves ``remote`` to a place outside the root."""
        try:
            real = await self.sftp.realpath(remote)
        except asyncssh.SFTPError as error:
            raise await self.files.fail(error, self.path, "write") from None
        if relative_to(real, (self.real_root,)) is None:
            raise outside_error(self.path, self.root, self.last_link)

    async def _follow(self, name: str, pending: list[str]) -> None:
        self._count_link()
        link = posixpath.join(self.stack[-1], name)
        self.last_link = link
        try:
            target = await self.sftp.readlink(link)
        except asyncssh.SFTPError:
            pending.append(name)  # no longer a link: look at it again
            return
        if target.startswith("/"):
            below = relative_to(target, self.roots)
            if below is None:
                raise outside_error(self.path, self.root, link)
            del self.stack[1:]
            pending.extend(reversed(below))
        else:
            pending.extend(reversed(target.split("/")))

    async def _make(self, name: str) -> bool:
        """Make the missing directory ``name``; False when something else made it first."""
        made = posixpath.join(self.stack[-1], name)
        try:
            await self.sftp.mkdir(made)
        except asyncssh.SFTPError:
            return False  # made meanwhile, or something else is there: the lstat decides
        try:
            await self.check_inside(made)
        except FileError:
            with contextlib.suppress(asyncssh.SFTPError):
                await self.sftp.rmdir(made)
            raise
        return True

    async def locate(self) -> tuple[str, asyncssh.SFTPAttrs | None]:
        """Walk to the final component; return its name and what is there now."""
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
                self.stack.pop()
                continue
            found = await self.lstat(name)
            mode = 0 if found is None else found.permissions or 0
            if found is not None and stat.S_ISLNK(mode):
                await self._follow(name, pending)
                continue
            if not pending:
                if found is not None and stat.S_ISDIR(mode):
                    break
                return name, found
            if found is None:
                if not await self._make(name):
                    self._count_link()  # bounds a loop of removals racing the mkdir
                pending.append(name)
                continue
            if not stat.S_ISDIR(mode):
                shown = posixpath.join(self.stack[-1], name)
                raise FileError(
                    "not_directory",
                    f"Could not write {self.path}: {shown} is not a directory",
                    self.path,
                )
            self.stack.append(posixpath.join(self.stack[-1], name))
        raise FileError("is_directory", f"Could not write {self.path}: Is a directory", self.path)


async def write_beneath(
    files: SftpFiles, root: str, path: str, data: bytes, should_abort: AbortCheck
) -> None:
    """Replace (or create) remote ``path`` atomically, never outside ``root``.

    Raises:
        FileError: ``permission_denied`` naming the path when it resolves outside
            ``root``, and the codes of an ordinary write.
    """
    try:
        real_root = await files.sftp.realpath(root)
    except asyncssh.SFTPError as error:
        raise await files.fail(error, root, "open the working directory") from None
    walk = _SftpWalk(files, root, real_root, path)
    name, existing = await walk.locate()
    await files.replace(
        path, walk.stack[-1], name, existing, data, should_abort, check_temp=walk.check_inside
    )
