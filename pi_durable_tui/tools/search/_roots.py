"""Where a search starts, how its paths are shown, and how its text is bounded.

The ``path`` argument is repaired and resolved like every tool's (reference 3,
``resolve_tool_path``) and defaults to the working directory. Found paths are
shown relative to the working directory when they are inside it (so the model
can pass them to ``read`` as they are), absolute otherwise. Output is bounded
like ``read``'s: at most 2,000 lines and 50 KB, whole lines, with one
``truncated`` note saying what was left out and how to narrow the search.
"""

from __future__ import annotations

import posixpath
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel

from pi_durable_tui.env import FileError, FileInfo
from pi_durable_tui.harness import (
    OutputLimits,
    Tool,
    ToolApi,
    ToolResult,
    bound_text,
    define_tool,
)
from pi_durable_tui.tools._read_window import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES
from pi_durable_tui.tools._workspace import resolve_tool_path

LIMITS = OutputLimits(DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, "head")
"""The bound of every search tool's text, as ``read``'s."""


P = TypeVar("P", bound=BaseModel)


def define_search_tool(
    name: str,
    description: str,
    parameters: type[P],
    execute: Callable[[P, ToolApi], Awaitable[ToolResult]],
) -> Tool[P]:
    """Define a search tool: it only reads, so it is replay-safe (R95), bounded by ``LIMITS``.

    It is read-only for the permission engine too: it runs in every mode (issue 13).
    """
    return define_tool(
        name,
        description=description,
        parameters=parameters,
        execute=execute,
        replay="safe",
        read_only=True,
        output=LIMITS,
    )


class SearchPathError(ValueError):
    """A search root that does not exist or has the wrong kind."""


@dataclass(frozen=True, slots=True)
class SearchRoot:
    """A resolved search root.

    Attributes:
        display: The path as the model gave it (repaired), ``.`` by default.
        absolute: The resolved absolute path.
        info: What the path is.
    """

    display: str
    absolute: str
    info: FileInfo

    @property
    def is_dir(self) -> bool:
        """Whether the root is a directory."""
        return self.info.kind == "directory"


async def open_root(api: ToolApi, path: str | None) -> SearchRoot:
    """Resolve and check the ``path`` argument of a search tool.

    Raises:
        SearchPathError: The path does not exist (a message naming it).
    """
    display, absolute = resolve_tool_path(api.env, path or ".")
    try:
        info = await api.env.file_info(absolute, abort=api.aborted)
        if info.kind == "symlink":
            info = await api.env.file_info(
                await api.env.canonical_path(absolute, abort=api.aborted), abort=api.aborted
            )
    except FileError as error:
        if error.code == "not_found":
            raise SearchPathError(f"Path not found: {display}") from None
        raise SearchPathError(f"Cannot search {display}: {error.message}") from None
    return SearchRoot(display, absolute, info)


def shown_path(cwd: str, root: SearchRoot, relative: str) -> str:
    """How a found path is shown: relative to ``cwd`` inside it, else absolute."""
    absolute = posixpath.join(root.absolute, relative) if root.is_dir else root.absolute
    inside = posixpath.relpath(absolute, cwd)
    return absolute if inside == ".." or inside.startswith("../") else inside


def bounded(api: ToolApi, lines: list[str], hint: str) -> str:
    """Join ``lines``, bounded like ``read``; a ``truncated`` note says what was cut.

    Args:
        api: The call's API, for the note.
        lines: The output lines.
        hint: How to see what was cut, appended to the note.
    """
    text = "\n".join(lines)
    kept = bound_text(text, LIMITS)
    if kept.dropped_lines or kept.dropped_bytes:
        shown = len(lines) - kept.dropped_lines
        api.diagnostic(
            "info",
            f"Output truncated to {shown} of {len(lines)} lines (2000 lines / 50.0KB limit). "
            + hint,
            "truncated",
        )
        return kept.text.rstrip("\n")
    return text
