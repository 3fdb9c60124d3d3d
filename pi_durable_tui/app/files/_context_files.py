"""Project context files: ``AGENTS.md`` / ``CLAUDE.md`` from the filesystem root down to cwd.

Like Pi and Claude Code, the agent reads the global file
(``$PIDURABLE_HOME/AGENTS.md``), then one file per directory from the root down to
the working directory (``AGENTS.md`` preferred over ``CLAUDE.md`` in the same
directory), so that the most specific instructions come last.

When the tools work on another host (issue 17), the project's files are that
host's: the agent part reads them through the execution environment, with the
candidates (``context_candidates``) and the cut (``context_text``) of this
module, so both walks choose and cut the same files.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from pathlib import Path

from pi_durable_tui.app.files._home import home

NAMES = ("AGENTS.md", "CLAUDE.md")
MAX_BYTES = 256 * 1024
"""A context file larger than this is cut (with a note): it is meant as instructions."""


@dataclass(frozen=True, slots=True)
class ContextFile:
    """One context file and its text."""

    path: Path
    text: str


def context_text(path: str, data: bytes) -> str:
    """The text of a context file read as its first ``MAX_BYTES + 1`` bytes (cut, with a note)."""
    text = data[:MAX_BYTES].decode("utf-8", "replace")
    if len(data) > MAX_BYTES:
        text += f"\n[... {path} is longer than {MAX_BYTES // 1024} KiB; the rest was not read]"
    return text


def context_candidates(real_cwd: str) -> list[list[str]]:
    """For each directory from ``/`` down to ``real_cwd``: the paths to try, in order."""
    directories = [real_cwd]
    while directories[-1] != posixpath.dirname(directories[-1]):
        directories.append(posixpath.dirname(directories[-1]))
    return [[posixpath.join(d, name) for name in NAMES] for d in reversed(directories)]


def _read(directory: Path) -> ContextFile | None:
    for name in NAMES:
        path = directory / name
        try:
            with path.open("rb") as handle:
                data = handle.read(MAX_BYTES + 1)
        except OSError:
            continue
        return ContextFile(path, context_text(str(path), data))
    return None


def global_context_file() -> ContextFile | None:
    """``$PIDURABLE_HOME/AGENTS.md`` (or ``CLAUDE.md``), if there is one."""
    return _read(home())


def discover_context_files(cwd: str | os.PathLike[str]) -> list[ContextFile]:
    """Return the context files for ``cwd``: global first, then root down to cwd."""
    found: list[ContextFile] = []
    global_file = global_context_file()
    if global_file is not None:
        found.append(global_file)
    real = Path(os.path.realpath(os.fspath(cwd)))
    for directory in [*reversed(real.parents), real]:
        context = _read(directory)
        if context is not None and all(c.path != context.path for c in found):
            found.append(context)
    return found
