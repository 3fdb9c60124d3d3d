"""Project context files: ``AGENTS.md`` / ``CLAUDE.md`` from the filesystem root down to cwd.

Like Pi and Claude Code, the agent reads the global file
(``$PIDURABLE_HOME/AGENTS.md``), then one file per directory from the root down to
the working directory (``AGENTS.md`` preferred over ``CLAUDE.md`` in the same
directory), so that the most specific instructions come last.

When the tools work on another host (issue 17), the project's files are that
host's: ``discover_context_files_in`` reads them through the execution
environment, asking for every candidate at once (over SSH, the SFTP requests
travel together, so the whole walk costs about one round trip, not one per
directory). The global file stays this machine's.
"""

from __future__ import annotations

import asyncio
import os
import posixpath
from dataclasses import dataclass
from pathlib import Path

from pi_durable_tui.app._sessions import home
from pi_durable_tui.env import ExecutionEnv, FileError

NAMES = ("AGENTS.md", "CLAUDE.md")
MAX_BYTES = 256 * 1024
"""A context file larger than this is cut (with a note): it is meant as instructions."""


@dataclass(frozen=True, slots=True)
class ContextFile:
    """One context file and its text."""

    path: Path
    text: str


def _read(directory: Path) -> ContextFile | None:
    for name in NAMES:
        path = directory / name
        try:
            with path.open("rb") as handle:
                data = handle.read(MAX_BYTES + 1)
        except OSError:
            continue
        text = data[:MAX_BYTES].decode("utf-8", "replace")
        if len(data) > MAX_BYTES:
            text += f"\n[... {path} is longer than {MAX_BYTES // 1024} KiB; the rest was not read]"
        return ContextFile(path, text)
    return None


def discover_context_files(cwd: str | os.PathLike[str]) -> list[ContextFile]:
    """Return the context files for ``cwd``: global first, then root down to cwd."""
    found: list[ContextFile] = []
    global_file = _read(home())
    if global_file is not None:
        found.append(global_file)
    real = Path(os.path.realpath(os.fspath(cwd)))
    for directory in [*reversed(real.parents), real]:
        context = _read(directory)
        if context is not None and all(c.path != context.path for c in found):
            found.append(context)
    return found


async def _read_in(env: ExecutionEnv, path: str) -> bytes | None:
    try:
        return await env.read_binary_file(path, max_bytes=MAX_BYTES + 1)
    except FileError:
        return None


def global_context_file() -> ContextFile | None:
    """``$PIDURABLE_HOME/AGENTS.md`` (or ``CLAUDE.md``), if there is one."""
    return _read(home())


async def discover_context_files_in(env: ExecutionEnv) -> list[ContextFile]:
    """The project's context files of ``env``'s working directory, read through ``env``.

    From the root down to the real working directory, as ``discover_context_files``;
    the paths are ``env``'s, and the global file is not among them
    (``global_context_file``).
    """
    found: list[ContextFile] = []
    try:
        real = await env.canonical_path(env.cwd)
    except FileError:
        real = env.cwd
    directories = [real]
    while directories[-1] != posixpath.dirname(directories[-1]):
        directories.append(posixpath.dirname(directories[-1]))
    directories.reverse()
    candidates = [posixpath.join(d, name) for d in directories for name in NAMES]
    contents = await asyncio.gather(*(_read_in(env, path) for path in candidates))
    by_path = dict(zip(candidates, contents, strict=True))
    for directory in directories:
        for name in NAMES:
            path = posixpath.join(directory, name)
            data = by_path[path]
            if data is None:
                continue
            text = data[:MAX_BYTES].decode("utf-8", "replace")
            if len(data) > MAX_BYTES:
                text += (
                    f"\n[... {path} is longer than {MAX_BYTES // 1024} KiB; the rest was not read]"
                )
            found.append(ContextFile(Path(path), text))
            break
    return found
