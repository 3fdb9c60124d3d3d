"""Where ``/export`` writes: the file named on its line, or a fresh name in the session's directory.

``~`` is expanded as a shell would (``/export ~/notes/x.md``); a relative path is
in the session's directory, as the default name is, whatever directory the
process runs in. A file that cannot be opened (a directory that does not exist,
a directory in its place, no permission) is refused with words that say which
and that nothing was written (``ActionRefused``): a notice, not a crash.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TextIO

from pi_durable_tui.app._ports import ActionRefused, ExportFormat

_SUFFIXES: dict[ExportFormat, str] = {"jsonl": "jsonl", "markdown": "md", "html": "html"}


def open_export_file(cwd: str, fmt: ExportFormat, path: str | None) -> tuple[Path, TextIO]:
    """Open the export's file for writing; returns its full path and the open file.

    Args:
        cwd: The session's directory (relative paths and the default name are there).
        fmt: The format (the default name's suffix).
        path: The path typed, or ``None`` for ``pidurable-<seconds>.<suffix>``.

    Raises:
        ActionRefused: The file cannot be opened for writing.
    """
    name = path or f"pidurable-{int(time.time())}.{_SUFFIXES[fmt]}"
    target = Path(cwd, os.path.expanduser(name))
    try:
        return target, target.open("w", encoding="utf-8")
    except OSError as error:
        raise ActionRefused(
            f"Cannot export to {target}: {_why(target, error)}; nothing was written."
        ) from None


def _why(target: Path, error: OSError) -> str:
    if isinstance(error, FileNotFoundError):
        return f"the directory {target.parent} does not exist (create it first)"
    if isinstance(error, IsADirectoryError):
        return "it is a directory: name a file in it"
    if isinstance(error, PermissionError):
        return "permission denied"
    return error.strerror or type(error).__name__
