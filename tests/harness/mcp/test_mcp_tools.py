"""MCP server tools through the harness, over stdio and streamable HTTP (issue 16; R95, R96).

A real server written with the ``mcp`` SDK (``mcp_server_support``) is started by
``McpConnection``; its tools become ``mcp__probe__<tool>`` harness tools, called by
the faux model through the durable tool path.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from pi_durable_tui.ai import faux_response, faux_tool_call
from pi_durable_tui.env import MARK_NAME, run_token
from pi_durable_tui.harness import TOOL_RESULT
from pi_durable_tui.harness.mcp import (
    McpConnection,
    McpServerConfig,
    McpServerError,
    mcp_extension,
    parse_mcp_servers,
)
from tests.harness.mcp.mcp_server_support import HttpServer
from tests.harness.run_support import RigFactory, message, within

ConnectionFactory = Callable[[McpServerConfig], McpConnection]


@pytest.fixture
async def connect(tmp_path: Path) -> AsyncIterator[ConnectionFactory]:
    """Opens connections (their stderr in ``tmp_path/mcp.log``); closes each at teardown."""
    opened: list[McpConnection] = []

    def factory(config: McpServerConfig) -> McpConnection:
        connection = McpConnection(config, log_path=tmp_path / "mcp.log", cwd=tmp_path)
        opened.append(connection)
        return connection

    yield factory
    for connection in opened:
        await connection.close()


def stdio_config(script: Path, tmp_path: Path) -> McpServerConfig:
    (servers,) = parse_mcp_servers(
        {
            "probe": {
                "command": sys.executable,
                "args": [str(script)],
                "env": {"NOTES": str(tmp_path / "notes.txt")},
            }
        }
    )
    return servers


async def server_pid(connection: McpConnection) -> int:
    """The PID of the probe server behind a connection (its ``pid`` tool starts it)."""
    result = await within(connection.call_tool("pid", {}), 30)
    return int(result.content[0].text)  # type: ignore[union-attr]


def result_blocks(entries: list) -> list[list[dict]]:
    return [message(e)["content"] for e in entries if e.kind == TOOL_RESULT]


async def test_a_stdio_server_tool_is_called_end_to_end_through_the_durable_path(
    open_rig: RigFactory,
    connect: ConnectionFactory,
    server_script: Path,
    tmp_path: Path,
) -> None:
    connection = connect(stdio_config(server_script, tmp_path))
    extension, notices = await within(mcp_extension([connection]), 30)
    assert notices == []
    names = sorted(tool.name for tool in extension.tools if tool.name != "tool_search")
    assert names == [
        f"mcp__probe__{n}" for n in ("broken", "echo", "note", "pid", "pixel", "slow_note")
    ]
    rig = await open_rig(
        faux_response(
            faux_tool_call("mcp__probe__echo", {"text": "hi"}),
            faux_tool_call("mcp__probe__note", {"text": "written"}),
        ),
        faux_response("done"),
        extensions=[extension],
    )
    assert (await rig.ask("go")).status == "done"
    # The two calls run side by side: their results are committed as each ends.
    results = {
        message(e)["tool_name"]: message(e)["content"][0]["text"]
        for e in await rig.transcript()
        if e.kind == TOOL_RESULT
    }
    assert results == {"mcp__probe__echo": "echo: hi", "mcp__probe__note": "noted"}
    assert (tmp_path / "notes.txt").read_text() == "written\n"
    assert "echo called" in (tmp_path / "mcp.log").read_text()


async def test_read_only_hint_makes_a_tool_read_only_and_replay_safe_and_others_not(
    connect: ConnectionFactory,
    server_script: Path,
    tmp_path: Path,
) -> None:
    extension, _ = await within(mcp_extension([connect(stdio_config(server_script, tmp_path))]), 30)
    tools = {tool.name: tool for tool in extension.tools}
    assert (tools["mcp__probe__echo"].read_only, tools["mcp__probe__echo"].replay) == (True, "safe")
    assert (tools["mcp__probe__note"].read_only, tools["mcp__probe__note"].replay) == (
        False,
        "unsafe",
    )
    spec = tools["mcp__probe__echo"].spec()
    assert "text" in str(spec)
    assert "string" in str(spec)


async def test_a_server_error_and_an_image_reach_the_model_as_a_tool_error_and_an_image(
    open_rig: RigFactory,
    connect: ConnectionFactory,
    server_script: Path,
    tmp_path: Path,
) -> None:
    extension, _ = await within(mcp_extension([connect(stdio_config(server_script, tmp_path))]), 30)
    rig = await open_rig(
        faux_response(faux_tool_call("mcp__probe__broken"), faux_tool_call("mcp__probe__pixel")),
        faux_response("done"),
        extensions=[extension],
    )
    await rig.ask("go")
    results = [message(e) for e in await rig.transcript() if e.kind == TOOL_RESULT]
    assert results[0]["is_error"] is True
    assert "the probe tool broke" in results[0]["content"][0]["text"]
    assert results[1]["content"][0]["type"] == "image"
    assert results[1]["content"][0]["mime_type"] == "image/png"


async def test_a_server_that_died_is_started_again_on_the_next_call(
    connect: ConnectionFactory,
    server_script: Path,
    tmp_path: Path,
) -> None:
    connection = connect(stdio_config(server_script, tmp_path))
    first = await within(connection.call_tool("pid", {}), 30)
    os.kill(int(first.content[0].text), 9)  # type: ignore[union-attr]
    with pytest.raises(Exception, match="probe"):
        await within(connection.call_tool("pid", {}), 30)
    second = await within(connection.call_tool("pid", {}), 30)
    assert second.content[0].text != first.content[0].text  # type: ignore[union-attr]
    assert connection.starts == 2


async def test_closing_a_connection_leaves_no_server_process_behind(
    connect: ConnectionFactory,
    server_script: Path,
    tmp_path: Path,
) -> None:
    connection = connect(stdio_config(server_script, tmp_path))
    pid = await server_pid(connection)
    await within(connection.close(), 30)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert connection.state == "stopped"


async def test_a_stdio_server_carries_a_mark_so_no_command_takes_it_for_its_orphan(
    connect: ConnectionFactory,
    server_script: Path,
    tmp_path: Path,
) -> None:
    connection = connect(stdio_config(server_script, tmp_path))
    pid = await server_pid(connection)

    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    marks = [item for item in environ if item.startswith(MARK_NAME.encode() + b"=")]
    assert len(marks) == 1
    assert marks[0].split(b"=", 1)[1].startswith(run_token().encode() + b".")
    assert f"NOTES={tmp_path / 'notes.txt'}".encode() in environ  # its own env kept


async def test_a_server_that_cannot_start_is_one_notice_not_a_crash(
    connect: ConnectionFactory, tmp_path: Path
) -> None:
    (config,) = parse_mcp_servers({"ghost": {"command": str(tmp_path / "no-such-program")}})
    connection = connect(config)
    extension, notices = await within(mcp_extension([connection]), 30)
    assert [tool.name for tool in extension.tools] == ["tool_search"]
    assert len(notices) == 1
    assert notices[0].startswith("MCP server 'ghost' did not start")
    assert "\n" not in notices[0]
    assert connection.state == "failed"


async def test_an_http_server_tool_is_called_end_to_end(
    open_rig: RigFactory,
    connect: ConnectionFactory,
    http_server: str,
) -> None:
    (config,) = parse_mcp_servers({"probe": {"url": http_server, "headers": {"X-Probe": "1"}}})
    extension, notices = await within(mcp_extension([connect(config)]), 30)
    assert notices == []
    rig = await open_rig(
        faux_response(faux_tool_call("mcp__probe__echo", {"text": "over http"})),
        faux_response("done"),
        extensions=[extension],
    )
    await rig.ask("go")
    assert result_blocks(await rig.transcript())[0][0]["text"] == "echo: over http"


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"a": {}}, "exactly one of 'command'"),
        ({"a": {"command": "x", "url": "http://h"}}, "exactly one of 'command'"),
        ({"a b": {"command": "x"}}, "letters, digits"),
        ({"a": {"command": "x", "args": "y"}}, "args must be a list"),
        ({"a": {"url": "ftp://h"}}, "http:// or https://"),
        ({"a": {"command": "x", "env": {"K": 1}}}, "env must be an object of strings"),
        ([], "mcpServers must be an object"),
    ],
)
def test_a_bad_declaration_is_one_line_naming_the_server(value: object, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_mcp_servers(value)


def test_secrets_in_a_declaration_do_not_show_in_its_repr() -> None:
    (config,) = parse_mcp_servers({"a": {"command": "x", "env": {"TOKEN": "s3cret"}}})
    assert "s3cret" not in repr(config)


async def test_an_http_server_killed_mid_session_is_a_tool_error_then_reconnected_when_back(
    connect: ConnectionFactory, http_process: HttpServer
) -> None:
    (config,) = parse_mcp_servers({"probe": {"url": http_process.url}})
    connection = connect(config)
    first = await within(connection.call_tool("pid", {}), 30)
    http_process.kill()

    with pytest.raises(McpServerError, match="MCP server 'probe'"):
        await within(connection.call_tool("pid", {}), 30)
    http_process.start()
    second = await within(connection.call_tool("pid", {}), 30)

    assert second.content[0].text != first.content[0].text  # type: ignore[union-attr]
    assert connection.starts == 2
    assert connection.state == "running"
