"""``pidurable -p`` with MCP servers from a project's ``.mcp.json`` and ``mcp_start`` (issue 16).

A project's ``.mcp.json`` widens powers: its servers start only once the user
trusted its content (the trust gate of issue 13, one digest over the project's
files). ``mcp_start: "lazy"`` starts a server whose tools are remembered only at
the first call of one of them; ``"session"`` starts every server with the session.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.app.support import trust_settings, write_settings
from tests.harness.mcp.mcp_server_support import server_script
from tests.test_cli import project, write_script
from tests.test_cli_mcp import call_then_answer, run_once

__all__ = ["project", "server_script"]  # the fixtures


def probe_declaration(project: Path, script: Path) -> dict[str, object]:
    return {
        "probe": {
            "command": sys.executable,
            "args": [str(script)],
            "env": {"NOTES": str(project / "notes.txt"), "PIDFILE": str(project / "server.pid")},
        }
    }


def write_mcp_json(project: Path, script: Path) -> None:
    write_settings(project / ".mcp.json", {"mcpServers": probe_declaration(project, script)})


def test_an_untrusted_mcp_json_starts_no_server_and_says_so_in_one_line(
    project: Path, server_script: Path
) -> None:
    write_mcp_json(project, server_script)
    script = call_then_answer(project, "mcp__probe__echo", {"text": "hi"}, "no such tool")

    status, out, err = run_once(project, script)

    assert (status, out) == (0, "no such tool\n")
    assert not (project / "server.pid").exists()
    [line] = err.strip().splitlines()
    assert "mcpServers" in line
    assert ".mcp.json" in line
    assert "not confirmed" in line


def test_a_trusted_mcp_json_gives_its_tools_until_its_content_changes(
    project: Path, server_script: Path
) -> None:
    write_mcp_json(project, server_script)
    trust_settings(project)
    script = call_then_answer(project, "mcp__probe__echo", {"text": "hi"}, "answered")

    assert run_once(project, script) == (0, "answered\n", "")
    assert (project / "server.pid").exists()

    (project / "server.pid").unlink()
    data = json.loads((project / ".mcp.json").read_text())
    data["mcpServers"]["probe"]["args"].append("--changed")
    write_settings(project / ".mcp.json", data)
    status, _, err = run_once(project, script)
    assert status == 0
    assert "not confirmed" in err
    assert not (project / "server.pid").exists()


def test_lazy_start_starts_a_remembered_server_only_when_a_tool_of_it_is_called(
    project: Path, server_script: Path
) -> None:
    home_settings = project.parent / "home" / "settings.json"
    write_settings(home_settings, {"mcpServers": probe_declaration(project, server_script)})
    answer = write_script(project, "no tools needed", name="answer.json")
    assert run_once(project, answer)[0] == 0  # first sight: started once to list its tools
    (project / "server.pid").unlink()

    assert run_once(project, answer) == (0, "no tools needed\n", "")
    assert not (project / "server.pid").exists()

    call = call_then_answer(project, "mcp__probe__echo", {"text": "hi"}, "called")
    assert run_once(project, call) == (0, "called\n", "")
    assert (project / "server.pid").exists()


def test_session_start_starts_every_server_with_the_session(
    project: Path, server_script: Path
) -> None:
    home_settings = project.parent / "home" / "settings.json"
    declaration = probe_declaration(project, server_script)
    write_settings(home_settings, {"mcpServers": declaration, "mcp_start": "session"})
    answer = write_script(project, "no tools needed", name="answer.json")
    assert run_once(project, answer)[0] == 0
    (project / "server.pid").unlink()

    assert run_once(project, answer) == (0, "no tools needed\n", "")
    assert (project / "server.pid").exists()
