"""Fixtures of the command-line tests: a home and a project directory per test.

- ``home``: ``PIDURABLE_HOME`` for this test only (the processes inherit it).
- ``project``: the working directory of the processes, with no model keys set.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    monkeypatch.setenv("PIDURABLE_HOME", str(path))
    return path


@pytest.fixture
def project(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "project"
    path.mkdir()
    monkeypatch.chdir(path)
    return path
