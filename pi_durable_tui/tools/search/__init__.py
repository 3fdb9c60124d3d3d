"""The search tools ``grep``, ``find`` and ``ls``: read-only, replay-safe, bounded like ``read``.

They respect ``.gitignore`` and skip ``.git/`` (``_ignore`` has the rules) and
go through the ``ExecutionEnv`` only, so they work on this machine and over SSH.
Two engines list and grep files with equal results: ``RipgrepEngine`` runs
``rg`` where the files are, ``WalkEngine`` walks and reads in Python;
``AutoEngine`` uses ``rg`` where the environment has it. ``FileSearchTools`` is
the extension named ``file-search-tools`` holding the three, in that order.
"""

from pi_durable_tui.harness import Extension, define_extension
from pi_durable_tui.tools.search._engine import (
    FileCollector,
    FileList,
    GrepLine,
    GrepQuery,
    GrepResult,
    LineCollector,
    SearchEngine,
    SearchError,
    StopSearch,
    run_until_stopped,
)
from pi_durable_tui.tools.search._find import FindArgs, create_find_tool
from pi_durable_tui.tools.search._globs import Patterns
from pi_durable_tui.tools.search._grep import GrepArgs, create_grep_tool
from pi_durable_tui.tools.search._ls import LsArgs, create_ls_tool
from pi_durable_tui.tools.search._ripgrep import AutoEngine, RipgrepEngine
from pi_durable_tui.tools.search._walk import WalkEngine


def file_search_tools(engine: SearchEngine | None = None) -> Extension:
    """Build the ``file-search-tools`` extension: ``grep``, ``find``, ``ls``.

    Args:
        engine: The engine of ``grep`` and ``find``; by default ``rg`` where the
            environment has it, else the walk (asked once per environment).
    """
    chosen = engine if engine is not None else AutoEngine()
    return define_extension(
        "file-search-tools",
        tools=[create_grep_tool(chosen), create_find_tool(chosen), create_ls_tool()],
    )


FileSearchTools: Extension = file_search_tools()
"""The ``file-search-tools`` extension with the automatic engine."""

__all__ = [
    "AutoEngine",
    "FileCollector",
    "FileList",
    "FileSearchTools",
    "FindArgs",
    "GrepArgs",
    "GrepLine",
    "GrepQuery",
    "GrepResult",
    "LineCollector",
    "LsArgs",
    "Patterns",
    "RipgrepEngine",
    "SearchEngine",
    "SearchError",
    "StopSearch",
    "WalkEngine",
    "create_find_tool",
    "create_grep_tool",
    "create_ls_tool",
    "file_search_tools",
    "run_until_stopped",
]
