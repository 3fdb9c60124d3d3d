"""Fixtures for the screen in isolation: a static model, a recording controller, a clock.

The app runs headless with ``App.run_test()``; ``settle`` waits until the
controller calls the keys started have finished and the screen caught up.
"""

from __future__ import annotations

import asyncio
import io
import time
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Static

from pi_durable_tui.bench.tui_model import RecordingController, StaticScreenModel, sample_blocks
from pi_durable_tui.tui import PidurableApp
from pi_durable_tui.tui._prompt_keys import PromptScreen
from tests.deadlines import WAIT


class FakeClock:
    """Monotonic seconds that move only when a test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def model() -> StaticScreenModel:
    return StaticScreenModel(sample_blocks(6))


@pytest.fixture
def controller(model: StaticScreenModel) -> RecordingController:
    return RecordingController(model)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    return tmp_path / "session" / "pidurable.log"


@pytest.fixture
def themes_dir(tmp_path: Path) -> Path:
    path = tmp_path / "themes"
    path.mkdir()
    return path


@pytest.fixture
def app(
    model: StaticScreenModel,
    controller: RecordingController,
    clock: FakeClock,
    log_path: Path,
    themes_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> PidurableApp:
    monkeypatch.delenv("NO_COLOR", raising=False)
    return PidurableApp(model, controller, clock=clock, log_path=log_path, themes_dir=themes_dir)


async def settle(pilot: Pilot[None]) -> None:
    """Wait for controller calls to finish (or to wait on a picker) and the screen to catch up."""
    await pilot.pause()
    # A command waiting on a picker never completes until the picker closes: poll, with a
    # deadline, rather than wait (and never cancel a wait: that would cancel the worker).
    for _ in range(20):
        if all(worker.is_finished for worker in pilot.app.workers):
            break
        await asyncio.sleep(0.01)
    await pilot.pause()


def running(app: PidurableApp) -> bool:
    """Whether the app still runs (a call, so checks before and after do not narrow)."""
    return app.is_running


def text_of(content: object, width: int = 100) -> str:
    """Render what a ``Static`` holds (a Rich renderable or Textual content) as plain text."""
    console = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    console.print(content)
    return console.export_text()


def shown(widget: Widget) -> bool:
    """Whether a widget is displayed (a call, so checks before and after do not narrow)."""
    return widget.display


def screen_name(app: PidurableApp) -> str:
    """The class name of the active screen (``PickerScreen``, ``HelpScreen``...)."""
    return type(app.screen).__name__


def anchored(widget: Widget) -> bool:
    """Whether a scrolling widget follows its end (a call, so checks do not narrow)."""
    return widget.is_anchored


def prompt_text(app: PidurableApp, kind: type[PromptScreen[Any]]) -> str:
    """Everything the prompt on top (of type ``kind``) shows, as plain text."""
    screen = app.screen
    assert isinstance(screen, kind)
    return "\n".join(text_of(static.content) for static in screen.query(Static))


async def prompt_settled(
    pilot: Pilot[None], kind: type[PromptScreen[Any]], settling_hint: str
) -> None:
    """Wait (``WAIT`` at most) until a ``kind`` prompt is up and its keys line shows its keys."""
    app = pilot.app
    deadline = time.monotonic() + WAIT
    while True:
        screen = app.screen
        if isinstance(screen, kind) and screen.armed():
            assert isinstance(app, PidurableApp)
            if settling_hint not in prompt_text(app, kind):
                return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the screen never showed a settled {kind.__name__}")
        await pilot.pause(0.01)
