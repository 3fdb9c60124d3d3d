"""Lazy exposure of MCP tools: ``tool_search`` instead of 200 schemas (issue 16).

A real server (``mcp`` SDK) declares 200 tools whose schemas together take more
than ``tool_search_share`` of the faux model's context window: the model is
offered ``tool_search`` and none of them, loads the ones it finds (offered from
the next request on, and after the harness reopened the store), and a call by
full name works without loading.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pi_durable_tui.ai import FauxProvider, faux_response, faux_tool_call
from pi_durable_tui.harness import TOOL_RESULT, Settings
from pi_durable_tui.harness.mcp import McpConnection, mcp_extension, parse_mcp_servers
from pi_durable_tui.storage import SqliteStorage
from tests.harness.run_support import RigFactory, message, within

MANY_SOURCE = r"""
from mcp.server.mcpserver import MCPServer

server = MCPServer("many")
TOPICS = ["weather", "tides", "trains", "stocks", "recipes", "movies", "flights", "books"]

def make(index):
    def run(city: str) -> str:
        return f"answer {index} for {city}"
    return run

for index in range(200):
    topic = TOPICS[index % len(TOPICS)]
    server.add_tool(
        make(index),
        name=f"{topic}_{index:03d}",
        description=(
            f"Look up {topic} facts, variant {index}, for a city: returns a short summary "
            "with the sources it used, the time it was fetched, and a confidence note, "
            "so that the caller can decide whether to ask again later or elsewhere."
        ),
    )

server.run()
"""


@pytest.fixture
async def many(tmp_path: Path) -> AsyncIterator[McpConnection]:
    """A connection to the 200-tool server (stdio), closed after the test."""
    script = tmp_path / "many_server.py"
    script.write_text(MANY_SOURCE)
    (config,) = parse_mcp_servers({"many": {"command": sys.executable, "args": [str(script)]}})
    connection = McpConnection(config, log_path=tmp_path / "mcp.log", cwd=tmp_path)
    yield connection
    await connection.close()


def offered(faux: FauxProvider, index: int) -> list[str]:
    """The tool names request ``index`` offered the model."""
    return [tool.name for tool in faux.requests[index].context.tools]


async def test_200_tools_give_way_to_tool_search_which_loads_what_it_finds_durably(
    open_rig: RigFactory, many: McpConnection, tmp_path: Path
) -> None:
    extension, notices = await within(mcp_extension([many]), 60)
    assert notices == []
    assert len(extension.tools) == 201  # the 200 and tool_search
    storage = await SqliteStorage.open(tmp_path / "session.sqlite")
    rig = await open_rig(
        faux_response(faux_tool_call("tool_search", {"query": "tides facts", "limit": 2})),
        faux_response(faux_tool_call("mcp__many__trains_002", {"city": "Lyon"})),
        faux_response("done"),
        extensions=[extension],
        storage=storage,
    )
    await rig.ask("go")

    first, second = offered(rig.faux, 0), offered(rig.faux, 1)
    assert "tool_search" in first
    assert not any(name.startswith("mcp__") for name in first)
    assert [n for n in second if n.startswith("mcp__")] == [
        "mcp__many__tides_001",
        "mcp__many__tides_009",
    ]
    results = [
        message(e)["content"][0]["text"] for e in await rig.transcript() if e.kind == TOOL_RESULT
    ]
    assert "mcp__many__tides_001" in results[0]
    assert '"city"' in results[0]
    assert results[1] == "answer 2 for Lyon"  # called by full name, never loaded
    await rig.harness.close()

    again = await open_rig(
        faux_response("still loaded"),
        extensions=[extension],
        storage=await SqliteStorage.open(tmp_path / "session.sqlite"),
    )
    await again.ask("and now?")
    assert [n for n in offered(again.faux, 0) if n.startswith("mcp__")] == [
        "mcp__many__tides_001",
        "mcp__many__tides_009",
    ]


async def test_tools_that_fit_the_share_are_offered_with_their_schemas_and_no_search(
    open_rig: RigFactory, many: McpConnection
) -> None:
    extension, _ = await within(mcp_extension([many]), 60)
    rig = await open_rig(
        faux_response("done"), extensions=[extension], settings=Settings(tool_search_share=1.0)
    )
    await rig.ask("go")

    names = offered(rig.faux, 0)
    assert "tool_search" not in names
    assert sum(name.startswith("mcp__many__") for name in names) == 200
