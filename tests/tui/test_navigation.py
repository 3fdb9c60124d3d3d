"""Navigation on a small terminal (issue 12): jumps, following after Ctrl+O, the help at 24 rows.

- Ctrl+Home/Ctrl+End (Home/End on an empty editor) jump to the top and the end
  of the transcript; the end follows new blocks again.
- Ctrl+O on a view that followed the end keeps following it.
- F1 at 80x24 scrolls, with PageUp/PageDown too, instead of the transcript behind.
- At 80x24 with the panels full, the transcript keeps a usable height.
"""

from __future__ import annotations

from pi_durable_tui.app import Notice, QueueItem, TaskNode
from pi_durable_tui.bench.tui_model import RecordingController, StaticScreenModel, sample_blocks
from pi_durable_tui.tui import PidurableApp
from pi_durable_tui.tui._help import HelpScreen
from tests.tui.conftest import FakeClock, anchored, screen_name, settle


def at_end(app: PidurableApp) -> bool:
    transcript = app.transcript
    return transcript.scroll_y == transcript.max_scroll_y > 0


async def test_ctrl_home_and_ctrl_end_jump_to_the_top_and_back_to_following_the_end(
    clock: FakeClock,
) -> None:
    model = StaticScreenModel(sample_blocks(80))
    app = PidurableApp(model, RecordingController(model), clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        transcript = app.transcript
        await settle(pilot)
        await pilot.press("ctrl+home")
        await settle(pilot)
        assert transcript.mounted_keys[0] == "e0"
        assert transcript.scroll_y == 0
        assert not anchored(transcript)
        await pilot.press("ctrl+end")
        await settle(pilot)
        assert transcript.mounted_keys[-1] == "e79"
        assert at_end(app)
        model.append(*sample_blocks(2, start=100))
        await pilot.pause(0.1)
        assert transcript.mounted_keys[-1] == "e101"
        assert at_end(app)


async def test_home_and_end_jump_on_an_empty_editor_and_move_the_cursor_otherwise(
    app: PidurableApp, model: StaticScreenModel
) -> None:
    model.append(*sample_blocks(20, start=10))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("home")
        await settle(pilot)
        assert app.transcript.scroll_y == 0
        await pilot.press("end")
        await settle(pilot)
        assert at_end(app)
        await pilot.press(*"abc", "home", "x")
        assert app.editor.text == "xabc"


async def test_ctrl_o_on_a_view_that_follows_the_end_keeps_following_it(
    app: PidurableApp, model: StaticScreenModel
) -> None:
    model.append(*sample_blocks(20, start=10))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert at_end(app)
        before = app.transcript.max_scroll_y
        await pilot.press("ctrl+o")
        await settle(pilot)
        assert app.transcript.max_scroll_y > before  # the cards grew
        assert at_end(app)
        assert anchored(app.transcript)


async def test_the_help_scrolls_at_24_rows_with_page_keys_not_the_transcript_behind(
    app: PidurableApp, model: StaticScreenModel
) -> None:
    model.append(*sample_blocks(20, start=10))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        held = app.transcript.scroll_y
        await pilot.press("f1")
        await settle(pilot)
        assert screen_name(app) == "HelpScreen"
        assert isinstance(app.screen, HelpScreen)
        scroll = app.screen.query_one("#help")
        assert scroll.region.bottom <= 24
        assert scroll.max_scroll_y > 0  # more than fits: it scrolls
        await pilot.press("pagedown")
        await settle(pilot)
        assert scroll.scroll_y > 0
        await pilot.press("pageup")
        await settle(pilot)
        assert scroll.scroll_y == 0
        assert app.transcript.scroll_y == held
        await pilot.press("escape")
        await settle(pilot)
        assert screen_name(app) != "HelpScreen"


async def test_the_transcript_keeps_a_usable_height_at_80x24_with_every_panel_full(
    app: PidurableApp, model: StaticScreenModel
) -> None:
    tasks = [TaskNode(n, "pi.tool", f"bash: step {n}", "running") for n in range(12)]
    queue = [QueueItem(n, "steer", f"queued {n}") for n in range(8)]
    notices = [Notice("info", f"notice {n}", id=n) for n in range(4)]
    async with app.run_test(size=(80, 24)) as pilot:
        model.set(tasks=tasks, queue=queue, notices=notices, busy=True)
        app.editor.text = "\n".join(f"line {n}" for n in range(20))
        await settle(pilot)
        assert app.transcript.size.height >= 5
        assert app.notice_bar.size.height == 4  # every notice still shows
        assert app.footer_bar.region.bottom <= 24
        assert app.editor.region.bottom <= 22
