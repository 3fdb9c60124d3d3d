"""What the editor asks the controller for: ``@`` path completion and prompt history (issue 8, 12).

Plain file-system functions, no harness: the controller calls them with the
shown conversation's working directory and the session's key.

- ``complete_path``: the directory's entries starting with what follows ``@``,
  relative to the shown conversation's working directory (issue 12: a demo's
  workspace, not the directory ``pidurable`` was started in); a bare name of two
  characters or more also finds files anywhere below it whose path contains it
  (``ProjectFiles``), after the entries of the directory itself.
- ``read_history`` / ``remember``: the earlier prompts of a directory's
  sessions, ``history.txt`` beside them (NUL-separated, the newest 500 kept).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from pi_durable_tui.app.files import SKIPPED_DIRS, ProjectFiles, sessions_dir

HISTORY_NAME = "history.txt"
HISTORY_KEPT = 500
COMPLETIONS = 50
"""Paths ``complete_path`` offers at most."""


def complete_path(root: str, prefix: str, files: ProjectFiles) -> list[str]:
    """Paths for ``@prefix`` (at most ``COMPLETIONS``), relative to ``root``.

    Args:
        root: The shown conversation's working directory.
        prefix: What follows ``@``.
        files: The project's file index under ``root`` (for a bare name).
    """
    directory, _, stem = prefix.rpartition("/")
    base = Path(root) / directory
    found: list[str] = []
    with contextlib.suppress(OSError):
        for entry in sorted(os.scandir(base), key=lambda e: e.name):
            if entry.name in SKIPPED_DIRS or not entry.name.startswith(stem):
                continue
            if stem == "" and entry.name.startswith("."):
                continue
            name = f"{directory}/{entry.name}" if directory else entry.name
            found.append(name + "/" if entry.is_dir() else name)
            if len(found) == COMPLETIONS:
                return found
    if directory or len(stem) < 2:
        return found
    listed = set(found)
    found += [path for path in files.matching(stem, COMPLETIONS) if path not in listed]
    return found[:COMPLETIONS]


def read_history(session_key: str) -> list[str]:
    """Earlier prompts of the sessions filed under ``session_key``, oldest first."""
    path = sessions_dir(session_key) / HISTORY_NAME
    try:
        return [line for line in path.read_text("utf-8").split("\0") if line]
    except OSError:
        return []


def remember(session_key: str, text: str) -> None:
    """Add ``text`` as the newest prompt (once; a history that cannot be written is skipped)."""
    path = sessions_dir(session_key) / HISTORY_NAME
    with contextlib.suppress(OSError):
        lines = [line for line in read_history(session_key) if line != text][-(HISTORY_KEPT - 1) :]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\0".join([*lines, text]) + "\0", "utf-8")
