"""Custom slash commands in the screen: Tab completion, F1 help, and Enter runs them."""

from __future__ import annotations

import pytest
from textual.widgets import Static

from pi_durable_tui.app import CommandInfo
from pi_durable_tui.bench.tui_model import RecordingController
from pi_durable_tui.tui import PidurableApp
from pi_durable_tui.tui._commands import CommandError, parse_command
from tests.tui.conftest import screen_name, settle, shown, text_of
from tests.tui.test_commands import run_command

REVIEW = CommandInfo("review", "FILE", "Review a file", "project")
DEPLOY = CommandInfo("ops:deploy", "", "Deploy to staging", "user")


@pytest.fixture(autouse=True)
def custom(controller: RecordingController) -> None:
    controller.command_list = [DEPLOY, REVIEW]


async def test_tab_completes_a_custom_command_beside_the_built_in_ones(app: PidurableApp) -> None:
    async with app.run_test() as pilot:
        await pilot.press("/", "r", "e")
        await pilot.pause()
        assert shown(app.completion_menu)
        assert app.completion_menu.option_count == 3  # /resume, /reload, then /review
        await pilot.press("down", "down", "tab")
        assert app.editor.text == "/review "


async def test_a_namespaced_command_completes_too(app: PidurableApp) -> None:
    async with app.run_test() as pilot:
        await pilot.press(*"/ops:")
        await pilot.pause()
        assert app.completion_menu.option_count == 1
        await pilot.press("tab")
        assert app.editor.text == "/ops:deploy "


async def test_enter_runs_a_custom_command_with_its_arguments(
    app: PidurableApp, controller: RecordingController
) -> None:
    await run_command(app, "/review calc.py util.py")

    assert controller.called("run_custom_command") == [("review", "calc.py util.py")]
    assert controller.called("submit") == []
    assert app.editor.text == ""


async def test_f1_help_lists_the_custom_commands_with_their_descriptions(
    app: PidurableApp,
) -> None:
    async with app.run_test() as pilot:
        await pilot.press("f1")
        await settle(pilot)
        assert screen_name(app) == "HelpScreen"
        commands = text_of(app.screen.query_one("#help-commands", Static).content, 120)

    assert "/review FILE" in commands
    assert "Review a file (project)" in commands
    assert "/ops:deploy" in commands


def test_a_built_in_command_wins_a_name_clash_and_other_shapes_stay_messages() -> None:
    clash = CommandInfo("model", "", "my model command", "project")

    parsed = parse_command("/model x", [clash])

    assert parsed is not None
    assert parsed[0].summary == "Pick the model of the shown conversation"
    assert parse_command("/Users/me/notes.txt is the file", [REVIEW]) is None
    assert parse_command("/1.5x faster", [REVIEW]) is None
    with pytest.raises(CommandError):
        parse_command("/reveiw calc.py", [REVIEW])
