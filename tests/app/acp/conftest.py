"""An ACP client written from the protocol's schema, driving a real ``pidurable acp`` process.

``agent(*responses, mode=..., tokens_per_second=..., env=...)`` writes a faux script,
spawns ``python -m pi_durable_tui acp --model faux/faux-1 --faux-script ...``
with its own ``PIDURABLE_HOME`` in a project directory, and returns an
``AcpClient``: ``request`` sends a JSON-RPC request and collects the
``session/update`` notifications until its response; the agent's own
``session/request_permission`` requests are answered by ``client.permission``
(a function of the request's params returning the chosen ``optionId``, or
``None`` for ``cancelled``). Every process is killed at teardown if it is
still running.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.app.host.conftest import serve  # the host tests' fixture (test_history)
from tests.deadlines import WAIT

__all__ = ["AcpClient", "Spawn", "serve", "text_response", "tool_response"]

Choose = Callable[[dict[str, Any]], str | None]


@dataclass(eq=False)
class AcpClient:
    """One ``pidurable acp`` process and what it sent."""

    process: subprocess.Popen[str]
    project: Path
    home: Path
    permission: Choose = lambda params: "once"
    updates: list[dict[str, Any]] = field(default_factory=list)
    asked: list[dict[str, Any]] = field(default_factory=list)
    _lines: queue.Queue[str | None] = field(default_factory=queue.Queue)
    _next: int = 0

    def __post_init__(self) -> None:
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def write(self, text: str) -> None:
        """Write raw text on the agent's stdin."""
        assert self.process.stdin is not None
        self.process.stdin.write(text)
        self.process.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        """Send one JSON-RPC message."""
        self.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")

    def start(self, method: str, params: dict[str, Any]) -> int:
        """Send a request; returns its id (``response`` waits for it)."""
        self._next += 1
        self.send({"id": self._next, "method": method, "params": params})
        return self._next

    def notify(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification."""
        self.send({"method": method, "params": params})

    def receive(self) -> dict[str, Any]:
        """The next message from the agent (its own requests answered on the way)."""
        line = self._lines.get(timeout=WAIT)
        if line is None:
            raise EOFError(f"the agent ended: {self.process.wait()} {self.stderr()}")
        message = json.loads(line)
        assert message["jsonrpc"] == "2.0", message
        if message.get("method") == "session/update":
            self.updates.append(message["params"])
        elif message.get("method") == "session/request_permission":
            self.asked.append(message["params"])
            chosen = self.permission(message["params"])
            outcome = (
                {"outcome": "cancelled"}
                if chosen is None
                else {"outcome": "selected", "optionId": chosen}
            )
            self.send({"id": message["id"], "result": {"outcome": outcome}})
        return message

    def response(self, ident: int | None) -> dict[str, Any]:
        """Read until the response to ``ident``; returns it whole (``result`` or ``error``)."""
        while True:
            message = self.receive()
            if "method" not in message and message.get("id") == ident:
                return message

    def request(self, method: str, params: dict[str, Any]) -> Any:
        """Send a request and return its result (an error fails the test)."""
        found = self.response(self.start(method, params))
        assert "error" not in found, found
        return found["result"]

    def until_update(self, kind: str) -> dict[str, Any]:
        """Read until a ``session/update`` of ``kind`` came."""
        while not any(u["update"]["sessionUpdate"] == kind for u in self.updates):
            self.receive()
        return next(u["update"] for u in self.updates if u["update"]["sessionUpdate"] == kind)

    def of(self, kind: str) -> list[dict[str, Any]]:
        """The updates of ``kind`` received so far."""
        return [u["update"] for u in self.updates if u["update"]["sessionUpdate"] == kind]

    def text(self, kind: str = "agent_message_chunk") -> str:
        """The concatenated text of the chunks of ``kind``."""
        return "".join(u["content"]["text"] for u in self.of(kind))

    def initialize_and_open(self) -> str:
        """``initialize`` then ``session/new`` for the project; the session id."""
        init = self.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert init["protocolVersion"] == 1
        opened = self.request("session/new", {"cwd": str(self.project), "mcpServers": []})
        return str(opened["sessionId"])

    def prompt(self, session: str, text: str) -> dict[str, Any]:
        """``session/prompt`` with one text block; its result."""
        params = {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
        return dict(self.request("session/prompt", params))

    def stderr(self) -> str:
        """What the agent wrote on stderr (once it ended)."""
        return self.process.stderr.read() if self.process.stderr else ""

    def close_stdin(self) -> int:
        """End the agent's input; its exit status."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(timeout=WAIT)


Spawn = Callable[..., AcpClient]


def text_response(text: str) -> dict[str, Any]:
    """A faux response answering ``text``."""
    return {"content": [{"type": "text", "text": text}]}


def tool_response(command: str, lead: str = "") -> dict[str, Any]:
    """A faux response calling ``bash`` with ``command`` (after an optional text)."""
    content: list[dict[str, Any]] = [{"type": "text", "text": lead}] if lead else []
    content.append({"type": "tool_call", "name": "bash", "arguments": {"command": command}})
    return {"content": content}


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Spawn]:
    started: list[AcpClient] = []
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "home"

    def spawn(
        *responses: dict[str, Any],
        mode: str | None = "auto",
        tokens_per_second: float = 0,
        env: dict[str, str] | None = None,
    ) -> AcpClient:
        script = tmp_path / f"script-{len(started)}.json"
        script.write_text(
            json.dumps({"tokens_per_second": tokens_per_second, "responses": list(responses)})
        )
        args = ["acp", "--model", "faux/faux-1", "--faux-script", str(script)]
        if mode is not None:
            args += ["--permission-mode", mode]
        process = subprocess.Popen(
            [sys.executable, "-m", "pi_durable_tui", *args],
            cwd=project,
            env={**os.environ, "PIDURABLE_HOME": str(home), **(env or {})},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        client = AcpClient(process, project, home)
        started.append(client)
        return client

    yield spawn
    for client in started:
        if client.process.poll() is None:
            client.process.kill()
            client.process.wait()
