"""``SshEnv``: the execution environment of a remote host over SSH (R119, R120, issue 17).

One SSH connection per environment carries everything: file operations go
through one SFTP session (``_sftp_files``), each command through a session
channel of its own (``_remote_command``) running the wrapper and guard of
``_remote_shell``. Paths resolve like ``LocalEnv``'s, against the remote
working directory and the remote home.

Variables: a command inherits the environment the remote host gives an SSH
command (what ``sshd`` and the login shell set), scrubbed of secret-looking
names by the same rules and allow-list as ``LocalEnv`` (``_secrets``).
Nothing of this process's environment is sent, so no local secret can reach
the remote host; variables given to ``exec(env=...)`` are sent on the channel's
stdin, never on a command line. Spill files hide the values of this process's
secret-looking variables and of the remote ones.

Commands per connection: OpenSSH allows 10 sessions per connection by default
(``MaxSessions``); SFTP takes one, so at most ``MAX_COMMANDS`` commands run at
once and further ones wait for a free channel.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TypeVar

import asyncssh

from pi_durable_tui.env._errors import FileError, aborted
from pi_durable_tui.env._local import check_timeout
from pi_durable_tui.env._mark import MARK_NAME
from pi_durable_tui.env._paths import join_paths, resolve_path
from pi_durable_tui.env._protocol import TextErrors
from pi_durable_tui.env._secrets import is_secret_name, scrub_environment
from pi_durable_tui.env._spill import SPILL_PREFIX
from pi_durable_tui.env._strays import call_mark
from pi_durable_tui.env._types import (
    DirEntry,
    ExecResult,
    FileInfo,
    OutputCallback,
    OutputWindow,
    SpillPolicy,
)
from pi_durable_tui.env.ssh._connection import Link, open_link
from pi_durable_tui.env.ssh._remote_command import RemoteCommand, run_remote, when_a_session_is_free
from pi_durable_tui.env.ssh._remote_shell import (
    SHELL_ADDED_NAMES,
    encode_header,
    is_shell_name,
    kill_groups_line,
)
from pi_durable_tui.env.ssh._sftp_beneath import write_beneath
from pi_durable_tui.env.ssh._sftp_errors import lost
from pi_durable_tui.env.ssh._sftp_files import SftpFiles
from pi_durable_tui.env.ssh._sftp_readers import SftpBinaryReader, SftpDirReader
from pi_durable_tui.env.ssh._shared_link import SharedLink
from pi_durable_tui.env.ssh._target import SshTarget, parse_ssh_url

_T = TypeVar("_T")


def _never() -> bool:
    return False


def _decode(data: bytes, path: str, errors: str) -> str:
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError as error:
        raise FileError(
            "invalid",
            f"Could not read {path} as text: invalid UTF-8 at byte {error.start}",
            path,
        ) from None


class SshEnv:
    """The ``ExecutionEnv`` of a remote host; open it with ``SshEnv.connect``.

    Args:
        link: The open connection (``connect`` makes it).
        target: Where it is connected; ``target.path`` is the working directory.
        allow_env: Names or globs of remote variables commands may see although
            they look like secrets.
        kill_grace: Seconds between ``SIGTERM`` and ``SIGKILL`` when a command's
            process group is killed.
    """

    def __init__(
        self,
        link: Link | SharedLink,
        target: SshTarget,
        *,
        allow_env: Iterable[str] = (),
        kill_grace: float = 0.5,
    ) -> None:
        self._shared = link if isinstance(link, SharedLink) else SharedLink(link, target)
        self._target = target
        self._home = self._shared.link.home
        self._cwd = resolve_path(target.path, cwd=self._home, home=self._home)
        self._id = f"ssh://{target.authority}"
        self._allow_env = tuple(allow_env)
        self._kill_grace = kill_grace

    @property
    def _link(self) -> Link:
        return self._shared.link

    @property
    def _files(self) -> SftpFiles:
        return self._shared.files

    @classmethod
    async def connect(
        cls,
        target: SshTarget | str,
        *,
        allow_env: Iterable[str] = (),
        kill_grace: float = 0.5,
        known_hosts: str | None = None,
        client_keys: list[str] | None = None,
    ) -> SshEnv:
        """Connect to ``target`` (an ``SshTarget`` or an ``ssh://`` URL).

        Args:
            target: The host and working directory.
            allow_env: Remote secret-looking variables commands may still see.
            kill_grace: Seconds between ``SIGTERM`` and ``SIGKILL``.
            known_hosts: The known-hosts file (default ``~/.ssh/known_hosts``).
            client_keys: Private key files (default ``~/.ssh`` keys and the agent).

        Raises:
            ValueError: A bad URL (one line).
            SshConnectError: The connection failed (one line saying what to do).
        """
        parsed = parse_ssh_url(target) if isinstance(target, str) else target
        link = await open_link(parsed, known_hosts=known_hosts, client_keys=client_keys)
        shared = SharedLink(link, parsed, known_hosts, client_keys)
        return cls(shared, parsed, allow_env=allow_env, kill_grace=kill_grace)

    def __repr__(self) -> str:
        return f"SshEnv({self.display!r})"

    def at(self, cwd: str) -> SshEnv:
        """This environment working in another remote directory, on the same connection.

        The two share the connection (``SharedLink``), its limit of running
        commands and what ``cleanup()`` kills; ``close()`` of either closes it.
        """
        other = copy.copy(self)
        other._cwd = self.absolute_path(cwd)
        return other

    @property
    def cwd(self) -> str:
        """The absolute remote working directory."""
        return self._cwd

    @property
    def id(self) -> str:
        """``ssh://user@host:port``: the identity of the remote file system (R121)."""
        return self._id

    @property
    def display(self) -> str:
        """``user@host:/path``, as the footer shows the working directory."""
        return self.show(self._cwd)

    def show(self, path: str) -> str:
        """A remote path as people write it: ``user@host:/path``."""
        return f"{self._target.user}@{self._target.host}:{path}"

    @property
    def platform(self) -> str:
        """The remote ``uname -sm`` (``Linux x86_64``), or empty when it said nothing."""
        return self._link.platform

    @property
    def target(self) -> SshTarget:
        """Where this environment is connected."""
        return self._target

    def absolute_path(self, path: str) -> str:
        """Resolve ``path`` against the remote ``cwd`` and home, lexically."""
        return resolve_path(path, cwd=self._cwd, home=self._home)

    def join_path(self, *parts: str) -> str:
        """Join path parts and normalize the result."""
        return join_paths(*parts)

    def _start(self, path: str, abort: asyncio.Event | None) -> str:
        absolute = self.absolute_path(path)
        if abort is not None and abort.is_set():
            raise aborted(absolute)
        return absolute

    async def _call(self, operation: Callable[[], Awaitable[_T]]) -> _T:
        """Run an operation on the connection (opened again first if it dropped)."""
        try:
            await self._shared.ensure()
            return await operation()
        except FileError:
            raise
        except asyncssh.SFTPError as error:
            raise FileError("unknown", f"SFTP failed on {self._target.host}: {error}") from None
        except (asyncssh.Error, OSError, EOFError) as error:
            raise lost(self._target.authority, error) from None

    @staticmethod
    def _check(abort: asyncio.Event | None) -> Callable[[], bool]:
        return _never if abort is None else abort.is_set

    # -- reading -----------------------------------------------------------------

    async def canonical_path(self, path: str, *, abort: asyncio.Event | None = None) -> str:
        """The real path of an existing file, every symlink resolved."""
        return await self._call(lambda: self._files.canonical_path(self._start(path, abort)))

    async def file_info(self, path: str, *, abort: asyncio.Event | None = None) -> FileInfo:
        """Kind, size and mtime (one-second resolution) of ``path``, not following a link."""
        return await self._call(lambda: self._files.file_info(self._start(path, abort)))

    async def exists(self, path: str, *, abort: asyncio.Event | None = None) -> bool:
        """Whether ``file_info`` would succeed (a dangling symlink exists)."""
        return await self._call(lambda: self._files.exists(self._start(path, abort)))

    async def list_dir(self, path: str, *, abort: asyncio.Event | None = None) -> list[DirEntry]:
        """Every entry of a directory, sorted by name."""
        return await self._call(lambda: self._files.list_dir(self._start(path, abort)))

    async def open_dir_reader(
        self, path: str, *, page_size: int = 256, abort: asyncio.Event | None = None
    ) -> SftpDirReader:
        """Open a directory for paged reading."""
        absolute = self._start(path, abort)
        await self._call(lambda: self._files.check_directory(absolute))
        reader = SftpDirReader(self._link.sftp, absolute, page_size)
        reader.open()
        return reader

    async def read_text_file(
        self, path: str, *, errors: TextErrors = "strict", abort: asyncio.Event | None = None
    ) -> str:
        """A whole file decoded as UTF-8 (``errors="replace"`` for U+FFFD)."""
        absolute = self._start(path, abort)
        data = await self._call(lambda: self._files.read_bytes(absolute, None, self._check(abort)))
        return _decode(data, absolute, errors)

    async def read_text_lines(
        self,
        path: str,
        *,
        max_lines: int,
        errors: TextErrors = "strict",
        abort: asyncio.Event | None = None,
    ) -> list[str]:
        """The first ``max_lines`` lines, without newlines, reading no further."""
        absolute = self._start(path, abort)
        data = await self._call(
            lambda: self._files.read_head_lines(absolute, max_lines, self._check(abort))
        )
        text = _decode(data, absolute, errors)
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()
        return lines[:max_lines]

    async def read_binary_file(
        self, path: str, *, max_bytes: int | None = None, abort: asyncio.Event | None = None
    ) -> bytes:
        """A whole file's bytes, or only its first ``max_bytes``."""
        absolute = self._start(path, abort)
        return await self._call(
            lambda: self._files.read_bytes(absolute, max_bytes, self._check(abort))
        )

    async def open_binary_reader(
        self, path: str, *, no_follow: bool = False, abort: asyncio.Event | None = None
    ) -> SftpBinaryReader:
        """Open a regular file for positional reads; ``no_follow`` refuses a final symlink."""
        absolute = self._start(path, abort)
        handle = await self._call(
            lambda: self._files.open_for_reading(absolute, no_follow=no_follow)
        )
        return SftpBinaryReader(self._link.sftp, handle, absolute)

    # -- writing -----------------------------------------------------------------

    async def write_file(
        self,
        path: str,
        content: str | bytes,
        *,
        beneath: str | None = None,
        abort: asyncio.Event | None = None,
    ) -> None:
        """Create or replace a file atomically, creating parents, keeping an old mode.

        ``beneath`` confines the write to a remote directory as well as SFTP
        allows (``_sftp_beneath``): links out are refused, a swap is caught.
        """
        absolute = self._start(path, abort)
        data = content.encode() if isinstance(content, str) else content
        check = self._check(abort)
        if beneath is None:
            await self._call(lambda: self._files.write_file(absolute, data, check))
            return
        root = self.absolute_path(beneath)
        await self._call(lambda: write_beneath(self._files, root, absolute, data, check))

    async def append_file(
        self, path: str, content: str | bytes, *, abort: asyncio.Event | None = None
    ) -> None:
        """Append to a file, creating it and its parents when missing."""
        absolute = self._start(path, abort)
        data = content.encode() if isinstance(content, str) else content
        await self._call(lambda: self._files.append_file(absolute, data))

    async def truncate_file(
        self, path: str, size: int, *, abort: asyncio.Event | None = None
    ) -> None:
        """Cut or extend (with zeros) an existing file to ``size`` bytes; never creates."""
        await self._call(lambda: self._files.truncate_file(self._start(path, abort), size))

    async def flush_file(self, path: str, *, abort: asyncio.Event | None = None) -> None:
        """Fsync an existing file on the remote host."""
        await self._call(lambda: self._files.flush_file(self._start(path, abort)))

    async def rename_file(
        self, source: str, target: str, *, abort: asyncio.Event | None = None
    ) -> None:
        """Move ``source`` to ``target``, atomically replacing a file there."""
        absolute_target = self.absolute_path(target)
        await self._call(
            lambda: self._files.rename_file(self._start(source, abort), absolute_target)
        )

    async def create_dir(
        self, path: str, *, recursive: bool = False, abort: asyncio.Event | None = None
    ) -> None:
        """Create a directory; ``recursive`` creates parents and accepts an existing one."""
        await self._call(lambda: self._files.create_dir(self._start(path, abort), recursive))

    async def remove(
        self,
        path: str,
        *,
        recursive: bool = False,
        force: bool = False,
        abort: asyncio.Event | None = None,
    ) -> None:
        """Remove a file, link or directory; ``force`` accepts a missing path."""
        await self._call(lambda: self._files.remove(self._start(path, abort), recursive, force))

    async def create_temp_dir(
        self, prefix: str = "pi-", *, abort: asyncio.Event | None = None
    ) -> str:
        """Create a fresh directory in the remote temp directory."""
        if abort is not None and abort.is_set():
            raise aborted()
        return await self._call(lambda: self._files.create_temp_dir(prefix))

    async def create_temp_file(
        self,
        *,
        prefix: str = "pi-",
        suffix: str = "",
        abort: asyncio.Event | None = None,
    ) -> str:
        """Create a fresh empty file in the remote temp directory."""
        if abort is not None and abort.is_set():
            raise aborted()
        return await self._call(lambda: self._files.create_temp_file(prefix, suffix))

    # -- processes ---------------------------------------------------------------

    def _variables(
        self, env: Mapping[str, str] | None, inherit_env: bool
    ) -> tuple[list[str], dict[str, str]]:
        """What the wrapper unsets and exports: the remote environment's scrub, then ``env``."""
        base = self._link.environ
        if inherit_env:
            kept = scrub_environment(base, self._allow_env)
            unset = [name for name in base if name not in kept]
        else:
            unset = sorted({*base, *SHELL_ADDED_NAMES})
        export = dict(env or {})
        for name in export:
            if not is_shell_name(name):
                raise FileError(
                    "invalid",
                    f"Cannot pass the variable {name!r} to a remote command: not a shell name",
                )
        return [name for name in unset if is_shell_name(name)], export

    def _secret_values(self) -> tuple[bytes, ...]:
        """Values spill files hide: this process's secret-looking variables and the remote's."""
        values = [
            value
            for source in (os.environ, self._link.environ)
            for name, value in source.items()
            if len(value) >= 8 and is_secret_name(name)
        ]
        return tuple(value.encode("utf-8", "surrogateescape") for value in values)

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
        """Run a command on the remote host and wait for it (see ``ExecutionEnv.exec``).

        Args:
            command: A string run by bash (``sh`` without bash), or an argv.
            cwd: Remote working directory (default ``self.cwd``; relative to it).
            env: Variables to set, kept even when they look like secrets.
            inherit_env: Whether the command starts from the remote environment,
                scrubbed of secrets.
            timeout: Seconds before the process group is killed.
            on_output: Receives raw chunks tagged ``stdout``/``stderr``.
            spill: When to also write the complete output to a remote temp file.
            window: The kept tail of a tail-retaining tool (R105).
            abort: Kills the process group when set.
            end_background: When the command ends, also end every process it left
                (its group, and what carries its mark: ``setsid``, ``nohup``).

        Raises:
            FileError: ``invalid``, ``not_found`` (cwd or program),
                ``permission_denied``, ``shell_unavailable``, ``timeout``,
                ``aborted``, ``unknown`` (the connection failed).
        """
        check_timeout(timeout)
        directory = self._cwd if cwd is None else self.absolute_path(cwd)
        if abort is not None and abort.is_set():
            raise aborted()
        if isinstance(command, str):
            argv, shell_command, program = None, command, "bash"
        else:
            argv = list(command)
            if not argv:
                raise FileError("invalid", "Cannot run an empty argv: give at least a program")
            shell_command, program = None, argv[0]
        unset, export = self._variables(env, inherit_env)
        export[MARK_NAME] = mark = call_mark()  # how its strays are found (issue 13)
        self._shared.marks.add(mark)
        header = encode_header(
            cwd=directory,
            argv=argv,
            shell_command=shell_command,
            unset=unset,
            export=export,
            grace=self._kill_grace,
        )
        commands: list[RemoteCommand] = []

        def started(command: RemoteCommand) -> None:
            commands.append(command)
            self._started(command)

        try:
            async with self._shared.channels:
                result = await self._call(
                    lambda: run_remote(
                        self._link.connection,
                        header,
                        cwd=directory,
                        program=program,
                        timeout=timeout,
                        on_output=on_output,
                        spill=spill,
                        open_spill=self._open_spill,
                        window=window,
                        abort=abort,
                        kill_grace=self._kill_grace,
                        kill_group=self._kill_group,
                        started=started,
                        secrets=self._secret_values(),
                    )
                )
        except FileError as error:
            self._note_spill(error.spill_path)
            raise
        finally:
            if end_background:
                await asyncio.shield(self._end_strays(mark, commands))
        self._note_spill(result.spill_path)
        return result

    def _note_spill(self, path: str | None) -> None:
        if path:
            self._shared.spills.add(path)

    async def _end_strays(self, mark: str, commands: list[RemoteCommand]) -> None:
        """End what one command left (its group and every process with its mark), best effort."""
        groups = [command.pid for command in commands if command.pid is not None]
        self._shared.marks.discard(mark)
        with contextlib.suppress(FileError):
            await self._kill_groups(groups, [mark])
        self._shared.groups.difference_update(groups)

    async def _open_spill(self) -> tuple[str, asyncssh.SFTPClientFile]:
        return await self._files.open_temp_file(SPILL_PREFIX, ".log")

    def _started(self, command: RemoteCommand) -> None:
        shared = self._shared
        shared.running.add(command)

        def forget(_: object) -> None:
            shared.running.discard(command)
            if command.pid is not None:
                shared.groups.add(command.pid)

        command.done.add_done_callback(forget)

    async def _kill_groups(self, groups: Iterable[int], marks: Iterable[str] = ()) -> None:
        ids = sorted(set(groups))
        chosen = sorted(set(marks))
        if not ids and not chosen:
            return
        line = kill_groups_line(ids, self._kill_grace, chosen)
        await self._call(
            lambda: when_a_session_is_free(lambda: self._link.connection.run(line, check=False))
        )

    async def _kill_group(self, group: int) -> None:
        await self._kill_groups([group])

    async def cleanup(self) -> None:
        """Kill every process group this environment started that may still be alive.

        Running commands are stopped through their guards; groups of commands that
        already ended (their background processes) are killed by number, and every
        process carrying one of its commands' marks (``setsid``; issue 13). The
        spill files of its commands are removed.
        """
        shared = self._shared
        running = list(shared.running)
        for command in running:
            command.kill()
        await asyncio.gather(*(command.wait() for command in running))
        groups = set(shared.groups)
        shared.groups.clear()
        marks, shared.marks = shared.marks, set()
        spills, shared.spills = shared.spills, set()
        if shared.closed:
            return
        await self._kill_groups(groups, marks)
        for path in spills:  # the results naming them said: kept until the session closes
            with contextlib.suppress(FileError):
                await self.remove(path, force=True)

    async def close(self) -> None:
        """``cleanup()``, then close the connection for good. Idempotent."""
        if self._shared.connected():
            with contextlib.suppress(FileError):
                await self.cleanup()
        await self._shared.close()
