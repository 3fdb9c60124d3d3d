"""A real MCP server written with the ``mcp`` SDK, started by the tests (issue 16).

``SERVER_SOURCE`` is a program: over stdio by default, over streamable HTTP on
127.0.0.1 when given ``http <port>``. Its tools: ``echo`` (read-only), ``note``
(writes a line to ``$NOTES``; not read-only), ``slow_note`` (the same, then
sleeps a minute), ``broken`` (raises), ``pixel``
(returns an image), ``pid`` (the server's process id, read-only).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

SERVER_SOURCE = r'''
import base64, os, sys
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.types import Image
from mcp.types import ToolAnnotations
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("probe")
if os.environ.get("PIDFILE"):
    with open(os.environ["PIDFILE"], "w") as f:
        f.write(str(os.getpid()))

@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Say the text back."""
    print("echo called", file=sys.stderr, flush=True)
    return "echo: " + text

@server.tool()
def note(text: str) -> str:
    """Append a line to the notes file."""
    with open(os.environ["NOTES"], "a") as f:
        f.write(text + "\n")
    return "noted"

@server.tool()
def slow_note(text: str) -> str:
    """Append a line to the notes file, then take a minute."""
    import time
    with open(os.environ["NOTES"], "a") as f:
        f.write(text + "\n")
    time.sleep(60)
    return "noted slowly"

@server.tool()
def broken() -> str:
    """Always fails."""
    raise ToolError("the probe tool broke")

@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())

@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def pixel() -> Image:
    """A tiny image."""
    return Image(data=base64.b64decode("iVBORw0KGgo="), format="png")

if len(sys.argv) > 2 and sys.argv[1] == "http":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
else:
    server.run()
'''


@pytest.fixture
def server_script(tmp_path: Path) -> Path:
    """The server program, written to a temp file."""
    path = tmp_path / "probe_server.py"
    path.write_text(SERVER_SOURCE)
    return path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class HttpServer:
    """The probe server over streamable HTTP on a loopback port: started, killed, started again."""

    def __init__(self, script: Path, tmp_path: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self._script = script
        self._env = {**os.environ, "NOTES": str(tmp_path / "notes.txt")}
        self._log = (tmp_path / "http_server.log").open("a")
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the server and wait until its port accepts connections."""
        self.process = process = subprocess.Popen(
            [sys.executable, str(self._script), "http", str(self.port)],
            env=self._env,
            stderr=self._log,
            stdout=self._log,
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the HTTP MCP server did not start") from None
                time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL the server process and reap it."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)

    def stop(self) -> None:
        """Terminate the server (teardown)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self._log.close()


@pytest.fixture
def http_process(server_script: Path, tmp_path: Path) -> Iterator[HttpServer]:
    """The server over streamable HTTP on loopback, as a process the test can kill."""
    server = HttpServer(server_script, tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def http_server(http_process: HttpServer) -> str:
    """The same server over streamable HTTP on loopback; its URL."""
    return http_process.url
