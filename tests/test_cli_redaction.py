"""The canary: a secret of the process never reaches the store, the output or an export (issue 13).

A faux-scripted model writes the value of ``OPENAI_API_KEY`` (set in the
environment of a real ``pidurable`` process) in its thinking, its answer and a
``bash`` call's arguments, and the command prints it; the stream is paced so
the key is cut by chunk boundaries and committed partials land while it is
incomplete. Afterwards every byte of every file the runs left (the SQLite
store with its WAL, the home directory, logs), the ``-p`` output, the
``--mode json`` events and every export format hold the canary 0 times.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests import test_cli
from tests.test_cli import pidurable
from tests.wire_lines import is_streamed, messages

# The fixtures of the headless command's tests: a project with its own home, no
# process left behind.
project = test_cli.project
_no_process_left = test_cli._no_process_left

CANARY = "sk-canary-7f3a9c2e5b8d1f4a6c0e9b2d"
"""The secret: long enough that the faux provider's 4-character chunks cut it several times."""


def leaky_script(path: Path) -> Path:
    """A model that writes the canary everywhere it can: thinking, text, tool arguments."""
    responses = [
        {
            "content": [
                {"type": "thinking", "text": f"The user's key is {CANARY}, I will print it."},
                {"type": "text", "text": f"Running a command with {CANARY} in it."},
                {
                    "type": "tool_call",
                    "name": "bash",
                    "arguments": {"command": f"echo key={CANARY}; echo done"},
                },
            ],
            "stop_reason": "toolUse",
        },
        {"content": [{"type": "text", "text": f"The key was {CANARY}. Finished."}]},
    ]
    path.write_text(json.dumps({"tokens_per_second": 40, "responses": responses}))
    return path


@pytest.fixture
def leaky(project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The canary is this process's OpenAI key; the script lives outside the scanned tree."""
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    outside = tmp_path.parent / f"{tmp_path.name}-script"
    outside.mkdir()
    return leaky_script(outside / "leaky.json")


START = CANARY[:9]
"""The canary's first 9 characters: a partial cut inside the key must not show even these."""


def occurrences(root: Path, piece: str) -> dict[str, int]:
    """The files under ``root`` that hold ``piece``, with how often."""
    found: dict[str, int] = {}
    for path in root.rglob("*"):
        if path.is_file():
            count = path.read_bytes().count(piece.encode())
            if count:
                found[str(path)] = count
    return found


def test_a_canary_secret_written_by_the_model_and_a_command_is_stored_and_printed_0_times(
    project: Path, leaky: Path, tmp_path: Path
) -> None:
    model = ("--model", "faux/faux-1", "--faux-script", str(leaky))

    printed = pidurable(project, "--session", "text.sqlite", "-p", "go", *model)
    events = pidurable(project, "--session", "json.sqlite", "-p", "go", "--mode", "json", *model)
    exports = [
        pidurable(project, "export", "--session", "text.sqlite", "--format", fmt)
        for fmt in ("jsonl", "markdown", "html")
    ]

    assert printed[0] == 0, printed
    assert events[0] == 0, events
    for status, out, err in (printed, events, *exports):
        assert status == 0, err
        assert START not in out
        assert START not in err
    assert "[redacted]" in printed[1]
    assert any(is_streamed(message) for message in messages(events[1]))  # partials were printed
    assert "key=[redacted]" in events[1]  # the command's output, redacted
    for _, out, _ in exports:
        assert "[redacted]" in out
    assert occurrences(tmp_path, CANARY) == {}
    assert occurrences(tmp_path, START) == {}  # not even the start of it, from a partial


def test_a_custom_provider_s_key_variable_is_kept_from_commands_whatever_its_name(
    project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = Path(os.environ["PIDURABLE_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    model = {"id": "m", "context_window": 32768, "max_tokens": 4096}
    provider = {"name": "llama", "base_url": "http://127.0.0.1:9/v1", "api": "openai-completions"}
    settings = {"providers": [{**provider, "api_key_env": "LLAMA_KEY", "models": [model]}]}
    (home / "settings.json").write_text(json.dumps(settings))
    monkeypatch.setenv("LLAMA_KEY", CANARY)  # a plain name: only the settings make it a key
    command = {"command": 'echo "seen=[$LLAMA_KEY]"'}
    call = {"type": "tool_call", "name": "bash", "arguments": command}
    responses = [
        {"content": [call], "stop_reason": "toolUse"},
        {"content": [{"type": "text", "text": "done"}]},
    ]
    script = tmp_path / "printenv.json"
    script.write_text(json.dumps({"responses": responses}))

    faux = ("--model", "faux/faux-1", "--faux-script", str(script))
    status, out, err = pidurable(project, "-p", "go", "--mode", "json", *faux)

    assert status == 0, err
    assert "seen=[]" in out  # the command never saw it (not even as [redacted])
