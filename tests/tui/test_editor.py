"""The editor: history with Up/Down, ``/`` and ``@`` completion, multi-line input."""

from __future__ import annotations

import pytest
from textual import events

from pi_durable_tui.bench.tui_model import RecordingController
from pi_durable_tui.tui import PidurableApp
from pi_durable_tui.tui._completion import completion_at
from tests.tui.conftest import running, settle, shown


async def test_up_on_the_first_line_recalls_earlier_prompts_and_down_returns_to_the_draft(
    app: PidurableApp, controller: RecordingController
) -> None:
    controller.prompts = ["first prompt", "second prompt"]
    async with app.run_test() as pilot:
        await pilot.press(*"draft", "up")
        assert app.editor.text == "second prompt"
        await pilot.press("up")
        assert app.editor.text == "first prompt"
        await pilot.press("up")
        assert app.editor.text == "first prompt"
        await pilot.press("down", "down")
        assert app.editor.text == "draft"


async def test_up_inside_a_multi_line_text_moves_the_cursor_not_the_history(
    app: PidurableApp, controller: RecordingController
) -> None:
    controller.prompts = ["old"]
    async with app.run_test() as pilot:
        await pilot.press("a", "ctrl+j", "b", "up")
        assert app.editor.text == "a\nb"
        assert app.editor.cursor_location[0] == 0
        await pilot.press("up")
        assert app.editor.text == "old"


async def test_ctrl_underscore_undoes_typing_and_ctrl_z_asks_the_app_to_suspend_instead(
    app: PidurableApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    suspended: list[bool] = []
    monkeypatch.setattr(app, "action_suspend_process", lambda: suspended.append(True))
    async with app.run_test() as pilot:
        await pilot.press(*"typed")
        await pilot.pause()
        await pilot.press("ctrl+z")
        assert suspended == [True]
        assert app.editor.text == "typed"  # Ctrl+Z no longer undoes
        await pilot.press("ctrl+underscore")
        assert app.editor.text == ""


async def test_slash_completes_command_names_from_the_command_table(app: PidurableApp) -> None:
    async with app.run_test() as pilot:
        await pilot.press("/", "c", "o", "m")
        await pilot.pause()
        assert shown(app.completion_menu)
        assert app.completion_menu.option_count == 1
        await pilot.press("tab")
        assert app.editor.text == "/compact "


async def test_enter_accepts_a_completion_that_changes_the_text_before_sending(
    app: PidurableApp, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        await pilot.press("/", "n", "enter")
        assert app.editor.text == "/new "
        await pilot.press("enter")
        await settle(pilot)
        assert controller.called("new_session") == [()]


async def test_at_completes_paths_from_the_controller(
    app: PidurableApp, controller: RecordingController
) -> None:
    controller.paths = ["src/", "src/app.py", "setup.cfg", "README.md"]
    async with app.run_test() as pilot:
        await pilot.press(*"look at @s")
        await pilot.pause()
        assert app.completion_menu.option_count == 3
        await pilot.press("down", "tab")
        assert app.editor.text == "look at @src/app.py "
        assert not shown(app.completion_menu)


async def test_escape_closes_the_completion_without_aborting(
    app: PidurableApp, controller: RecordingController
) -> None:
    controller.paths = ["src/"]
    async with app.run_test() as pilot:
        await pilot.press("@", "escape")
        await settle(pilot)
        assert not shown(app.completion_menu)
        assert app.editor.text == "@"
        assert controller.called("abort") == []


def test_completion_needs_a_token_under_the_cursor() -> None:
    paths = ["a.py"]

    def complete(prefix: str) -> list[str]:
        return [p for p in paths if p.startswith(prefix)]

    assert completion_at("mail@a", 0, 6, complete) is None  # an address, not a path
    assert completion_at("/compact now", 0, 12, complete) is None  # past the command word
    assert completion_at("x /mo", 0, 5, complete) is None  # not at the start
    found = completion_at("see @a", 0, 6, complete)
    assert found is not None
    assert found.start == 4
    assert found.candidates[0].replacement == "@a.py "


def _burst(app: PidurableApp, *keys: str) -> None:
    """Deliver keys to the app in one go, as a terminal does for a fast typist or a paste."""
    for key in keys:
        character = key if len(key) == 1 else {"enter": "\r", "ctrl+d": "\x04"}.get(key)
        app.post_message(events.Key(key, character))


async def test_enter_right_after_a_burst_of_typing_sends_every_typed_character(
    app: PidurableApp, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        _burst(app, *"fix it", "enter")
        await settle(pilot)
        assert controller.called("submit") == [("fix it", False)]
        assert app.editor.text == ""


async def test_ctrl_d_right_after_typing_keeps_the_app_and_the_text(app: PidurableApp) -> None:
    async with app.run_test() as pilot:
        _burst(app, *"ab", "ctrl+d")
        await settle(pilot)
        assert running(app)
        assert app.editor.text == "ab"


async def test_ctrl_d_right_after_enter_sends_the_text_then_exits(
    app: PidurableApp, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        # The Ctrl+D reaches the editor before the app has taken the sent text out.
        _burst(app, *"fix it", "enter", "ctrl+d")
        await settle(pilot)
        assert controller.called("submit") == [("fix it", False)]
        assert not running(app)


async def test_ctrl_d_on_a_refused_command_line_deletes_forward_instead_of_exiting(
    app: PidurableApp,
) -> None:
    async with app.run_test() as pilot:
        await pilot.press(*"/nope", "enter")  # an unknown command: the line stays
        await settle(pilot)
        await pilot.press("home", "ctrl+d")
        await settle(pilot)
        assert running(app)
        assert app.editor.text == "nope"


async def test_enter_after_a_burst_past_a_command_name_sends_the_line_not_a_stale_completion(
    app: PidurableApp, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        await pilot.press("/", "e", "x")  # the menu offers /export for "/ex"
        await pilot.pause()
        assert shown(app.completion_menu)
        # The rest arrives in one read (tmux send-keys, a fast typist): Enter is
        # handled before the menu has seen the text grow past the command word.
        _burst(app, *"port markdown out.md", "enter")
        await settle(pilot)
        assert controller.called("export") == [("markdown", "out.md")]
        assert app.editor.text == ""
