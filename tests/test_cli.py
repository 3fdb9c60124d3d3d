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


def test_running_without_a_front_end_says_so_and_fails(capsys) -> None:
    assert main([]) == 2
    assert "not built yet" in capsys.readouterr().err
