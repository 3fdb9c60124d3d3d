"""Choosing a model in a real terminal without its key, or one that does not exist.

The real app runs in tmux (``tui_terminal``) with no model key set. Started on
``--model anthropic/...``, it names ``ANTHROPIC_API_KEY`` before any prompt;
``/model openai/gpt-5`` names ``OPENAI_API_KEY`` and the settings field of a
custom provider's variable; ``/model nowhere/x`` says which providers exist.
Each is a notice of its own words (no "failed", no log to look in), the app keeps
running on its model, and no traceback reaches the session's log. Nothing is sent:
no key, no request.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.tui_terminal import Terminal, contains, flat, require_tmux

SCRIPT = {"responses": [{"content": [{"type": "text", "text": "unused"}]}]}


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    require_tmux()
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    made = Terminal(tmp_path / "t", script)
    # Empty is unset (a key of the test runner's must not reach the app).
    made.environment = {"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}
    yield made
    made.close()


def test_a_model_without_its_key_or_unknown_is_a_notice_naming_what_to_do_and_the_app_runs_on(
    terminal: Terminal,
) -> None:
    terminal.start("--model", "anthropic/claude-sonnet-4-5")
    terminal.wait_for(
        contains("anthropic/claude-sonnet-4-5 needs ANTHROPIC_API_KEY: export ANTHROPIC_API_KEY="),
        "the missing key named at start",
    )

    terminal.submit("/model openai/gpt-5")
    screen = terminal.wait_for(
        contains("openai/gpt-5 needs OPENAI_API_KEY: export OPENAI_API_KEY=", '"api_key_env"'),
        "the missing key of the chosen model",
    )
    assert "failed" not in screen

    terminal.submit("/model nowhere/x")
    screen = terminal.wait_for(
        contains("Unknown model nowhere/x: no provider 'nowhere' (known: anthropic, faux, openai)"),
        "the unknown provider",
    )
    assert "failed" not in flat(screen)
    assert "Traceback" not in screen

    assert not terminal.dead()
    assert "anthropic/claude-sonnet-4-5" in screen.splitlines()[-1]  # the footer: unchanged
    logs = list(terminal.home.glob("sessions/*/*/pidurable.log"))
    assert all("Traceback" not in log.read_text() for log in logs)
