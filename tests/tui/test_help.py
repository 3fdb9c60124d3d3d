"""The help, at 40x12 and at 120x40: every word of every key and command, on a line it scrolls to.

At 40 columns the two-column tables left their descriptions eight columns and cut
words with ``…`` ("conve…"); the help now stacks each key over its description
when a table would leave the description fewer than ``MIN_DESCRIPTION`` columns.
At any width the tables dropped the commands' synopses (``[provider/model]`` was
read as Rich markup). The test reads the lines the help's widgets render at their
real width, and scrolls the help to its end (PageDown, as a user would).
"""

from __future__ import annotations

import pytest
from textual.containers import VerticalScroll
from textual.geometry import Region
from textual.widgets import Static

from pi_durable_tui.bench.tui_model import RecordingController, StaticScreenModel
from pi_durable_tui.tui import PidurableApp
from pi_durable_tui.tui._commands import COMMANDS
from pi_durable_tui.tui._help import HelpScreen
from tests.tui.conftest import screen_name, settle


def rendered_lines(widget: Static) -> list[str]:
    """Every line the widget renders at its width, scrolled into view or not."""
    width, height = widget.size
    return [strip.text.rstrip() for strip in widget.render_lines(Region(0, 0, width, height))]


def words(text: str) -> list[str]:
    return text.split()


@pytest.mark.parametrize(
    ("size", "opened_by"), [((40, 12), "f1"), ((40, 12), "/help"), ((120, 40), "f1")]
)
async def test_the_help_shows_every_key_and_command_whole_and_scrolls_to_its_last_line(
    model: StaticScreenModel, size: tuple[int, int], opened_by: str
) -> None:
    app = PidurableApp(model, RecordingController(model))
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        if opened_by == "f1":
            await pilot.press("f1")
        else:
            app.editor.text = "/help"
            await pilot.press("end", "escape", "enter")
        await settle(pilot)
        assert screen_name(app) == "HelpScreen"
        screen = app.screen
        assert isinstance(screen, HelpScreen)

        shown = [
            rendered_lines(screen.query_one(f"#help-{part}", Static))
            for part in ("keys", "commands")
        ]
        text = "\n".join(line for lines in shown for line in lines)
        assert "…" not in text
        assert all(
            len(line) <= screen.query_one("#help-keys").size.width for line in text.splitlines()
        )
        expected = [(key, description) for key, description in screen._keys]
        expected += [(f"/{c.name} {c.args}".rstrip(), c.summary) for c in COMMANDS]
        flowing = words(text)
        for key, description in expected:
            row = words(key) + words(description)
            starts = [i for i in range(len(flowing)) if flowing[i : i + len(row)] == row]
            assert starts, f"not shown whole: {key} {description}"

        scroll = screen.query_one("#help", VerticalScroll)
        assert scroll.region.bottom <= size[1]
        assert scroll.max_scroll_y > 0
        for _ in range(100):
            if scroll.scroll_y >= scroll.max_scroll_y:
                break
            await pilot.press("pagedown")
            await settle(pilot)
        last = screen.query_one("#help-close", Static)
        assert scroll.scroll_y == scroll.max_scroll_y
        assert scroll.content_region.contains_region(last.region)
