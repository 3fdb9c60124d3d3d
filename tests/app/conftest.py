"""Fixtures of the app tests: a home and a project directory per test, faux scripts, open apps.

- ``home``: ``PIDURABLE_HOME`` for this test only (subprocesses inherit it).
- ``project``: the working directory of the run (the test ``chdir``s into it).
- ``open_app``: opens ``AgentApp`` sessions in ``project`` and closes them after the test.
- ``sse_server``: the recorded-SSE server of the model-layer tests, on 127.0.0.1.
- ``small_disk``: a 16 MiB tmpfs holding ``PIDURABLE_HOME`` (needs root; skipped
  without), which a test fills so that a commit fails for real (issue 12).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.app import AgentApp, AppOptions
from tests.ai.conftest import sse_server  # the model-layer tests' fixture
from tests.cli.support import mount_tmpfs, unmount

OpenApp = Callable[..., Awaitable[AgentApp]]
__all__ = ["BIG", "OpenApp", "sse_server"]

BIG = "word " * 200_000
"""A 1 MB answer: its streamed partials need more than the room a filled ``small_disk`` leaves."""


@pytest.fixture
def small_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A 16 MiB tmpfs holding ``PIDURABLE_HOME`` (the sessions' stores)."""
    disk = tmp_path / "disk"
    mount_tmpfs(disk, "16m")
    monkeypatch.setenv("PIDURABLE_HOME", str(disk / "home"))
    yield disk
    unmount(disk)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    monkeypatch.setenv("PIDURABLE_HOME", str(path))
    return path


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    monkeypatch.chdir(path)
    return path


@pytest.fixture
async def open_app(home: Path, project: Path) -> AsyncIterator[OpenApp]:
    opened: list[AgentApp] = []

    async def open_(**options: Any) -> AgentApp:
        app = await AgentApp.open(AppOptions(cwd=str(project), **options))
        opened.append(app)
        return app

    yield open_
    for app in opened:
        await app.close()
