"""The log file and the crash line hide secret values (issue 13)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_durable_tui.tui._exit import GuardedApp

KEY = "sk-ant-api03-Q2w9E8r7T6y5U4i3"


async def _nothing() -> None:
    return None


def test_a_traceback_quoting_a_key_is_logged_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    log = tmp_path / "pidurable.log"
    app = GuardedApp(_nothing, log)

    assert app.log_traceback(RuntimeError(f"request failed with key {KEY}"), "crash")

    text = log.read_text()
    assert "RuntimeError: request failed with key [redacted]" in text
    assert KEY not in text
