"""The ``write`` tool through the harness (reference 3.2)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.tools.tool_run import RunTool


async def test_write_creates_parent_directories_and_reports_the_path_as_given(
    run_tool: RunTool, workdir: Path
) -> None:
    outcome = await run_tool("write", {"path": "a/b/c.txt", "content": "hello\n"})

    assert outcome.text == "Successfully wrote to a/b/c.txt"
    assert (workdir / "a" / "b" / "c.txt").read_text() == "hello\n"
    assert outcome.details == {"path": "a/b/c.txt", "size": 6, "preview": "hello\n"}


async def test_write_replaces_a_file_atomically_and_keeps_its_mode(
    run_tool: RunTool, workdir: Path
) -> None:
    target = workdir / "script.sh"
    target.write_text("old\n")
    target.chmod(0o751)
    before = target.stat().st_ino

    outcome = await run_tool("write", {"path": "script.sh", "content": "new\n"})

    assert not outcome.is_error
    assert target.read_text() == "new\n"
    assert target.stat().st_ino != before  # a new file renamed over the old one
    assert target.stat().st_mode & 0o777 == 0o751
    assert os.listdir(workdir) == ["script.sh"]  # no temporary file left behind
