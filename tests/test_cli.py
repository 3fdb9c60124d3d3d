"""The ``pidurable`` command line offers only what exists."""

from __future__ import annotations

import subprocess
import sys

from pi_durable_tui import __version__
from pi_durable_tui.cli import main


def test_version_prints_the_package_version() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pi_durable_tui", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == f"pidurable {__version__}"


def test_help_describes_the_durable_agent() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pi_durable_tui", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "usage: pidurable" in out.stdout
    assert "committed" in out.stdout


def test_print_mode_without_a_model_starts_and_says_how_to_configure_one(
    tmp_path, monkeypatch, capsys
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["-p", "hello"]) == 1
    assert "No model is configured; use --model" in capsys.readouterr().err
