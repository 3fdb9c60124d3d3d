"""``pidurable -p`` against a local OpenAI-compatible server, as a new user runs it.

The real process (``python -m pi_durable_tui``) talks to the recorded-stream
server of ``tests.ai.sse_server`` on 127.0.0.1: ``--base-url`` continued with
``-c``, ``OPENAI_BASE_URL`` without a key, and a model the server lacks. Each
failure is one line on stderr, the prompt stays in the session, and ``-c``
answers once the server does.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.ai.sse_server import SseServer
from tests.e2e.tui_terminal import DEADLINE


@pytest.fixture
async def server() -> AsyncIterator[SseServer]:
    served = SseServer()
    await served.start()
    try:
        yield served
    finally:
        await served.close()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PIDURABLE_HOME", str(tmp_path / "home"))
    path = tmp_path / "project"
    path.mkdir()
    return path


async def pidurable(cwd: Path, *args: str, **env: str) -> tuple[int, str, str]:
    """Run the real ``pidurable`` while this loop serves the test server; its status and output."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pi_durable_tui",
        *args,
        cwd=cwd,
        env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), DEADLINE)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_a_session_on_a_base_url_model_continues_with_the_same_base_url(
    project: Path, server: SseServer
) -> None:
    url = f"{server.url}/v1"
    server.sse("openai-completions", "text")
    server.sse("openai-completions", "text")
    first = await pidurable(project, "--base-url", url, "--model", "ollama/qwen3", "-p", "one")
    assert first == (0, "Hello, world!\n", "")

    again = await pidurable(project, "--base-url", url, "-c", "-p", "two")

    assert again == (0, "Hello, world!\n", "")
    assert [r.json()["model"] for r in server.requests] == ["qwen3", "qwen3"]


async def test_openai_base_url_without_a_key_serves_the_servers_own_model_names(
    project: Path, server: SseServer
) -> None:
    server.sse("openai-completions", "text")

    status, out, err = await pidurable(
        project, "--model", "openai/qwen3:8b", "-p", "hi", OPENAI_BASE_URL=f"{server.url}/v1"
    )

    assert (status, out, err) == (0, "Hello, world!\n", "")
    [request] = server.requests
    assert (request.path, request.json()["model"]) == ("/v1/chat/completions", "qwen3:8b")
    assert "authorization" not in request.headers  # a local server needs no key


async def test_a_model_the_server_lacks_is_one_line_naming_what_it_serves_and_nothing_is_lost(
    project: Path, server: SseServer
) -> None:
    url = f"{server.url}/v1"
    server.error(404, '{"error": {"message": "model \\"qwen9\\" not found, try pulling it"}}')
    server.error(200, '{"object": "list", "data": [{"id": "qwen3:8b"}]}')
    base = ("--base-url", url)

    status, out, err = await pidurable(project, *base, "--model", "ollama/qwen9", "-p", "first")

    assert (status, out) == (1, "")
    assert err == (
        'pidurable: the model request failed: HTTP 404: model "qwen9" not found, try pulling '
        f"it (the server at {url} has no model 'qwen9'; it serves: qwen3:8b)\n"
    )
    server.sse("openai-completions", "text")
    again = await pidurable(project, *base, "--model", "ollama/qwen3:8b", "-c", "-p", "second")
    assert again == (0, "Hello, world!\n", "")
    sent = server.requests[-1].json()["messages"]
    assert [m["content"] for m in sent if m["role"] == "user"] == ["first", "second"]
