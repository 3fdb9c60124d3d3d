"""``python -m pi_durable_tui.ai`` streams one answer, then usage and cost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.ai.__main__ import main

SECRET = "sk-cli-secret-0123456789"
REPO = Path(__file__).resolve().parents[2]

SCRIPT = {
    "responses": [
        {
            "content": [
                {"type": "thinking", "text": "First I think.\nThen I act."},
                {"type": "text", "text": "Reading the file now."},
                {"type": "tool_call", "name": "read", "arguments": {"path": "a.txt"}, "id": "t1"},
            ],
            "usage": {"input": 40, "output": 12},
        }
    ]
}


def write_script(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a child process: no keys, no proxies, a private home."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.upper().endswith(("_API_KEY", "_PROXY", "BASE_URL"))
    }
    env.update(PIDURABLE_HOME=str(tmp_path / "home"), PYTHONPATH=str(REPO), **extra)
    return env


def run_cli(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_durable_tui.ai", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(tmp_path, **env),
        cwd=tmp_path,
        check=False,
    )


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def test_a_faux_script_answer_streams_to_stdout_with_usage_in_a_subprocess(tmp_path: Path) -> None:
    script = write_script(tmp_path, SCRIPT)

    done = run_cli(tmp_path, "--model", "faux/faux-1", "--faux-script", str(script), "hello")

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "[thinking] First I think.",
        "[thinking] Then I act.",
        "Reading the file now.",
        '-> tool call read {"path": "a.txt"} (id t1)',
        "usage: 40 input, 12 output, 0 cache read, 0 cache write tokens; cost $0.000000; toolUse",
    ]
    assert done.stderr == ""


def test_a_scripted_provider_error_exits_1_with_the_message_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_keys: None
) -> None:
    script = write_script(
        tmp_path, {"responses": [{"error": {"message": "Overloaded", "status": 529}}]}
    )

    status = main(["--model", "faux/faux-1", "--faux-script", str(script), "hi"])

    captured = capsys.readouterr()
    assert status == 1
    assert captured.err == "error: Overloaded (status 529)\n"
    assert captured.out == ""


def test_a_malformed_script_exits_2_naming_the_file_and_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_keys: None
) -> None:
    script = write_script(tmp_path, {"responses": [{"content": [{"type": "image"}]}]})

    status = main(["--model", "faux/faux-1", "--faux-script", str(script), "hi"])

    assert status == 2
    assert f"{script}: responses[0].content[0].type: expected one of" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["hi"], "the following arguments are required: --model"),
        (["--model", "nonsense", "hi"], "provider/model-id"),
        (["--model", "faux/faux-1", "hi"], "faux models need --faux-script FILE"),
        (["--model", "openai/gpt-5", "--thinking", "huge", "hi"], "invalid choice: 'huge'"),
    ],
)
def test_bad_arguments_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str], no_keys: None
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(args)

    assert caught.value.code == 2
    assert message in capsys.readouterr().err


def test_an_unknown_model_exits_2_listing_the_providers_models(
    capsys: pytest.CaptureFixture[str], no_keys: None
) -> None:
    status = main(["--model", "anthropic/claude-nope", "hi"])

    err = capsys.readouterr().err
    assert status == 2
    assert "Unknown model anthropic/claude-nope" in err
    assert "claude-sonnet-4-5" in err


def test_a_missing_key_exits_1_naming_the_variable_and_printing_no_key(
    capsys: pytest.CaptureFixture[str], no_keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)

    status = main(["--model", "anthropic/claude-haiku-4-5", "hi"])

    captured = capsys.readouterr()
    assert status == 1
    assert "ANTHROPIC_API_KEY is not set" in captured.err
    assert SECRET not in captured.err + captured.out


def test_error_messages_are_scrubbed_of_secret_environment_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pi_durable_tui.ai.__main__ import _redact

    monkeypatch.setenv("SOME_SERVICE_TOKEN", SECRET)

    assert _redact(f"bad header Bearer {SECRET}") == "bad header Bearer [redacted]"


class _ChatServer(BaseHTTPRequestHandler):
    """Serves one canned OpenAI-compatible SSE answer and records the request."""

    requests: list[dict[str, Any]] = []
    status = 200

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        type(self).requests.append({"path": self.path, "body": body})
        if self.status != 200:
            payload = json.dumps({"error": {"message": "model not loaded"}}).encode()
            self.send_response(self.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        chunks: list[dict[str, Any]] = [
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hello"}}]},
            {"choices": [{"index": 0, "delta": {"content": " from the local server"}}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 5}},
        ]
        stream = "".join(f"data: {json.dumps({'id': 'c1', **c})}\n\n" for c in chunks)
        payload = (stream + "data: [DONE]\n\n").encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def chat_server() -> Iterator[tuple[str, type[_ChatServer]]]:
    pytest.importorskip("pi_durable_tui.ai.providers._openai_completions")
    handler = type("Handler", (_ChatServer,), {"requests": [], "status": 200})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_base_url_streams_from_a_local_openai_compatible_server(
    tmp_path: Path, chat_server: tuple[str, type[_ChatServer]]
) -> None:
    url, handler = chat_server

    done = run_cli(tmp_path, "--model", "local/tiny", "--base-url", url, "say hello")

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "Hello from the local server",
        "usage: 7 input, 5 output, 0 cache read, 0 cache write tokens; cost $0.000000; stop",
    ]
    [request] = handler.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["body"]["model"] == "tiny"
    assert request["body"]["messages"][-1]["role"] == "user"


def test_a_local_server_error_exits_1_with_its_message(
    tmp_path: Path, chat_server: tuple[str, type[_ChatServer]]
) -> None:
    url, handler = chat_server
    handler.status = 503

    args = ("--model", "local/tiny", "--base-url", url, "hi")
    done = run_cli(tmp_path, *args, OPENAI_API_KEY=SECRET)

    assert done.returncode == 1
    assert "model not loaded" in done.stderr
    assert SECRET not in done.stderr + done.stdout
