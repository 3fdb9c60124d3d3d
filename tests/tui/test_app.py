"""The app's keys and exits against a recording controller (durable-behavior.md 5.2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_durable_tui.app import ActionRefused, Block, QueueItem
from pi_durable_tui.bench.tui_model import RecordingController, StaticScreenModel
from pi_durable_tui.tui import PidurableApp
from tests.tui.conftest import FakeClock, running, screen_name, settle, shown


async def test_enter_submits_the_text_and_clears_the_editor(
    app: PidurableApp, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        await pilot.press(*"fix it", "enter")
        await settle(pilot)
        assert controller.called("submit") == [("fix it", False)]
        assert app.editor.text == ""


async def test_keys_typed_before_the_app_handles_enter_stay_in_the_editor(
    app: PidurableApp, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        app.editor.text = "make it"
        app.editor.move_cursor(app.editor.document.end)
        app.editor.action_submit()  # Submitted is posted, not handled yet
        app.editor.insert("DRAFT")  # a terminal burst: Enter, then the next words
        await settle(pilot)
        assert controller.called("submit") == [("make it", False)]
        assert app.editor.text == "DRAFT"


async def test_the_screen_shows_a_submission_only_once_it_is_committed(
    app: PidurableApp, model: StaticScreenModel
) -> None:
    async with app.run_test() as pilot:
        before = app.transcript.mounted_keys
        await pilot.press(*"hello", "enter")
        await settle(pilot)
        assert app.transcript.mounted_keys == before
        model.append(Block("e100", "user", 100, text="hello"))
        await pilot.pause()
        assert app.transcript.mounted_keys[-1] == "e100"


async def test_enter_while_busy_sends_to_the_controller_which_steers_R57(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        model.set(busy=True, status="Working... (esc to abort)")
        await pilot.pause()
        assert "steers" in str(app.editor.placeholder)
        assert shown(app.status_line)
        await pilot.press(*"use pathlib", "enter")
        await settle(pilot)
        assert controller.called("submit") == [("use pathlib", False)]


@pytest.mark.parametrize("key", ["alt+enter", "ctrl+f"])
async def test_follow_up_keys_queue_a_follow_up_including_the_tmux_fallback(
    app: PidurableApp, controller: RecordingController, key: str
) -> None:
    async with app.run_test() as pilot:
        await pilot.press(*"then run lint", key)
        await settle(pilot)
        assert controller.called("submit") == [("then run lint", True)]


def test_ctrl_f_is_one_control_byte_any_terminal_delivers_while_alt_enter_may_not() -> None:
    from textual._xterm_parser import XTermParser

    def keys(data: str) -> list[str]:
        parser = XTermParser()
        return [getattr(event, "key", "") for event in [*parser.feed(data), *parser.feed("")]]

    assert keys("\x06") == ["ctrl+f"]
    assert keys("\x1b\r") == ["enter"]  # Alt+Enter without the kitty protocol: a plain Enter


@pytest.mark.parametrize("key", ["shift+enter", "ctrl+j"])
async def test_newline_keys_insert_a_newline_instead_of_sending(
    app: PidurableApp, controller: RecordingController, key: str
) -> None:
    async with app.run_test() as pilot:
        await pilot.press("a", key, "b")
        await settle(pilot)
        assert app.editor.text == "a\nb"
        assert controller.called("submit") == []


async def test_a_failed_submit_puts_the_text_back_and_says_why(
    app: PidurableApp, controller: RecordingController, log_path: Path
) -> None:
    controller.fail.add("submit")
    async with app.run_test() as pilot:
        await pilot.press(*"keep me", "enter")
        await settle(pilot)
        assert app.editor.text == "keep me"
        [notice] = app.notice_bar.shown_notices
        assert notice.level == "error"
        assert "submit failed: submit is broken" in notice.text
        assert str(log_path) in notice.text
        assert "RuntimeError: submit is broken" in log_path.read_text()


class RefusingController(RecordingController):
    """``/model`` refused as the app refuses an unknown model: words, no crash."""

    async def set_model(self, ref: str) -> None:
        raise ActionRefused(f"Unknown model {ref}: no provider 'nowhere' (known: anthropic)")


async def test_a_refused_action_is_its_message_alone_with_no_traceback_logged(
    model: StaticScreenModel, log_path: Path
) -> None:
    app = PidurableApp(model, RefusingController(model), log_path=log_path)
    async with app.run_test() as pilot:
        app.editor.text = "/model nowhere/x"
        await pilot.press("end", "escape", "enter")
        await settle(pilot)
        [notice] = app.notice_bar.shown_notices
        assert notice.level == "error"
        assert notice.text == "Unknown model nowhere/x: no provider 'nowhere' (known: anthropic)"
        assert running(app)
    assert not log_path.exists()


async def test_esc_aborts_and_puts_the_withdrawn_texts_before_the_draft_R57(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController
) -> None:
    controller.abort_texts = ["first queued", "second queued"]
    async with app.run_test() as pilot:
        model.set(busy=True, queue=[QueueItem(1, "steer", "first queued")])
        await pilot.press(*"draft")
        await pilot.press("escape")
        await settle(pilot)
        assert controller.called("abort") == [()]
        assert app.editor.text == "first queued\n\nsecond queued\ndraft"


async def test_esc_while_idle_does_not_abort_and_a_second_esc_offers_the_fork_picker(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController, clock: FakeClock
) -> None:
    controller.fork_text = "Please look at module 4 and fix the failing test."
    async with app.run_test() as pilot:
        await pilot.press("escape")
        clock.advance(0.3)
        await pilot.press("escape")
        await pilot.pause()
        assert controller.called("abort") == []
        assert screen_name(app) == "PickerScreen"
        await pilot.press("enter")  # the newest user message is highlighted
        await settle(pilot)
        assert controller.called("fork") == [(4,)]
        assert app.editor.text == controller.fork_text


async def test_two_esc_presses_more_than_a_second_apart_do_not_fork(
    app: PidurableApp, clock: FakeClock
) -> None:
    async with app.run_test() as pilot:
        await pilot.press("escape")
        clock.advance(1.5)
        await pilot.press("escape")
        await pilot.pause()
        assert screen_name(app) != "PickerScreen"


async def test_ctrl_c_clears_the_editor_then_a_second_press_within_a_second_exits(
    app: PidurableApp, controller: RecordingController, clock: FakeClock
) -> None:
    async with app.run_test() as pilot:
        await pilot.press(*"draft", "ctrl+c")
        await pilot.pause()
        assert app.editor.text == ""
        assert running(app)
        clock.advance(0.5)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not running(app)
    assert controller.called("close") == [()]


async def test_ctrl_c_presses_far_apart_only_clear(app: PidurableApp, clock: FakeClock) -> None:
    async with app.run_test() as pilot:
        await pilot.press("ctrl+c")
        clock.advance(2.0)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert running(app)


async def test_a_ctrl_c_after_another_key_is_a_first_press_again(
    app: PidurableApp, clock: FakeClock
) -> None:
    async with app.run_test() as pilot:
        await pilot.press("ctrl+c", "x", "backspace")
        clock.advance(0.5)
        await pilot.press("ctrl+c")  # within a second of the first, but not right after it
        await pilot.pause()
        assert running(app)
        assert [n.text for n in app.notice_bar.shown_notices] == ["Press Ctrl+C again to exit."]
        clock.advance(0.5)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not running(app)


async def test_ctrl_d_exits_on_an_empty_editor_and_deletes_forward_otherwise(
    app: PidurableApp, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        await pilot.press(*"ab", "home", "ctrl+d")
        await pilot.pause()
        assert app.editor.text == "b"
        assert running(app)
        await pilot.press("ctrl+d", "ctrl+d")
        await pilot.pause()
        assert not running(app)
    assert controller.called("close") == [()]


async def test_shift_tab_cycles_the_thinking_level(
    app: PidurableApp, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        await pilot.press("shift+tab")
        await settle(pilot)
        assert controller.called("cycle_thinking") == [()]
        assert app.focused is app.editor


async def test_the_app_closes_the_controller_once_when_it_crashes_and_logs_where(
    model: StaticScreenModel, controller: RecordingController, log_path: Path
) -> None:
    class Crashing(PidurableApp):
        def action_toggle_tasks(self) -> None:
            raise RuntimeError("boom in a key handler")

    async def press_the_crashing_key() -> None:
        async with Crashing(model, controller, log_path=log_path).run_test() as pilot:
            await pilot.press("ctrl+t")
            await pilot.pause()

    with pytest.raises(RuntimeError, match="boom"):
        await press_the_crashing_key()
    assert controller.called("close") == [()]
    assert "RuntimeError: boom in a key handler" in log_path.read_text()
    assert model.listeners == 0


def test_a_crash_prints_where_the_traceback_went_after_the_screen_is_gone(
    model: StaticScreenModel,
    controller: RecordingController,
    log_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    class Crashing(PidurableApp):
        def on_ready(self) -> None:
            raise RuntimeError("boom at start")

    Crashing(model, controller, log_path=log_path).run(headless=True)
    err = capsys.readouterr().err
    assert "pidurable stopped on an error: RuntimeError: boom at start" in err
    assert f"The traceback is in {log_path}" in err
    assert controller.called("close") == [()]


async def test_unknown_commands_are_reported_and_keep_the_text(
    app: PidurableApp, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        app.editor.text = "/modle"
        await pilot.press("escape")  # close the completion list, whatever it shows
        await pilot.press("enter")
        await settle(pilot)
        assert app.editor.text == "/modle"
        assert "Unknown command /modle" in app.notice_bar.shown_notices[-1].text
        assert controller.called("submit") == []


@pytest.mark.parametrize(
    ("typed", "sent"), [("//etc is odd", "/etc is odd"), ("/usr/bin is on PATH", None)]
)
async def test_slash_texts_that_are_not_commands_are_sent_as_messages(
    app: PidurableApp, controller: RecordingController, typed: str, sent: str | None
) -> None:
    async with app.run_test() as pilot:
        app.editor.text = typed
        await pilot.press("end", "enter")
        await settle(pilot)
        assert controller.called("submit") == [(sent or typed, False)]


async def test_on_a_ten_row_terminal_the_editor_keeps_a_line_to_type_in(app: PidurableApp) -> None:
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.resize_terminal(40, 10)  # 25% of 10 rows is less than its two borders
        await pilot.press(*"typed")
        await pilot.pause()
        assert app.editor.content_region.height == 1
        assert app.editor.outer_size.height == 3
