"""The session's MCP servers: when they start, their remembered tool lists, ``/mcp`` (issue 16).

The declarations come from the settings in force (the user's ``mcpServers``, and
a project's ``.pidurable/settings.json`` or ``.mcp.json`` only once trusted:
``_live_settings``). ``mcp_start`` says when a server starts:

- ``"lazy"`` (the default): at the first call of one of its tools. Its tools
  are known without starting it from the listing remembered in
  ``$PIDURABLE_HOME/mcp-tools.json`` when it last started; a server never seen
  before starts once at session start to list them (and stays up).
- ``"session"``: every server starts with the session and lists its tools.

The remembered listing is keyed by the sha256 of the server's name, command,
arguments and URL (never its ``env`` or ``headers``, which may hold secrets),
and refreshed each time a server lists its tools, and at close from every
server running then. A server that fails is one
notice, never a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pi_durable_tui.app.files import home
from pi_durable_tui.harness import Extension
from pi_durable_tui.harness.mcp import (
    McpConnection,
    McpServerConfig,
    McpServerError,
    harness_tool,
    mcp_bundle,
)

if TYPE_CHECKING:
    from mcp import types as mcp_types  # the SDK loads where a listing is read

LISTING_NAME = "mcp-tools.json"
"""The remembered tool listings, in ``$PIDURABLE_HOME``."""

McpStart = Literal["lazy", "session"]


def listing_key(config: McpServerConfig) -> str:
    """What a remembered listing is filed under (no secret goes into it)."""
    shape = [config.name, config.command, list(config.args), config.url]
    return hashlib.sha256(json.dumps(shape).encode()).hexdigest()


def _read_listings() -> dict[str, Any]:
    try:
        data = json.loads((home() / LISTING_NAME).read_bytes())
    except (OSError, ValueError, RecursionError):
        return {}
    servers = data.get("servers") if isinstance(data, dict) else None
    return dict(servers) if isinstance(servers, dict) else {}


def remembered_tools(config: McpServerConfig) -> list[mcp_types.Tool] | None:
    """The tools the server listed when it last started, or ``None``."""
    entry = _read_listings().get(listing_key(config))
    if not isinstance(entry, list):
        return None
    from mcp import types as mcp_types

    try:
        return [mcp_types.Tool.model_validate(item) for item in entry]
    except ValueError:
        return None


def remember_tools(config: McpServerConfig, tools: Sequence[mcp_types.Tool]) -> None:
    """Remember a server's listing (best effort: a read-only home only costs a start)."""
    listings = _read_listings()
    listings[listing_key(config)] = [t.model_dump(mode="json", exclude_none=True) for t in tools]
    directory = home()
    with contextlib.suppress(OSError):
        directory.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{LISTING_NAME}.", dir=directory)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump({"version": 1, "servers": listings}, out)
            os.replace(temporary, directory / LISTING_NAME)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


@dataclass
class McpServers:
    """The MCP servers of one session and the tools they give.

    Attributes:
        connections: One per declared server, in the order declared.
        tools: Each server's tools (``None``: it could not list them).
        notices: One line per server that failed to start.
    """

    connections: list[McpConnection] = field(default_factory=list)
    tools: dict[str, list[mcp_types.Tool] | None] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)

    def extension(self) -> Extension:
        """The ``mcp`` extension: every listed tool as ``mcp__<server>__<tool>``."""
        tools = [
            harness_tool(connection, spec)
            for connection in self.connections
            for spec in self.tools.get(connection.config.name) or ()
        ]
        return mcp_bundle(tools)

    def status_lines(self) -> list[str]:
        """``/mcp``: each server, its state, its tools."""
        if not self.connections:
            return [
                'No MCP servers: declare them under "mcpServers" in settings.json, '
                "or in the project's .mcp.json."
            ]
        lines = []
        for connection in self.connections:
            tools = self.tools.get(connection.config.name) or []
            names = ", ".join(t.name for t in tools) or "none"
            lines.append(
                f"{connection.config.name} ({connection.config.transport}): "
                f"{describe_state(connection)}; tools: {names}"
            )
        return lines

    async def close(self) -> None:
        """Remember the listing of each server running now, then stop every server.

        A lazily started server listed its tools from memory; listing them again
        here keeps the memory fresh for the next session. Bounded: a server that
        does not answer in 2 s keeps its old listing.
        """
        for connection in self.connections:
            if connection.state == "running":
                with contextlib.suppress(Exception):
                    listed = await asyncio.wait_for(connection.list_tools(), timeout=2)
                    remember_tools(connection.config, listed)
            with contextlib.suppress(Exception):
                await connection.close()


def describe_state(connection: McpConnection) -> str:
    """``not started``, ``running``, ``failed: <reason>``, with ``restarted N times``."""
    if connection.state == "failed":
        state = f"failed: {connection.last_error}"
    elif connection.state == "running":
        state = "running"
    else:
        state = "not started" if connection.starts == 0 else "stopped"
    if connection.starts > 1:
        state += f", restarted {connection.starts - 1} time{'s' if connection.starts > 2 else ''}"
    return state


async def open_mcp_servers(
    configs: Sequence[McpServerConfig], start: McpStart, *, log_path: Path, cwd: Path
) -> McpServers:
    """Connect the declared servers, starting those ``start`` says to start now."""
    servers = McpServers()
    for config in configs:
        connection = McpConnection(config, log_path=log_path, cwd=cwd)
        servers.connections.append(connection)
        known = remembered_tools(config) if start == "lazy" else None
        if known is not None:
            servers.tools[config.name] = known
            continue
        try:
            listed = await connection.list_tools()
        except McpServerError as error:
            servers.notices.append(str(error))
            servers.tools[config.name] = None
            continue
        servers.tools[config.name] = listed
        remember_tools(config, listed)
    return servers
