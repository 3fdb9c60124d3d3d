"""MCP servers as harness tools (issue 16; R95, R96).

Private modules, lowest first: ``_config`` (the ``mcpServers`` declarations),
``_connection`` (one server's client session: lazy start, restart, close),
``_tools`` (server tools as ``mcp__<server>__<tool>`` harness tools), ``_search``
(``tool_search``, the search over deferred tools that loads what it finds).

A part of the harness above ``extensions``.
"""

from pi_durable_tui.harness.mcp._config import McpServerConfig, parse_mcp_servers
from pi_durable_tui.harness.mcp._connection import McpConnection, McpServerError
from pi_durable_tui.harness.mcp._search import matching_tools, tool_search_tool
from pi_durable_tui.harness.mcp._tools import (
    harness_tool,
    mcp_bundle,
    mcp_extension,
    mcp_tool_name,
    result_content,
)

__all__ = [
    "McpConnection",
    "McpServerConfig",
    "McpServerError",
    "harness_tool",
    "matching_tools",
    "mcp_bundle",
    "mcp_extension",
    "mcp_tool_name",
    "parse_mcp_servers",
    "result_content",
    "tool_search_tool",
]
