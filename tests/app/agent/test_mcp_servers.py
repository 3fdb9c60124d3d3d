"""The session's MCP servers: start policy, remembered listings, ``/mcp`` lines (issue 16)."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pi_durable_tui.app.agent._mcp_servers import McpServers, open_mcp_servers
from pi_durable_tui.harness import parse_mcp_servers
from tests.harness.mcp.mcp_server_support import server_script
from tests.harness.run_support import within

__all__ = ["server_script"]


@pytest.fixture
async def opened(
    tmp_path: Path, server_script: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[McpServers]:
    """A working server ``probe`` and one that cannot start, opened lazily; closed after."""
    monkeypatch.setenv("PIDURABLE_HOME", str(tmp_path / "home"))
    configs = parse_mcp_servers(
        {
            "probe": {"command": sys.executable, "args": [str(server_script)]},
            "ghost": {"command": str(tmp_path / "no-such-program")},
        }
    )
    servers = await within(
        open_mcp_servers(configs, "lazy", log_path=tmp_path / "log", cwd=tmp_path), 30
    )
    await servers.close()  # as a later session finds them: remembered, not started
    servers = await within(
        open_mcp_servers(configs, "lazy", log_path=tmp_path / "log", cwd=tmp_path), 30
    )
    yield servers
    await servers.close()


async def test_mcp_lines_say_not_started_running_failed_and_restarted(
    opened: McpServers,
) -> None:
    probe, ghost = opened.status_lines()
    assert probe.startswith("probe (stdio): not started; tools: echo, note")
    assert ghost.startswith("ghost (stdio): failed: ")
    assert ghost.endswith("tools: none")

    connection = opened.connections[0]
    pid = (await within(connection.call_tool("pid", {}), 30)).content[0].text  # type: ignore[union-attr]
    assert opened.status_lines()[0].startswith("probe (stdio): running; tools:")

    os.kill(int(pid), 9)
    with pytest.raises(Exception, match="probe"):
        await within(connection.call_tool("pid", {}), 30)
    await within(connection.call_tool("pid", {}), 30)
    assert opened.status_lines()[0].startswith("probe (stdio): running, restarted 1 time; tools:")


async def test_a_failing_server_is_one_notice_and_its_tools_stay_out(opened: McpServers) -> None:
    assert len(opened.notices) == 1
    assert opened.notices[0].startswith("MCP server 'ghost'")
    names = [tool.name for tool in opened.extension().tools]
    assert "mcp__probe__echo" in names
    assert not any(name.startswith("mcp__ghost__") for name in names)
