"""The main screen paints typed text at once, whatever the phase of Textual's frame timer.

Textual's frame timer is slowed to one tick every 10 s here, so a paint that waits
for a frame does not come during the test. Keys are posted as the terminal driver
posts them: ``Pilot.press`` and ``Pilot.pause`` paint a frame themselves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from textual import events
from textual.geometry import Region
from textual.strip import Strip

from pi_durable_tui.app import Block
from pi_durable_tui.bench.tui_model import StaticScreenModel
from pi_durable_tui.tui import PidurableApp


@pytest.fixture(autouse=True)
def slow_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    """Textual's frame timer ticks once every 10 s (its period is read when a screen starts)."""
    monkeypatch.setattr("textual.screen.UPDATE_PERIOD", 10.0)


async def eventually(condition: Callable[[], bool], seconds: float = 3.0) -> bool:
    """Poll ``condition`` for up to ``seconds`` (a generous wait, never a timing claim)."""
    for _ in range(int(seconds / 0.01)):
        if condition():
            return True
        await asyncio.sleep(0.01)
    return condition()


async def streaming(app: PidurableApp, model: StaticScreenModel) -> list[str]:
    """Start a streaming answer; return the live tail's painted lines from now on."""
    model.append(Block("live", "assistant", text="The answer ", streaming=True))
    assert await eventually(lambda: app.transcript.view("live") is not None)
    live = app.transcript.view("live")
    assert live is not None
    tail = live.query_one("LiveTail")
    painted: list[str] = []
    render_lines = tail.render_lines

    def recording(crop: Region) -> list[Strip]:
        strips = render_lines(crop)
        painted.extend(strip.text for strip in strips)
        return strips

    tail.render_lines = recording  # type: ignore[method-assign]
    return painted


async def test_a_key_typed_while_an_answer_streams_is_painted_without_waiting_for_a_frame(
    app: PidurableApp, model: StaticScreenModel
) -> None:
    async with app.run_test(size=(100, 30)):
        await streaming(app, model)
        model.update("live", text="The answer grows ")
        painted: list[str] = []
        render_line = app.editor.render_line

        def recording(y: int) -> Strip:
            strip = render_line(y)
            painted.append(strip.text)
            return strip

        app.editor.render_line = recording  # type: ignore[method-assign]
        app.post_message(events.Key("x", "x"))
        assert await eventually(lambda: app.editor.text == "x")
        assert await eventually(lambda: any("x" in line for line in painted)), painted


async def test_the_stream_alone_still_waits_for_the_frame_timer(
    app: PidurableApp, model: StaticScreenModel
) -> None:
    # The other half of the rule: only the focused widget's repaint skips Textual's
    # pacing, so streamed text is painted at the frame rate, not once per update.
    async with app.run_test(size=(100, 30)):
        tail = await streaming(app, model)
        model.update("live", text="The answer grows longer")
        live = app.transcript.view("live")
        assert await eventually(lambda: getattr(live, "shown_length", 0) == 23)
        await asyncio.sleep(0.2)
        assert tail == []
