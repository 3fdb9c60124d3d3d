"""``LocalEnv``: the execution environment of this machine (R119, R120, issue 7).

File operations run the blocking functions of ``_files`` in a worker thread
(``asyncio.to_thread``): a hop costs tens of microseconds, while a read of a
large file or an fsync on the event loop would freeze the screen for as long as
it takes. Abort signals are checked before the hop (so an operation whose
signal is already set has no effect) and, for long reads and before an atomic
rename, inside it. Cancelling the awaiting coroutine does not stop a file
operation already handed to the thread; a write then either happens whole or
not at all.

Commands run through ``_process.run_command``, with the inherited environment
scrubbed of secrets (``_secrets``) unless allow-listed. ``cleanup()`` kills
every process group that is still alive, including background processes of
commands that have returned; a command still running when this process dies
without a cleanup is killed by its guard (``_orphan_guard``).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import ParamSpec, TypeVar

from pi_durable_tui.env import _files
from pi_durable_tui.env._beneath import write_beneath
from pi_durable_tui.env._errors import FileError, aborted
from pi_durable_tui.env._groups import ProcessGroup
from pi_durable_tui.env._jobs import spawn_job
from pi_durable_tui.env._mark import MARK_NAME
from pi_durable_tui.env._paths import join_paths, resolve_path
from pi_durable_tui.env._process import run_command
from pi_durable_tui.env._protocol import TextErrors
from pi_durable_tui.env._readers import LocalBinaryReader, LocalDirReader
from pi_durable_tui.env._running_job import RunningJob
from pi_durable_tui.env._secrets import is_secret_name, scrub_environment
from pi_durable_tui.env._strays import call_mark, carrying, end_processes
from pi_durable_tui.env._types import (
    DirEntry,
    ExecResult,
    FileInfo,
    OutputCallback,
    OutputWindow,
    SpillPolicy,
)

MAX_TIMEOUT_SECONDS = 2147483.647
"""The largest timeout (2**31 - 1 milliseconds), as the reference allows."""

_P = ParamSpec("_P")
_T = TypeVar("_T")


def _never() -> bool:
    return False


def check_timeout(timeout: float | None) -> None:
    """Validate an ``exec`` timeout in seconds (R120).

    Raises:
        FileError: ``invalid`` with the reference's messages.
    """
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise FileError("invalid", "Invalid timeout: must be a finite number of seconds")
    if not math.isfinite(timeout):
        raise FileError("invalid", "Invalid timeout: must be a finite number of seconds")
    if timeout > MAX_TIMEOUT_SECONDS:
        raise FileError("invalid", "Invalid timeout: maximum is 2147483.647 seconds")
    if timeout <= 0:
        raise FileError("invalid", "Invalid timeout: must be greater than 0 seconds")


def find_shell(path: str | None, candidates: Sequence[str] = ("/bin/bash",)) -> list[str]:
    """The argv prefix that runs a command string: bash, else ``sh -c`` (R120).

    Args:
        path: The ``PATH`` to search after the fixed candidates.
        candidates: Absolute paths of bash tried first.

    Returns:
        ``[shell, "-c"]``.

    Raises:
        FileError: ``shell_unavailable`` when neither bash nor sh is found.
    """
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return [candidate, "-c"]
    for name in ("bash", "sh"):
        found = shutil.which(name, path=path)
        if found is not None:
            return [found, "-c"]
    raise FileError("shell_unavailable", "No shell found: install bash or sh, or put one on PATH")


class LocalEnv:
    """The ``ExecutionEnv`` of this machine.

    Args:
        cwd: The working directory (``~`` and relative paths resolve against the
            process's home and current directory). It need not exist yet.
        allow_env: Names or globs of inherited variables children may see even
            though they look like secrets (``_secrets.SECRET_NAME_PATTERNS``).
        id: The identity of this file system for R121 (default ``"local"``: every
            ``LocalEnv`` of a process sees the same files).
        home: What ``~`` means (default: the user's home directory).
        kill_grace: Seconds between ``SIGTERM`` and ``SIGKILL`` when a command's
            process group is killed.
        environ: The environment children inherit, before scrubbing (default:
            this process's environment, read at each ``exec``).
        secret_names: Variables that hold secrets whatever their names (the key
            variables of configured providers): children never inherit them
            (unless ``allow_env`` names them), and their values are hidden in
            spill files and job logs as the secret-looking ones are.
    """

    def __init__(
        self,
        cwd: str,
        *,
        allow_env: Iterable[str] = (),
        id: str = "local",
        home: str | None = None,
        kill_grace: float = 0.5,
        environ: Mapping[str, str] | None = None,
        secret_names: Iterable[str] = (),
    ) -> None:
        self._home = os.path.abspath(os.path.expanduser("~") if home is None else home)
        self._cwd = resolve_path(cwd, cwd=os.getcwd(), home=self._home)
        self._id = id
        self._allow_env = tuple(allow_env)
        self._kill_grace = kill_grace
        self._environ = environ
        self._secret_names = frozenset(secret_names)
        self._groups: set[ProcessGroup] = set()
        self._spills: set[str] = set()
        self._marks: set[str] = set()

    def __repr__(self) -> str:
        return f"LocalEnv({self._cwd!r}, id={self._id!r})"

    @property
    def cwd(self) -> str:
        """The absolute working directory."""
        return self._cwd

    @property
    def id(self) -> str:
        """The identity of this file system (keys R121's queue)."""
        return self._id

    def absolute_path(self, path: str) -> str:
        """Resolve ``path`` against ``cwd`` and the home directory, lexically."""
        return resolve_path(path, cwd=self._cwd, home=self._home)

    def join_path(self, *parts: str) -> str:
        """Join path parts and normalize the result."""
        return join_paths(*parts)

    def _start(self, path: str, abort: asyncio.Event | None) -> str:
        absolute = self.absolute_path(path)
        if abort is not None and abort.is_set():
            raise aborted(absolute)
        return absolute

    async def _run(self, function: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        return await asyncio.to_thread(function, *args, **kwargs)

    # -- reading -----------------------------------------------------------------

    async def canonical_path(self, path: str, *, abort: asyncio.Event | None = None) -> str:
        """The real path of an existing file, every symlink resolved."""
        return await self._run(_files.canonical_path, self._start(path, abort))

    async def file_info(self, path: str, *, abort: asyncio.Event | None = None) -> FileInfo:
        """Kind, size and mtime of ``path``; a final symlink is described, not followed."""
        return await self._run(_files.file_info, self._start(path, abort))

    async def exists(self, path: str, *, abort: asyncio.Event | None = None) -> bool:
        """Whether ``file_info`` would succeed (a dangling symlink exists)."""
        return await self._run(_files.exists, self._start(path, abort))

    async def list_dir(self, path: str, *, abort: asyncio.Event | None = None) -> list[DirEntry]:
        """Every entry of a directory, sorted by name."""
        return await self._run(_files.list_dir, self._start(path, abort))

    async def open_dir_reader(
        self, path: str, *, page_size: int = 256, abort: asyncio.Event | None = None
    ) -> LocalDirReader:
        """Open a directory for paged reading."""
        reader = LocalDirReader(self._start(path, abort), page_size)
        await self._run(reader.open)
        return reader

    async def read_text_file(
        self, path: str, *, errors: TextErrors = "strict", abort: asyncio.Event | None = None
    ) -> str:
        """A whole file decoded as UTF-8 (``errors="replace"`` for U+FFFD)."""
        absolute = self._start(path, abort)
        check = _never if abort is None else abort.is_set
        data = await self._run(_files.read_bytes, absolute, None, check)
        return _files.decode(data, absolute, errors)

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
        check = _never if abort is None else abort.is_set
        data = await self._run(_files.read_head_lines, absolute, max_lines, check)
        text = _files.decode(data, absolute, errors)
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()  # a newline ends its line; it does not start an empty one
        return lines[:max_lines]

    async def read_binary_file(
        self, path: str, *, max_bytes: int | None = None, abort: asyncio.Event | None = None
    ) -> bytes:
        """A whole file's bytes, or only its first ``max_bytes``."""
        absolute = self._start(path, abort)
        check = _never if abort is None else abort.is_set
        return await self._run(_files.read_bytes, absolute, max_bytes, check)

    async def open_binary_reader(
        self, path: str, *, no_follow: bool = False, abort: asyncio.Event | None = None
    ) -> LocalBinaryReader:
        """Open a regular file for positional reads; ``no_follow`` refuses a final symlink."""
        absolute = self._start(path, abort)
        fd = await self._run(_files.open_for_reading, absolute, no_follow=no_follow)
        return LocalBinaryReader(fd, absolute)

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

        With ``beneath`` (an absolute directory) the write is one descriptor-relative
        walk that never leaves it (``_beneath``): a path or link leading outside is
        refused with ``permission_denied`` naming the path.
        """
        absolute = self._start(path, abort)
        data = content.encode() if isinstance(content, str) else content
        check = _never if abort is None else abort.is_set
        if beneath is None:
            await self._run(_files.write_file, absolute, data, check)
        else:
            await self._run(write_beneath, self.absolute_path(beneath), absolute, data, check)

    async def append_file(
        self, path: str, content: str | bytes, *, abort: asyncio.Event | None = None
    ) -> None:
        """Append to a file, creating it and its parents when missing."""
        absolute = self._start(path, abort)
        data = content.encode() if isinstance(content, str) else content
        await self._run(_files.append_file, absolute, data)

    async def truncate_file(
        self, path: str, size: int, *, abort: asyncio.Event | None = None
    ) -> None:
        """Cut or extend (with zeros) an existing file to ``size`` bytes; never creates."""
        await self._run(_files.truncate_file, self._start(path, abort), size)

    async def flush_file(self, path: str, *, abort: asyncio.Event | None = None) -> None:
        """Fsync an existing file."""
        await self._run(_files.flush_file, self._start(path, abort))

    async def rename_file(
        self, source: str, target: str, *, abort: asyncio.Event | None = None
    ) -> None:
        """Move ``source`` to ``target``, atomically replacing a file there."""
        absolute_target = self.absolute_path(target)
        await self._run(_files.rename_file, self._start(source, abort), absolute_target)

    async def create_dir(
        self, path: str, *, recursive: bool = False, abort: asyncio.Event | None = None
    ) -> None:
        """Create a directory; ``recursive`` creates parents and accepts an existing one."""
        await self._run(_files.create_dir, self._start(path, abort), recursive)

    async def remove(
        self,
        path: str,
        *,
        recursive: bool = False,
        force: bool = False,
        abort: asyncio.Event | None = None,
    ) -> None:
        """Remove a file, link or directory; ``force`` accepts a missing path."""
        await self._run(_files.remove, self._start(path, abort), recursive, force)

    async def create_temp_dir(
        self, prefix: str = "pi-", *, abort: asyncio.Event | None = None
    ) -> str:
        """Create a fresh directory in the system temp directory."""
        if abort is not None and abort.is_set():
            raise aborted()
        return await self._run(_files.create_temp_dir, prefix)

    async def create_temp_file(
        self,
        *,
        prefix: str = "pi-",
        suffix: str = "",
        abort: asyncio.Event | None = None,
    ) -> str:
        """Create a fresh empty file in the system temp directory."""
        if abort is not None and abort.is_set():
            raise aborted()
        return await self._run(_files.create_temp_file, prefix, suffix)

    # -- processes ---------------------------------------------------------------

    def child_environment(
        self, env: Mapping[str, str] | None = None, *, inherit_env: bool = True
    ) -> dict[str, str]:
        """The environment a child gets: the scrubbed inherited one, then ``env``.

        Args:
            env: Variables the caller sets explicitly (kept even if they look secret).
            inherit_env: Whether to start from this process's (scrubbed) environment.

        Returns:
            A new dict.
        """
        environ: dict[str, str] = {}
        if inherit_env:
            base = os.environ if self._environ is None else self._environ
            environ = scrub_environment(base, self._allow_env, self._secret_names)
        if env is not None:
            environ.update(env)
        return environ

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
        move: asyncio.Event | None = None,
    ) -> ExecResult:
        """Run a command and wait for it (see ``ExecutionEnv.exec``).

        Args:
            command: A string run by bash (``sh -c`` without bash), or an argv.
            cwd: Working directory (default ``self.cwd``; relative to it).
            env: Variables to set, kept even when they look like secrets.
            inherit_env: Whether the child starts from this process's environment,
                scrubbed of secrets.
            timeout: Seconds before the process group is killed.
            on_output: Receives raw chunks tagged ``stdout``/``stderr``.
            spill: When to also write the complete output to a temp file.
            window: The kept tail of a tail-retaining tool (R105).
            abort: Kills the process group when set.
            end_background: When the command ends, also end every process it left
                running (background jobs, ``nohup``, ``setsid``; issue 13).
            move: When set while the command runs, return at once with it as a
                background job (``ExecResult.moved``, a ``RunningJob``; Ctrl+B).

        Returns:
            The exit code and the spill file, if any (deleted by ``cleanup()``).

        Raises:
            FileError: ``invalid`` (timeout, empty argv), ``not_found`` (cwd or
                program), ``shell_unavailable``, ``timeout``, ``aborted``.
        """
        check_timeout(timeout)
        directory = self._cwd if cwd is None else self.absolute_path(cwd)
        if abort is not None and abort.is_set():
            raise aborted()
        environ = self.child_environment(env, inherit_env=inherit_env)
        environ[MARK_NAME] = mark = call_mark()  # how its strays are found (_strays)
        self._marks.add(mark)
        if isinstance(command, str):
            argv = [*find_shell(environ.get("PATH", os.defpath)), command]
        else:
            argv = list(command)
            if not argv:
                raise FileError("invalid", "Cannot run an empty argv: give at least a program")
        if not await self._run(os.path.isdir, directory):
            raise FileError(
                "not_found", f"Working directory does not exist: {directory}", directory
            )
        try:
            result = await run_command(
                argv,
                cwd=directory,
                environ=environ,
                timeout=timeout,
                on_output=on_output,
                spill=spill,
                window=window,
                abort=abort,
                kill_grace=self._kill_grace,
                groups=self._groups,
                secrets=self._secret_values(),
                end_background=end_background,
                move=move,
                marks=self._marks,
            )
        except FileError as error:
            if error.spill_path:
                self._spills.add(error.spill_path)
            raise
        if result.spill_path:
            self._spills.add(result.spill_path)
        if result.moved is not None:
            self._spills.add(result.moved.log_path)  # a kept job's log moved away first
        return result

    async def start_job(
        self,
        command: str,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = True,
    ) -> RunningJob:
        """Start ``command`` as a background job, its output redacted into a log (``_jobs``).

        The job is this environment's until it is kept: ``cleanup()`` ends it.

        Raises:
            FileError: ``not_found`` (cwd or shell), ``shell_unavailable``, a spawn error.
        """
        directory = self._cwd if cwd is None else self.absolute_path(cwd)
        environ = self.child_environment(env, inherit_env=inherit_env)
        environ[MARK_NAME] = mark = call_mark()
        argv = [*find_shell(environ.get("PATH", os.defpath)), command]
        if not await self._run(os.path.isdir, directory):
            raise FileError(
                "not_found", f"Working directory does not exist: {directory}", directory
            )
        job = spawn_job(
            argv,
            cwd=directory,
            environ=environ,
            mark=mark,
            kill_grace=self._kill_grace,
            groups=self._groups,
            marks=self._marks,
            secrets=self._secret_values(),
        )
        self._spills.add(job.log_path)  # deleted at cleanup unless the job was kept (moved)
        return job

    def _secret_values(self) -> tuple[bytes, ...]:
        """Values of this process's secret-looking variables (hidden in spills and job logs)."""
        base = os.environ if self._environ is None else self._environ
        return tuple(
            value.encode("utf-8", "surrogateescape")
            for name, value in base.items()
            if len(value) >= 8 and (is_secret_name(name) or name in self._secret_names)
        )

    async def cleanup(self) -> None:
        """End every process its commands left and delete their spill files.

        All are this environment's own (issue 13): the groups its commands led,
        the processes carrying their marks (``setsid``, ``nohup``, daemons), the
        ``pi-output-*.log`` files their results named.
        """
        groups = [group for group in self._groups if group.alive()]
        self._groups.clear()
        await asyncio.gather(*(group.kill(self._kill_grace) for group in groups))
        marks, self._marks = self._marks, set()
        await end_processes(carrying(marks), self._kill_grace)
        spills, self._spills = self._spills, set()
        for path in spills:
            with contextlib.suppress(OSError):
                os.unlink(path)
