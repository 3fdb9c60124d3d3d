"""``pidurable -p`` and the permission engine (issue 13): refused at once, allowed by a flag.

Runs ``main()`` in process on a real session (a faux script stands in for the
model): a call that would wait for approval is refused with a result saying how
to allow it, a line on stderr, and exit status 0 for a run that ended answered.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.cli import main
from pi_durable_tui.harness import TOOL_RESULT, text_of
from tests.app.support import stored_entries, text, tool_call, write_script, write_settings
from tests.wire_lines import messages


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working directory, with a home of its own for this test."""
    monkeypatch.setenv("PIDURABLE_HOME", str(tmp_path / "home"))
    path = tmp_path / "project"
    path.mkdir()
    monkeypatch.chdir(path)
    return path


def run(project: Path, call: dict[str, Any], *flags: str) -> int:
    script = write_script(project, call, text("Finished."))
    return main(["-p", "go", "--model", "faux/faux-1", "--faux-script", str(script), *flags])


def result_text(home: Path) -> str:
    """The text and data of the one tool result of the newest session."""
    store = max(home.glob("sessions/*/*/session.sqlite"), key=lambda p: p.stat().st_mtime_ns)
    [result] = [e for e in asyncio.run(stored_entries(store)) if e.kind == TOOL_RESULT]
    message = result.model[0]  # type: ignore[index]
    assert isinstance(message, dict)
    return text_of(message) + json.dumps(result.data)


TOUCH = tool_call("bash", {"command": "touch made.txt"})


def test_a_command_that_needs_approval_is_refused_at_once_and_the_run_exits_0(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = run(project, TOUCH)

    captured = capsys.readouterr()
    assert status == 0
    assert captured.out == "Finished.\n"
    assert captured.err.startswith("pidurable: refused bash(touch made.txt)")
    assert "--permission-mode auto" in captured.err
    assert "--allow 'RULE'" in captured.err
    assert not (project / "made.txt").exists()
    stored = result_text(project.parent / "home")
    assert "needs the user's approval" in stored
    assert "permission_required" in stored


@pytest.mark.parametrize(
    "flags",
    [
        ["--allow", "bash(touch made.txt)"],
        ["--allow", "bash(touch:*)"],
        ["--permission-mode", "auto"],
    ],
)
def test_a_flag_allows_the_command(
    project: Path, capsys: pytest.CaptureFixture[str], flags: list[str]
) -> None:
    assert run(project, TOUCH, *flags) == 0
    assert (project / "made.txt").exists()
    assert capsys.readouterr().err == ""


def test_deny_wins_over_auto_mode_and_over_allow(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--permission-mode", "auto", "--allow", "bash", "--deny", "bash(touch:*)"]
    assert run(project, TOUCH, *flags) == 0
    assert not (project / "made.txt").exists()
    stored = result_text(project.parent / "home")
    assert "denied by the rule bash(touch:*) (command line)" in stored


def test_json_mode_emits_the_request_and_its_refusal_as_messages_of_the_wire(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(project, TOUCH, "--mode", "json") == 0
    found = messages(capsys.readouterr().out)
    types = [m["t"] for m in found]
    request = found[types.index("permission_request")]
    decision = found[types.index("permission_decision")]
    assert request["request"]["suggestion"] == "bash(touch made.txt)"
    assert decision["decision"] == {"choice": "deny", "by": "headless"}
    assert request["call_id"] == decision["call_id"]
    assert types.index("permission_request") < types.index("permission_decision")
    [committed] = [m for m in found if m["t"] == "commit" and m["seq"] == request["seq"]]
    assert types.index("permission_request") == found.index(committed) + 1  # after its commit
    assert (found[-1]["t"], found[-1]["status"]) == ("result", "done")


def test_a_rule_in_the_user_settings_allows_the_command(project: Path) -> None:
    home = project.parent / "home"
    write_settings(home / "settings.json", {"permissions": {"allow": ["bash(touch made.txt)"]}})
    assert run(project, TOUCH) == 0
    assert (project / "made.txt").exists()


def test_a_projects_allow_rule_waits_for_trust_and_its_deny_rule_applies_at_once(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = {"permissions": {"allow": ["bash(touch made.txt)"]}}
    write_settings(project / ".pidurable" / "settings.json", settings)
    assert run(project, TOUCH) == 0
    assert not (project / "made.txt").exists()  # the model could have written that file
    assert "pidurable: refused bash(touch made.txt)" in capsys.readouterr().err

    write_settings(project / ".pidurable" / "settings.json", {"permissions": {"deny": ["bash"]}})
    assert run(project, TOUCH, "--permission-mode", "auto") == 0
    assert not (project / "made.txt").exists()
    assert "denied by the rule bash (project settings)" in result_text(project.parent / "home")


def test_plan_mode_refuses_a_write_saying_so(project: Path) -> None:
    call = tool_call("write", {"path": "a.txt", "content": "x"})
    assert run(project, call, "--permission-mode", "plan") == 0
    assert not (project / "a.txt").exists()
    assert "plan mode" in result_text(project.parent / "home")


def test_a_write_of_pidurables_own_settings_is_refused_headless_even_in_auto_mode(
    project: Path,
) -> None:
    call = tool_call("write", {"path": ".pidurable/settings.json", "content": "{}"})
    assert run(project, call, "--permission-mode", "auto", "--allow", "write") == 0
    assert not (project / ".pidurable" / "settings.json").exists()
    assert "one of pidurable's own files" in result_text(project.parent / "home")


@pytest.mark.parametrize(
    ("setup", "flags", "line"),
    [
        ({}, ["--allow", "bash("], "--allow: permission rule 'bash(' is not tool or tool(pattern)"),
        (
            {"permissions": {"deny": ["curl("]}},
            [],
            "settings.json: permissions.deny[0]: permission rule 'curl(' is not",
        ),
        ({"permission_mode": "yolo"}, [], "permission_mode: Input should be"),
    ],
)
def test_a_malformed_rule_or_mode_exits_2_with_one_line(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    setup: dict[str, Any],
    flags: list[str],
    line: str,
) -> None:
    if setup:
        write_settings(project / ".pidurable" / "settings.json", setup)
    status = run(project, TOUCH, *flags)
    captured = capsys.readouterr()
    assert status == 2
    assert line in captured.err
    assert captured.err.count("\n") == 1
