"""``pidurable -p`` with an MCP server declared in the user's settings (issue 16).

The real command starts the real SDK server of ``tests.harness.mcp`` over stdio,
the faux model calls its tool through the durable path, the server's stderr
lands in the session's log, and the server does not outlive the command.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from pi_durable_tui.harness import TOOL_RESULT
from tests.app.support import stored_entries, tool_call, write_script, write_settings
from tests.harness.mcp.mcp_server_support import server_script
from tests.test_cli import Pidurable, pidurable, project

__all__ = ["project", "server_script"]  # the fixtures


def declare_probe(project: Path, script: Path) -> None:
    write_settings(
        project.parent / "home" / "settings.json",
        {
            "mcpServers": {
                "probe": {
                    "command": sys.executable,
                    "args": [str(script)],
                    "env": {
                        "NOTES": str(project / "notes.txt"),
                        "PIDFILE": str(project / "server.pid"),
                    },
                }
            }
        },
    )


def call_then_answer(project: Path, tool: str, arguments: dict[str, Any], answer: str) -> Path:
    """A faux script: one call of ``tool``, then ``answer``."""
    return write_script(
        project,
        tool_call(tool, arguments),
        {"content": [{"type": "text", "text": answer}]},
    )


def run_once(project: Path, script: Path) -> tuple[int, str, str]:
    """``pidurable -p go`` with the faux script, in the default permission mode."""
    return pidurable(project, "-p", "go", "--model", "faux/faux-1", "--faux-script", str(script))


def test_print_mode_calls_an_mcp_tool_and_leaves_no_server_behind(
    project: Path, server_script: Path
) -> None:
    declare_probe(project, server_script)
    script = call_then_answer(project, "mcp__probe__echo", {"text": "hello"}, "the server answered")

    status, out, err = run_once(project, script)

    assert (status, out, err) == (0, "the server answered\n", "")
    [log] = list((project.parent / "home" / "sessions").glob("*/*/pidurable.log"))
    assert "echo called" in log.read_text()
    pid = int((project / "server.pid").read_text())
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        pass
    else:
        raise AssertionError(f"the MCP server {pid} outlived pidurable")


def test_a_bad_mcp_declaration_is_one_line_and_no_run(project: Path) -> None:
    write_settings(project.parent / "home" / "settings.json", {"mcpServers": {"x": {}}})

    status, out, err = pidurable(project, "-p", "go", "--model", "faux/faux-1")

    assert status != 0
    assert out == ""
    assert "exactly one of 'command'" in err
    assert len(err.strip().splitlines()) == 1


def test_an_mcp_call_cut_by_kill_9_is_interrupted_and_never_repeated_by_continue_r95(
    project: Path, server_script: Path
) -> None:
    declare_probe(project, server_script)
    notes = project / "notes.txt"
    script = call_then_answer(project, "mcp__probe__slow_note", {"text": "once"}, "after the cut")
    auto = ("--permission-mode", "auto")  # a tool without readOnlyHint asks, as bash does
    first = Pidurable(
        project, "-p", "go", *auto, "--model", "faux/faux-1", "--faux-script", str(script)
    )
    try:
        deadline = time.monotonic() + 30
        while not (notes.exists() and notes.read_text()):
            assert first.process.poll() is None, first.finish()
            assert time.monotonic() < deadline, "the MCP call never started"
            time.sleep(0.02)
        first.process.kill()
        assert first.finish()[0] == -signal.SIGKILL
        assert _ended(int((project / "server.pid").read_text()))
    finally:
        _end_server(project)

    status, out, _ = pidurable(project, "-c", "-p", *auto, "--faux-script", str(script))

    assert (status, out) == (0, "after the cut\n")
    assert notes.read_text() == "once\n"  # not run a second time
    [store] = (project.parent / "home" / "sessions").glob("*/*/session.sqlite")
    results: list[dict[str, Any]] = [
        entry.model[0]  # type: ignore[misc]
        for entry in asyncio.run(stored_entries(store))
        if entry.kind == TOOL_RESULT and entry.model
    ]
    assert len(results) == 1
    assert results[0]["is_error"] is True
    assert "interrupted" in str(results[0]["content"]).lower()


def _ended(pid: int) -> bool:
    """Whether the process ``pid`` ends (or is a zombie) within the test deadline."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":
            return True
        time.sleep(0.02)
    return False


def _end_server(project: Path) -> None:
    """The server of a pidurable killed with -9 is ended here if it outlived it."""
    with contextlib.suppress(OSError, ValueError):
        os.kill(int((project / "server.pid").read_text()), signal.SIGKILL)


def test_in_auto_edit_a_tool_without_read_only_hint_asks_like_bash_and_headless_refuses_it(
    project: Path, server_script: Path
) -> None:
    declare_probe(project, server_script)
    script = call_then_answer(project, "mcp__probe__note", {"text": "not allowed"}, "refused")

    status, out, _ = run_once(project, script)

    assert (status, out) == (0, "refused\n")
    assert not (project / "notes.txt").exists()


def test_a_server_that_cannot_start_is_one_notice_and_the_run_goes_on(project: Path) -> None:
    write_settings(
        project.parent / "home" / "settings.json",
        {"mcpServers": {"ghost": {"command": str(project / "no-such-server")}}},
    )
    script = write_script(project, {"content": [{"type": "text", "text": "still here"}]})

    status, out, err = run_once(project, script)

    assert (status, out) == (0, "still here\n")
    assert "MCP server 'ghost' did not start" in err
    assert len(err.strip().splitlines()) == 1
