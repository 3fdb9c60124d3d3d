"""MCP server tools as harness tools ``mcp__<server>__<tool>`` (issue 16).

Owns the translation both ways: a server's tool becomes a ``Tool`` with the
server's JSON schema as it is (``schema_parameters``); ``readOnlyHint`` makes it
read-only for the permission modes and replay-safe (R95: run again after a
crash); any other tool follows ``bash``'s policy and a cut call reaches the
model as interrupted, never silently repeated. A result becomes text and image
items; an error result or a dead server becomes a tool error (R96).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pi_durable_tui.ai import ImageContent, TextContent
from pi_durable_tui.harness.extensions import (
    Extension,
    SchemaArguments,
    Tool,
    ToolApi,
    ToolResult,
    define_extension,
    define_tool,
    schema_parameters,
)
from pi_durable_tui.harness.mcp._connection import McpConnection, McpServerError
from pi_durable_tui.harness.mcp._search import tool_search_tool

if TYPE_CHECKING:
    from mcp import types as mcp_types  # imported where a server runs (_connection)


def mcp_tool_name(server: str, tool: str) -> str:
    """The harness name of a server's tool."""
    return f"mcp__{server}__{tool}"


def result_content(result: mcp_types.CallToolResult) -> list[TextContent | ImageContent]:
    """The model's view of a result: text and images; other blocks as their JSON."""
    from mcp import types as mcp_types

    items: list[TextContent | ImageContent] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            items.append(TextContent(text=block.text))
        elif isinstance(block, mcp_types.ImageContent):
            items.append(ImageContent(data=block.data, mime_type=block.mime_type))
        else:
            items.append(
                TextContent(text=json.dumps(block.model_dump(mode="json", exclude_none=True)))
            )
    if not items and result.structured_content is not None:
        items.append(TextContent(text=json.dumps(result.structured_content)))
    return items or [TextContent(text="(no output)")]


def harness_tool(connection: McpConnection, spec: mcp_types.Tool) -> Tool[SchemaArguments]:
    """One server tool as a harness tool."""
    read_only = bool(spec.annotations and spec.annotations.read_only_hint)
    remote_name = spec.name

    async def execute(args: SchemaArguments, api: ToolApi) -> ToolResult:
        try:
            result = await connection.call_tool(remote_name, args.model_dump())
        except McpServerError as error:
            return ToolResult(content=str(error), is_error=True)
        return ToolResult(content=result_content(result), is_error=bool(result.is_error))

    name = mcp_tool_name(connection.config.name, spec.name)
    return define_tool(
        name,
        description=spec.description or spec.title or name,
        parameters=schema_parameters(dict(spec.input_schema), name=f"{name}_args"),
        execute=execute,
        replay="safe" if read_only else "unsafe",
        read_only=read_only,
        deferred=True,
    )


async def mcp_extension(connections: Sequence[McpConnection]) -> tuple[Extension, list[str]]:
    """Start each server, list its tools, and bundle them as one extension.

    Returns:
        The extension ``mcp`` and one notice per server that failed (never raised:
        a failing server is a notice, not a crash).
    """
    tools: list[Tool[SchemaArguments]] = []
    notices: list[str] = []
    for connection in connections:
        try:
            specs = await connection.list_tools()
        except McpServerError as error:
            notices.append(str(error))
            continue
        tools.extend(harness_tool(connection, spec) for spec in specs)
    return mcp_bundle(tools), notices


def mcp_bundle(tools: Sequence[Tool[SchemaArguments]]) -> Extension:
    """The extension ``mcp``: the servers' tools and ``tool_search`` over them.

    ``tool_search`` is offered only when the tools' schemas are held back
    (``state._exposure``).
    """
    return define_extension("mcp", tools=[*tools, tool_search_tool(tools)])
