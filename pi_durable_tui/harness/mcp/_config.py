"""MCP server declarations read from settings (issue 16).

Owns the shape users write, Claude Code's: ``"mcpServers": {"name": {"command",
"args", "env"}}`` for a server started over stdio, or ``{"url", "headers"}`` for a
streamable HTTP one. Only the user's own settings (or a project file the user
trusted, DESIGN.md section 2) reach here: a server widens powers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True)
class McpServerConfig:
    """One declared MCP server.

    Args:
        name: The key under ``mcpServers``; tools are named ``mcp__<name>__<tool>``.
        command: The program of a stdio server (``None`` for an HTTP one).
        args: Its arguments.
        env: Variables given to the server process only (never shown, R-secrets).
        url: The endpoint of a streamable HTTP server.
        headers: HTTP headers sent to it (may hold a token: never shown).
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)

    @property
    def transport(self) -> str:
        """``"stdio"`` or ``"http"``."""
        return "stdio" if self.command is not None else "http"


def _strings(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError(f"{where} must be an object of strings")
    return dict(value)


def parse_mcp_servers(value: Any) -> tuple[McpServerConfig, ...]:
    """Read an ``mcpServers`` object into server declarations.

    Args:
        value: The settings value (a JSON object of server name to declaration).

    Returns:
        The servers, in the order written.

    Raises:
        ValueError: One line naming the bad server and what to write instead.
    """
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise ValueError("mcpServers must be an object of server name to declaration")
    servers = []
    for name, spec in value.items():
        where = f"mcpServers.{name}"
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"{where}: a server name uses letters, digits, '_' and '-' only")
        if not isinstance(spec, Mapping):
            raise ValueError(f"{where} must be an object with 'command' or 'url'")
        command, url = spec.get("command"), spec.get("url")
        if (command is None) == (url is None):
            raise ValueError(f"{where} needs exactly one of 'command' (stdio) or 'url' (HTTP)")
        if command is not None:
            args = spec.get("args", [])
            if not isinstance(command, str) or not command:
                raise ValueError(f"{where}.command must be a non-empty string")
            if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
                raise ValueError(f"{where}.args must be a list of strings")
            servers.append(
                McpServerConfig(
                    name,
                    command=command,
                    args=tuple(args),
                    env=_strings(spec.get("env"), f"{where}.env"),
                )
            )
        else:
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise ValueError(f"{where}.url must be an http:// or https:// address")
            servers.append(
                McpServerConfig(
                    name, url=url, headers=_strings(spec.get("headers"), f"{where}.headers")
                )
            )
    return tuple(servers)
