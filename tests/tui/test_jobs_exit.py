"""Quitting with background jobs running asks what becomes of them; ``/tasks stop N`` (issue 13)."""

from __future__ import annotations

import pytest
from textual.widgets import Static

from pi_durable_tui.bench.tui_model import RecordingController
from pi_durable_tui.tui import PidurableApp
from pi_durable_tui.tui._commands import TASKS_STOP_USAGE
from tests.tui.conftest import running, screen_name, settle, text_of
from tests.tui.test_commands import run_command


async def test_quit_without_jobs_exits_at_once(
    app: PidurableApp, controller: RecordingController
) -> None:
    await run_command(app, "/quit")

    assert not running(app)
    assert controller.called("leave_jobs_running") == []


@pytest.mark.parametrize(("key", "left_running"), [("y", False), ("l", True)])
async def test_quit_with_jobs_running_asks_to_end_them_or_leave_them_running(
    app: PidurableApp, controller: RecordingController, key: str, left_running: bool
) -> None:
    controller.jobs_running = 2
    async with app.run_test() as pilot:
        app.editor.text = "/quit"
        await pilot.press("end", "escape", "enter")
        await settle(pilot)
        assert screen_name(app) == "JobsExitScreen"
        question = app.screen.query_one("#jobs-exit-question", Static)
        assert text_of(question.render()).strip() == "2 background jobs are running."
        await pilot.press(key)
        await settle(pilot)

    assert not running(app)
    assert bool(controller.called("leave_jobs_running")) is left_running


async def test_escape_at_the_jobs_prompt_stays_in_the_app(
    app: PidurableApp, controller: RecordingController
) -> None:
    controller.jobs_running = 1
    async with app.run_test() as pilot:
        await pilot.press("ctrl+d")
        await settle(pilot)
        assert screen_name(app) == "JobsExitScreen"
        await pilot.press("escape")
        await settle(pilot)
        assert running(app)
        assert screen_name(app) != "JobsExitScreen"
    assert controller.called("leave_jobs_running") == []


async def test_tasks_stop_stops_the_task_by_its_number(
    app: PidurableApp, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        app.editor.text = "/tasks stop 7"
        await pilot.press("end", "escape", "enter")
        await settle(pilot)
        assert app.notice_bar.shown_notices[-1].text == "Stopping task 7."
    assert controller.called("stop_task") == [(7,)]


async def test_tasks_stop_without_a_number_says_how_to_use_it(
    app: PidurableApp, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        app.editor.text = "/tasks stop x"
        await pilot.press("end", "escape", "enter")
        await settle(pilot)
        assert TASKS_STOP_USAGE in app.notice_bar.shown_notices[-1].text
    assert controller.called("stop_task") == []
