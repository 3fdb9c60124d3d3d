"""Paths as the coding tools see them: repaired, resolved, and kept inside the workspace.

Every tool repairs the path the model gave (Unicode spaces, a leading ``@``;
reference 3) and resolves it against the environment (``~``, relative to the
working directory). ``write`` and ``edit`` refuse a path outside the working
directory unless the settings allow it (``allow_outside_cwd``), with an error that
says so and how to change it.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from pi_durable_tui.env import ExecutionEnv, FileMutationQueue
from pi_durable_tui.tools._paths import normalize_tool_path

MUTATIONS = FileMutationQueue()
"""The process's one mutation queue: ``write`` and ``edit`` of one file take turns (R121)."""

AllowOutside = bool | Callable[[], bool]
"""Whether ``write``/``edit`` may touch files outside the working directory (read at each call)."""


class OutsideWorkspace(PermissionError):
    """A mutation outside the working directory that the settings do not allow."""


def resolve_tool_path(env: ExecutionEnv, raw: str) -> tuple[str, str]:
    """Return ``(display path, absolute path)`` for a path the model gave."""
    display = normalize_tool_path(raw)
    return display, env.absolute_path(display)


async def check_inside(
    env: ExecutionEnv, absolute: str, allow: AllowOutside, verb: str
) -> str | None:
    """Refuse a mutation outside the working directory unless allowed.

    Symlinks are resolved first (a link inside the workspace pointing outside it is
    outside), falling back to the parent directory for a file that does not exist.

    Returns:
        The directory the write must stay beneath (``env.cwd``), or None when the
        settings allow writes outside it.

    Raises:
        OutsideWorkspace: With a message naming the path and the workspace.
    """
    if allow() if callable(allow) else allow:
        return None
    root = await _canonical(env, env.cwd)
    target = await _canonical(env, absolute)
    if target == root or target.startswith(root.rstrip(os.sep) + os.sep):
        return env.cwd
    raise OutsideWorkspace(
        f"Refusing to {verb} {absolute}: it is outside the working directory {root}. "
        "Only the user can allow changes outside it; ask them if it is needed."
    )


async def _canonical(env: ExecutionEnv, path: str) -> str:
    from pi_durable_tui.env import FileError

    try:
        return await env.canonical_path(path)
    except FileError:
        parent, name = os.path.split(path)
        if parent == path:
            return path
        return os.path.join(await _canonical(env, parent), name)
