"""The ``grep`` tool: lines matching a regular expression, with ``file:line:`` prefixes.

Output is ``rg``'s: ``path:12:text`` for a matching line and, with ``context``,
``path-11-text`` for the lines around it, groups separated by ``--``. Lines
longer than 500 characters are cut with a note of how much is left; at most
``limit`` matching lines are shown (100 by default), then a note says more
exist. Files are those ``_ignore`` lets through (``.gitignore`` respected,
``.git/`` skipped); ``glob`` narrows them. ``grep`` only reads, so it is
replay-safe: after a crash it simply runs again.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from pi_durable_tui.harness import Tool, ToolApi, ToolResult
from pi_durable_tui.tools.search._engine import (
    GrepLine,
    GrepQuery,
    LineCollector,
    SearchEngine,
    run_until_stopped,
)
from pi_durable_tui.tools.search._roots import bounded, define_search_tool, open_root, shown_path

DEFAULT_LIMIT = 100
"""Matching lines shown when the model gives no ``limit``."""
MAX_LINE_CHARS = 500
"""A longer line is cut here."""

DESCRIPTION = (
    "Search file contents with a regular expression. Returns matching lines as "
    "path:line:text (context lines as path-line-text). Respects .gitignore and skips .git/. "
    "Optional: path (file or directory, default the working directory), glob to filter files "
    "(e.g. '*.py' or 'src/**/*.ts'), ignore_case, context (lines before and after each "
    f"match), limit (default {DEFAULT_LIMIT} matches). Output is truncated to 2000 lines or 50KB."
)


class GrepArgs(BaseModel):
    """Arguments of ``grep``."""

    pattern: str = Field(description="Regular expression to search for")
    path: str | None = Field(default=None, description="File or directory to search")
    glob: str | None = Field(default=None, description="Only files matching this glob")
    ignore_case: bool = Field(default=False, description="Match regardless of case")
    context: int = Field(default=0, ge=0, le=20, description="Lines before and after each match")
    limit: int = Field(default=DEFAULT_LIMIT, ge=1, description="Most matching lines returned")


def format_lines(lines: list[str], found: list[GrepLine], context: int) -> None:
    """Append ``found`` (paths already shown) as ``rg`` prints them to ``lines``."""
    previous: GrepLine | None = None
    for line in found:
        contiguous = (
            previous is not None
            and previous.path == line.path
            and line.number == previous.number + 1
        )
        if context and previous is not None and not contiguous:
            lines.append("--")
        text = line.text[:-1] if line.text.endswith("\r") else line.text
        if len(text) > MAX_LINE_CHARS:
            text = f"{text[:MAX_LINE_CHARS]}... [{len(text) - MAX_LINE_CHARS} more characters]"
        separator = ":" if line.match else "-"
        lines.append(f"{line.path}{separator}{line.number}{separator}{text}")
        previous = line


def create_grep_tool(engine: SearchEngine) -> Tool[GrepArgs]:
    """Create the ``grep`` tool (read-only, replay-safe).

    Args:
        engine: Lists and greps the files (``AutoEngine`` picks ``rg`` or the walk).
    """

    async def execute(args: GrepArgs, api: ToolApi) -> ToolResult:
        root = await open_root(api, args.path)
        query = GrepQuery(
            pattern=args.pattern,
            root=root.absolute,
            glob=args.glob if root.is_dir else None,
            ignore_case=args.ignore_case,
            context=args.context,
            limit=args.limit,
        )
        collector = LineCollector(args.limit, args.context)
        await run_until_stopped(engine.grep(api.env, query, collector, api.aborted))
        result = collector.result()
        cwd = api.env.cwd
        found = [
            GrepLine(shown_path(cwd, root, line.path), line.number, line.text, line.match)
            for line in result.lines
        ]
        details = {
            "path": root.display,
            "matches": result.matches,
            "files": len({line.path for line in found if line.match}),
            "more": result.more,
        }
        if not found:
            return ToolResult(content="No matches found", details=details)
        lines: list[str] = []
        format_lines(lines, found, args.context)
        if result.more:
            api.diagnostic(
                "info",
                f"Showing the first {result.matches} matches; more exist. Use limit="
                f"{args.limit * 2} for more, or narrow the pattern, path or glob.",
                "limit",
            )
        text = bounded(api, lines, "Narrow the pattern, path or glob, or lower limit.")
        return ToolResult(content=text, details=details)

    return define_search_tool("grep", DESCRIPTION, GrepArgs, execute)
