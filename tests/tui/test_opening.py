"""The screen paints before the session opens, then shows it (issue 8 first paint)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pi_durable_tui.app import Controller, OpeningSession, ScreenModel
from pi_durable_tui.bench.tui_model import RecordingController, StaticScreenModel, sample_blocks
from pi_durable_tui.tui import PidurableApp
from tests.tui.conftest import settle, shown, text_of


async def test_the_screen_paints_opening_then_shows_the_session_and_sends_what_was_typed(
    tmp_path: Path,
) -> None:
    session_model = StaticScreenModel(sample_blocks(4))
    session_controller = RecordingController(session_model)
    release = asyncio.Event()
    painted: list[bool] = []

    async def opener() -> tuple[ScreenModel, Controller]:
        await release.wait()
        return session_model, session_controller

    opening = OpeningSession(
        str(tmp_path),
        opener,
        lambda error: None,
        on_open=lambda model, controller: app.hand_over(model, controller),
    )

    def on_painted() -> None:
        painted.append(opening.opened)
        opening.start()

    app = PidurableApp(opening, opening, log_path=tmp_path / "log", on_painted=on_painted)
    async with app.run_test() as pilot:
        await pilot.pause()
        assert painted == [False]  # called once, after the first frame, before any session
        assert shown(app.status_line)
        assert "Opening session..." in text_of(app.status_line.render())
        assert app.transcript.mounted_keys == []

        await pilot.press(*"typed while opening", "enter")
        await pilot.pause()
        assert session_controller.called("submit") == []

        release.set()
        await opening.wait_opened()
        await settle(pilot)
        assert app.transcript.mounted_keys == [b.key for b in session_model.blocks]
        assert not shown(app.status_line)
        assert session_controller.called("submit") == [("typed while opening", False)]
        # Handed over: the screen calls the session's controller itself.
        assert app.controller is session_controller
        await pilot.press(*"typed once open", "enter")
        await settle(pilot)
        assert session_controller.called("submit")[-1] == ("typed once open", False)
    assert painted == [False]
    assert session_controller.called("close") == [()]


_PAINT_PROBE = """
import json, sys
import pi_durable_tui.tui as tui

async def run_async(self, *args, **kwargs):
    # Stands in for the screen's run: what is loaded now is what the first frame waits for.
    with open(sys.argv[1], "w") as loaded:
        json.dump(sorted(sys.modules), loaded)

tui.PidurableApp.run_async = run_async
from pi_durable_tui.cli import main
main(["--model", "faux/faux-1"])
"""


def test_the_command_imports_no_layer_below_the_app_before_the_screen_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the first frame needs: Textual, the screen and the app's view values. The
    # session layers (and pydantic, httpx, aiosqlite, the MCP SDK) load after the
    # paint, on a thread. The real command runs, up to the screen's start.
    # On a pseudo-terminal: the terminal app starts only on one.
    monkeypatch.setenv("PIDURABLE_HOME", str(tmp_path / "home"))
    listing = tmp_path / "loaded.json"
    master, slave = os.openpty()
    try:
        subprocess.run(
            [sys.executable, "-c", _PAINT_PROBE, str(listing)],
            cwd=tmp_path,
            stdin=slave,
            stdout=slave,
            stderr=subprocess.PIPE,
            check=True,
        )
    finally:
        os.close(slave)
        os.close(master)
    loaded = json.loads(listing.read_text())
    below = ("harness", "kernel", "storage", "ai", "env", "tools")
    heavy = [
        name
        for name in loaded
        if name.split(".")[0] in ("pydantic", "httpx", "aiosqlite", "tiktoken", "mcp")
        or (name.startswith("pi_durable_tui.") and name.split(".")[1] in below)
    ]
    assert "pi_durable_tui.tui" in loaded
    assert heavy == []
