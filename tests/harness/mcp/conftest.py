"""Fixtures of the MCP tests: the real server over stdio and over HTTP (``mcp_server_support``)."""

from tests.harness.mcp.mcp_server_support import http_process, http_server, server_script

__all__ = ["http_process", "http_server", "server_script"]
