"""Which paths the search tools skip: ``.git`` and what ``.gitignore`` files ignore.

The rules are ripgrep's (run as ``rg --no-require-git --no-ignore-dot
--no-ignore-global --no-ignore-exclude``), so the pure-Python engine and ``rg``
skip the same files:

- An entry named ``.git`` (directory or worktree file) is always skipped.
- A ``.gitignore`` applies to the directory holding it and everything below;
  the file nearest to a path decides (the last matching pattern in it wins, so
  ``!keep.log`` re-includes). Patterns follow gitignore syntax (``pathspec``).
- The ``.gitignore`` files of the search root's ancestors apply too, up to and
  including the first ancestor that holds a ``.git`` (the repository root), or
  up to ``/`` outside any repository.
- A path given explicitly is searched even when ignored (``grep
  path=node_modules/x`` works): each entry is checked by itself, never through
  its parents (``_globs``), and the root itself is never checked.
- A directory that is ignored is not entered, so nothing under it comes back.

Rules are read through the ``ExecutionEnv``, so they work over SSH as well.
"""

from __future__ import annotations

import asyncio
import posixpath
from dataclasses import dataclass

from pi_durable_tui.env import ExecutionEnv, FileError
from pi_durable_tui.tools.search._globs import Patterns

GIT_DIR = ".git"
"""The entry name every search skips."""
IGNORE_FILE = ".gitignore"
"""The file name whose patterns are honoured."""


@dataclass(frozen=True, slots=True)
class IgnoreLayer:
    """The patterns of one ``.gitignore``, anchored at the directory holding it."""

    base: str
    patterns: Patterns


class IgnoreRules:
    """The ignore layers in force for one directory during a walk (nearest last)."""

    def __init__(self, layers: tuple[IgnoreLayer, ...] = ()) -> None:
        self._layers = layers

    def with_layer(self, layer: IgnoreLayer | None) -> IgnoreRules:
        """These rules plus the ``.gitignore`` of a directory being entered."""
        return self if layer is None else IgnoreRules((*self._layers, layer))

    def ignores(self, path: str, *, is_dir: bool) -> bool:
        """Whether the nearest ``.gitignore`` that has a say about ``path`` ignores it.

        Args:
            path: An absolute path inside the search.
            is_dir: Whether it is a directory (``build/`` patterns match only those).
        """
        if posixpath.basename(path) == GIT_DIR:
            return True
        for layer in reversed(self._layers):
            relative = posixpath.relpath(path, layer.base)
            if relative.startswith(".."):
                continue
            verdict = layer.patterns.verdict(relative, is_dir=is_dir)
            if verdict is not None:
                return verdict
        return False


def parse_ignore_file(text: str, base: str) -> IgnoreLayer | None:
    """The layer of one ``.gitignore``'s text, or ``None`` when it has no patterns."""
    patterns = Patterns(text.splitlines())
    return IgnoreLayer(base, patterns) if patterns else None


async def read_ignore_layer(
    env: ExecutionEnv, directory: str, abort: asyncio.Event | None
) -> IgnoreLayer | None:
    """The layer of ``directory/.gitignore``, ``None`` when missing or unreadable."""
    try:
        text = await env.read_text_file(
            env.join_path(directory, IGNORE_FILE), errors="replace", abort=abort
        )
    except FileError as error:
        if error.code == "aborted":
            raise
        return None
    return parse_ignore_file(text, directory)


async def rules_above(env: ExecutionEnv, root: str, abort: asyncio.Event | None) -> IgnoreRules:
    """The rules the ancestors of a search root put on it (module docstring).

    Args:
        env: The environment whose files are searched.
        root: The absolute search root (a directory or a file).
        abort: Stops the reads when set.
    """
    layers: list[IgnoreLayer] = []
    directory = root
    while True:
        if await env.exists(env.join_path(directory, GIT_DIR), abort=abort):
            break
        parent = posixpath.dirname(directory)
        if parent == directory:
            break
        directory = parent
        layer = await read_ignore_layer(env, directory, abort)
        if layer is not None:
            layers.append(layer)
    return IgnoreRules(tuple(reversed(layers)))
