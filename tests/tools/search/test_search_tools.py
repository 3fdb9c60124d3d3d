"""``grep``, ``find`` and ``ls`` through the harness: output format, bounds, notes, errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.tools.search import FileSearchTools, WalkEngine, file_search_tools
from tests.tools.search.tree_support import make_tree
from tests.tools.tool_run import RunTool

WALK = file_search_tools(WalkEngine())


async def search(run_tool: RunTool, name: str, arguments: dict[str, Any]) -> Any:
    return await run_tool(name, arguments, extension=WALK)


def test_the_search_tools_are_replay_safe_read_only_and_in_order() -> None:
    assert FileSearchTools.name == "file-search-tools"
    assert [(tool.name, tool.replay, tool.read_only) for tool in FileSearchTools.tools] == [
        ("grep", "safe", True),
        ("find", "safe", True),
        ("ls", "safe", True),
    ]


async def test_grep_prints_file_line_prefixes_and_context_groups(
    run_tool: RunTool, workdir: Path
) -> None:
    (workdir / "src").mkdir()
    (workdir / "src" / "a.py").write_text("one\nTODO two\nthree\nfour\nfive\nTODO six\n")

    outcome = await search(run_tool, "grep", {"pattern": "TODO", "context": 1})

    assert outcome.text == (
        "src/a.py-1-one\nsrc/a.py:2:TODO two\nsrc/a.py-3-three\n--\n"
        "src/a.py-5-five\nsrc/a.py:6:TODO six"
    )
    assert outcome.details == {"path": ".", "matches": 2, "files": 1, "more": False}


async def test_grep_under_a_subdirectory_shows_paths_from_the_working_directory(
    run_tool: RunTool, workdir: Path
) -> None:
    (workdir / "pkg").mkdir()
    (workdir / "pkg" / "m.py").write_text("x = 1\n")

    outcome = await search(run_tool, "grep", {"pattern": "x", "path": "pkg"})

    assert outcome.text == "pkg/m.py:1:x = 1"


async def test_grep_says_when_the_limit_hid_matches(run_tool: RunTool, workdir: Path) -> None:
    (workdir / "f.txt").write_text("hit\n" * 10)

    outcome = await search(run_tool, "grep", {"pattern": "hit", "limit": 3})

    assert outcome.text.splitlines() == ["f.txt:1:hit", "f.txt:2:hit", "f.txt:3:hit"]
    assert outcome.diagnostics[0]["message"] == (
        "Showing the first 3 matches; more exist. Use limit=6 for more, "
        "or narrow the pattern, path or glob."
    )


async def test_grep_cuts_long_lines_and_bounds_the_output_like_read(
    run_tool: RunTool, workdir: Path
) -> None:
    (workdir / "long.txt").write_text("hit" + "x" * 997 + "\n")
    (workdir / "many.txt").write_text(("hit " + "y" * 200 + "\n") * 400)

    outcome = await search(run_tool, "grep", {"pattern": "hit", "limit": 1000})

    first = outcome.text.splitlines()[0]
    assert first == "long.txt:1:hit" + "x" * 497 + "... [500 more characters]"
    assert len(outcome.text.encode()) <= 51200
    assert outcome.diagnostics[-1]["code"] == "truncated"
    assert outcome.diagnostics[-1]["message"].startswith("Output truncated to ")


async def test_grep_reports_no_matches_and_bad_input_plainly(
    run_tool: RunTool, workdir: Path
) -> None:
    (workdir / "f.txt").write_text("x\n")

    assert (await search(run_tool, "grep", {"pattern": "nothing"})).text == "No matches found"
    missing = await search(run_tool, "grep", {"pattern": "x", "path": "nope"})
    assert missing.errors == ["Path not found: nope"]


async def test_find_lists_matching_files_respecting_gitignore(
    run_tool: RunTool, workdir: Path
) -> None:
    names = ("a.py", "src/b.py", "src/c.txt", "build/d.py", ".git/e.py")
    make_tree(workdir, dict.fromkeys(names, "") | {".gitignore": "build/\n"})

    outcome = await search(run_tool, "find", {"pattern": "*.py"})

    assert outcome.text == "a.py\nsrc/b.py"
    assert outcome.details == {"path": ".", "count": 2, "more": False}
    assert (await search(run_tool, "find", {"pattern": "*.rs"})).text == (
        "No files found matching pattern"
    )


async def test_ls_lists_entries_marking_directories_and_hiding_ignored_ones(
    run_tool: RunTool, workdir: Path
) -> None:
    names = ("src/x.py", ".env", "notes.md", "debug.log", ".git/HEAD")
    make_tree(workdir, dict.fromkeys(names, "") | {".gitignore": "*.log\n"})
    (workdir / "link").symlink_to(workdir / "notes.md")

    outcome = await search(run_tool, "ls", {})

    assert outcome.text == ".env\n.gitignore\nlink@\nnotes.md\nsrc/"


async def test_ls_says_when_the_limit_hid_entries(run_tool: RunTool, workdir: Path) -> None:
    for index in range(5):
        (workdir / f"f{index}").write_text("")

    outcome = await search(run_tool, "ls", {"limit": 2})

    assert outcome.text == "f0\nf1"
    assert outcome.diagnostics[0]["message"] == "Showing 2 of 5 entries. Use limit=5 to see all."


@pytest.mark.parametrize("name", ["find", "ls"])
async def test_find_and_ls_refuse_a_file_as_their_directory(
    run_tool: RunTool, workdir: Path, name: str
) -> None:
    (workdir / "f.txt").write_text("")
    arguments: dict[str, Any] = {"path": "f.txt"} | ({"pattern": "*"} if name == "find" else {})

    outcome = await search(run_tool, name, arguments)

    assert outcome.is_error
    assert outcome.errors[0].startswith("f.txt is not a directory")
