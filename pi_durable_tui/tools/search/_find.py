"""The ``find`` tool: files whose path matches a glob, one per line.

The glob is gitignore-style, matched against each file's path relative to the
search root: ``*.py`` matches at any depth, ``src/**/*.ts`` from the root,
``/setup.py`` only at the root. Files only (directories are walked, not listed),
sorted depth-first by name, at most ``limit`` (1000 by default) with a note when
more matched. ``.gitignore`` is respected and ``.git/`` skipped, as by ``grep``.
``find`` only reads, so it is replay-safe.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from pi_durable_tui.harness import Tool, ToolApi, ToolResult
from pi_durable_tui.tools.search._engine import FileCollector, SearchEngine, run_until_stopped
from pi_durable_tui.tools.search._globs import Patterns
from pi_durable_tui.tools.search._roots import (
    SearchPathError,
    bounded,
    define_search_tool,
    open_root,
    shown_path,
)

DEFAULT_LIMIT = 1000
"""Files listed when the model gives no ``limit``."""

DESCRIPTION = (
    "Find files by glob pattern (gitignore-style: '*.py' matches at any depth, "
    "'src/**/*.ts' from the search path). Returns matching file paths, one per line, sorted. "
    "Respects .gitignore and skips .git/. Optional: path (directory, default the working "
    f"directory), limit (default {DEFAULT_LIMIT} results)."
)


class FindArgs(BaseModel):
    """Arguments of ``find``."""

    pattern: str = Field(description="Glob pattern to match files, e.g. '*.py' or 'src/**/*.ts'")
    path: str | None = Field(default=None, description="Directory to search")
    limit: int = Field(default=DEFAULT_LIMIT, ge=1, description="Most results returned")


def create_find_tool(engine: SearchEngine) -> Tool[FindArgs]:
    """Create the ``find`` tool (read-only, replay-safe).

    Args:
        engine: Lists the files (``AutoEngine`` picks ``rg`` or the walk).
    """

    async def execute(args: FindArgs, api: ToolApi) -> ToolResult:
        root = await open_root(api, args.path)
        if not root.is_dir:
            raise SearchPathError(f"{root.display} is not a directory; find searches directories")
        patterns = Patterns([args.pattern])

        def keep(path: str) -> bool:
            return patterns.verdict(path, is_dir=False) is True

        collector = FileCollector(keep, args.limit)
        await run_until_stopped(engine.files(api.env, root.absolute, collector, api.aborted))
        found = collector.result()
        details = {"path": root.display, "count": len(found.paths), "more": found.more}
        if not found.paths:
            return ToolResult(content="No files found matching pattern", details=details)
        if found.more:
            api.diagnostic(
                "info",
                f"Showing the first {len(found.paths)} files; more match. Use limit="
                f"{args.limit * 2} for more, or narrow the pattern or path.",
                "limit",
            )
        cwd = api.env.cwd
        lines = [shown_path(cwd, root, path) for path in found.paths]
        text = bounded(api, lines, "Narrow the pattern or path.")
        return ToolResult(content=text, details=details)

    return define_search_tool("find", DESCRIPTION, FindArgs, execute)
