"""The ``ls`` tool: the entries of one directory, sorted, directories marked with ``/``.

Entries ``.gitignore`` ignores and ``.git`` are left out, by the rules of
``_ignore`` (the directory's own ``.gitignore`` and those above it); dotfiles are
listed. A symlink is marked with ``@``. At most ``limit`` entries (500 by
default), then a note. ``ls`` lists through the environment only (no engine):
one ``list_dir``. It only reads, so it is replay-safe.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from pi_durable_tui.harness import Tool, ToolApi, ToolResult
from pi_durable_tui.tools.search._ignore import GIT_DIR, read_ignore_layer, rules_above
from pi_durable_tui.tools.search._roots import (
    SearchPathError,
    bounded,
    define_search_tool,
    open_root,
)

DEFAULT_LIMIT = 500
"""Entries listed when the model gives no ``limit``."""

DESCRIPTION = (
    "List a directory's entries, sorted alphabetically, directories with a trailing '/'. "
    "Includes dotfiles; leaves out .git and what .gitignore ignores. Optional: path (default "
    f"the working directory), limit (default {DEFAULT_LIMIT} entries)."
)

_MARKS = {"directory": "/", "symlink": "@"}


class LsArgs(BaseModel):
    """Arguments of ``ls``."""

    path: str | None = Field(default=None, description="Directory to list")
    limit: int = Field(default=DEFAULT_LIMIT, ge=1, description="Most entries returned")


def create_ls_tool() -> Tool[LsArgs]:
    """Create the ``ls`` tool (read-only, replay-safe)."""

    async def execute(args: LsArgs, api: ToolApi) -> ToolResult:
        env = api.env
        root = await open_root(api, args.path)
        if not root.is_dir:
            raise SearchPathError(f"{root.display} is not a directory; use read to see a file")
        rules = await rules_above(env, root.absolute, api.aborted)
        rules = rules.with_layer(await read_ignore_layer(env, root.absolute, api.aborted))
        entries = [
            entry
            for entry in await env.list_dir(root.absolute, abort=api.aborted)
            if entry.name != GIT_DIR
            and not rules.ignores(
                env.join_path(root.absolute, entry.name), is_dir=entry.kind == "directory"
            )
        ]
        shown = entries[: args.limit]
        details = {"path": root.display, "count": len(entries)}
        if not shown:
            return ToolResult(content="(empty directory)", details=details)
        if len(entries) > args.limit:
            api.diagnostic(
                "info",
                f"Showing {args.limit} of {len(entries)} entries. Use limit={len(entries)} "
                "to see all.",
                "limit",
            )
        lines = [entry.name + _MARKS.get(entry.kind, "") for entry in shown]
        return ToolResult(content=bounded(api, lines, "Use a lower limit."), details=details)

    return define_search_tool("ls", DESCRIPTION, LsArgs, execute)
