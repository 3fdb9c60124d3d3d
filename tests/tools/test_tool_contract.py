"""What every coding tool shares, run through the harness (reference 3, R96, R118)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.tools import coding_tools
from tests.tools.tool_run import RunTool

CALLS: dict[str, dict[str, Any]] = {
    "read": {"path": "f.txt"},
    "write": {"path": "f.txt", "content": "x"},
    "edit": {"path": "f.txt", "edits": [{"oldText": "a", "newText": "b"}]},
    "bash": {"command": "echo hi"},
}


@pytest.mark.parametrize("name", list(CALLS))
async def test_every_tool_refuses_to_run_without_an_environment_r96_r118(
    run_tool: RunTool, workdir: Path, name: str
) -> None:
    (workdir / "f.txt").write_text("a\n")

    outcome = await run_tool(name, CALLS[name], env=False)

    assert outcome.is_error
    assert outcome.errors == ["No execution environment is configured"]
    assert outcome.diagnostics[-1]["code"] == "tool_error"
    assert (workdir / "f.txt").read_text() == "a\n"


@pytest.mark.parametrize(
    ("name", "arguments", "verb"),
    [
        ("write", {"path": "../outside.txt", "content": "x"}, "write"),
        ("edit", {"path": "../outside.txt", "edits": [{"oldText": "a", "newText": "b"}]}, "edit"),
    ],
    ids=["write", "edit"],
)
async def test_write_and_edit_refuse_a_path_outside_the_working_directory(
    run_tool: RunTool, workdir: Path, name: str, arguments: dict[str, Any], verb: str
) -> None:
    outside = workdir.parent / "outside.txt"
    if name == "edit":
        outside.write_text("a\n")

    outcome = await run_tool(name, arguments)

    assert outcome.errors == [
        f"Refusing to {verb} {outside}: it is outside the working directory {workdir}. "
        "Only the user can allow changes outside it; ask them if it is needed."
    ]
    # Nothing in it tells the model how to grant itself the power (issue 13).
    assert "allow_outside_cwd" not in outcome.errors[0]
    assert "settings" not in outcome.errors[0]
    assert not outside.exists() or outside.read_text() == "a\n"


async def test_a_symlink_inside_the_working_directory_pointing_outside_is_outside(
    run_tool: RunTool, workdir: Path
) -> None:
    (workdir.parent / "elsewhere").mkdir()
    (workdir / "link").symlink_to(workdir.parent / "elsewhere")

    outcome = await run_tool("write", {"path": "link/f.txt", "content": "x"})

    assert "outside the working directory" in outcome.errors[0]
    assert not (workdir.parent / "elsewhere" / "f.txt").exists()


@pytest.mark.parametrize("name", ["write", "edit"])
async def test_settings_may_allow_changes_outside_the_working_directory(
    run_tool: RunTool, workdir: Path, name: str
) -> None:
    outside = workdir.parent / "outside.txt"
    outside.write_text("a\n")

    outcome = await run_tool(
        name,
        CALLS[name] | {"path": "../outside.txt"},
        extension=coding_tools(allow_outside_cwd=True),
    )

    assert not outcome.is_error
    assert outside.read_text() in ("x", "b\n")


async def test_read_is_replay_safe_and_the_mutating_tools_are_not_r95() -> None:
    from pi_durable_tui.tools import CodingTools

    assert {t.name: t.replay for t in CodingTools.tools} == {
        "read": "safe",
        "write": "unsafe",
        "edit": "unsafe",
        "bash": "unsafe",
        "job_output": "safe",
        "kill_job": "unsafe",
    }
