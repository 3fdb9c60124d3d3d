"""The working directory's files for ``@`` completion: a walk bounded in time, ranked matches.

``@src/ma`` lists a directory as a shell does (``AgentController.complete_path``);
a bare name such as ``@parser`` also finds files anywhere below the working
directory whose path contains it, as Claude Code and Codex do. Completion is
synchronous and runs on the event loop, so ``ProjectFiles`` walks the tree at
most ``WALK_BUDGET_S`` per call and resumes where it stopped: the first
keystrokes in a large repository search what was walked so far, and the next
ones see more. It skips hidden entries and generated directories, keeps at most
``MAX_FILES`` paths, and walks again once its listing is ``FRESH_S`` old.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterator

SKIPPED_DIRS = frozenset(
    {".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache"}
)
"""Directories never listed or walked (hidden ones are skipped by the walk as well)."""

MAX_FILES = 20_000
"""Paths kept from one walk; a larger tree is searched in its first ``MAX_FILES``."""

WALK_BUDGET_S = 0.015
"""How long one completion may walk: a keystroke's echo must not wait for a tree."""

FRESH_S = 10.0
"""How old a complete listing may be before the next completion walks again."""


class ProjectFiles:
    """Files below ``root``, found by part of their path.

    Args:
        root: The working directory.
        clock: Seconds, monotonic (a test drives it).
    """

    def __init__(self, root: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._root = root
        self._clock = clock
        self._listing: list[str] = []
        """The last complete walk (or the one in progress, before any completed)."""
        self._walking: list[str] = []
        self._walk: Iterator[str] | None = None
        self._walked_at = -math.inf

    @property
    def root(self) -> str:
        """The directory walked."""
        return self._root

    def matching(self, needle: str, limit: int) -> list[str]:
        """Paths containing ``needle`` (any case): name prefix first, then name, then path.

        Args:
            needle: Part of a file name or path.
            limit: How many paths to return at most.

        Returns:
            Relative paths, best first; shorter paths first within a rank.
        """
        self._advance()
        wanted = needle.lower()
        ranked: list[tuple[int, int, str]] = []
        for path in self._listing:
            lowered = path.lower()
            if wanted not in lowered:
                continue
            name = lowered.rpartition("/")[2]
            rank = 0 if name.startswith(wanted) else 1 if wanted in name else 2
            ranked.append((rank, len(path), path))
        ranked.sort()
        return [path for _, _, path in ranked[:limit]]

    def _advance(self) -> None:
        now = self._clock()
        if self._walk is None:
            if now - self._walked_at < FRESH_S:
                return
            self._walk, self._walking = _walk(self._root), []
        deadline = now + WALK_BUDGET_S
        finished = True
        for path in self._walk:
            self._walking.append(path)
            if len(self._walking) >= MAX_FILES:
                break
            if self._clock() >= deadline:
                finished = False
                break
        if finished:
            self._walk, self._walked_at = None, self._clock()
            self._listing = self._walking
        elif self._walked_at == -math.inf:
            # REMINDER: until a first walk completes, search the part walked so far.
            self._listing = self._walking


def _walk(root: str) -> Iterator[str]:
    """Yield the relative paths of files below ``root``, depth first, names sorted."""
    pending = [""]
    while pending:
        relative = pending.pop()
        try:
            with os.scandir(os.path.join(root, relative)) as entries:
                found = sorted(entries, key=lambda entry: entry.name)
        except OSError:
            continue
        directories = []
        for entry in found:
            if entry.name.startswith(".") or entry.name in SKIPPED_DIRS:
                continue
            path = f"{relative}/{entry.name}" if relative else entry.name
            try:
                is_directory = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_directory:
                directories.append(path)
            else:
                yield path
        pending.extend(reversed(directories))
