"""Typed text is never lost, whatever has the focus (issue 12).

Tab never leaves the editor; Alt+Down (or F2) is the documented way into the
queue and the task tree, Esc the way back; a printable key or a paste while a
panel has the focus goes to the editor; a focused panel says so in its title.
"""

from __future__ import annotations

from textual import events

from pi_durable_tui.app import QueueItem, TaskNode
from pi_durable_tui.bench.tui_model import StaticScreenModel
from pi_durable_tui.tui import PidurableApp
from tests.tui.conftest import FakeClock, settle


def focused_id(app: PidurableApp) -> str | None:
    """The id of the focused widget (a call, so checks before and after do not narrow)."""
    return app.focused.id if app.focused is not None else None


async def test_tab_while_the_agent_works_keeps_the_focus_and_the_typed_text(
    app: PidurableApp, model: StaticScreenModel
) -> None:
    async with app.run_test() as pilot:
        model.set(busy=True, queue=[QueueItem(4, "steer", "use pathlib")])
        model.set(tasks=[TaskNode(1, "pi.generation", "turn", "running")])
        await pilot.pause()
        await pilot.press("tab", "tab", *"still here")
        await pilot.pause()
        assert focused_id(app) == "editor"
        assert app.editor.text == "still here"


async def test_alt_down_walks_queue_then_tasks_then_back_and_esc_returns(
    app: PidurableApp, model: StaticScreenModel
) -> None:
    async with app.run_test() as pilot:
        model.set(queue=[QueueItem(4, "steer", "use pathlib")])
        model.set(tasks=[TaskNode(1, "pi.generation", "turn", "running")])
        await pilot.pause()
        await pilot.press("alt+down")
        await pilot.pause()
        assert focused_id(app) == "queue"
        assert "focused: esc back to the editor" in str(app.queue_panel.border_title)
        await pilot.press("f2")
        await pilot.pause()
        assert focused_id(app) == "tasks"
        assert "focused" not in str(app.queue_panel.border_title)
        assert "focused: enter opens" in str(app.task_panel.border_title)
        await pilot.press("alt+down")
        assert focused_id(app) == "editor"
        await pilot.press("alt+down", "escape")
        assert focused_id(app) == "editor"


async def test_a_printable_key_in_a_panel_goes_to_the_editor(
    app: PidurableApp, model: StaticScreenModel
) -> None:
    async with app.run_test() as pilot:
        model.set(queue=[QueueItem(4, "steer", "use pathlib")])
        await pilot.pause()
        await pilot.press(*"ab", "alt+down", *"cd")
        await pilot.pause()
        assert focused_id(app) == "editor"
        assert app.editor.text == "abcd"


async def test_a_paste_while_a_panel_has_the_focus_lands_in_the_editor(
    app: PidurableApp, model: StaticScreenModel
) -> None:
    async with app.run_test() as pilot:
        model.set(queue=[QueueItem(4, "steer", "use pathlib")])
        await pilot.pause()
        await pilot.press("alt+down")
        app.post_message(events.Paste("pasted words"))
        await pilot.pause()
        await pilot.pause()
        assert focused_id(app) == "editor"
        assert app.editor.text == "pasted words"


async def test_an_emptied_queue_gives_the_focus_back_to_the_editor(
    app: PidurableApp, model: StaticScreenModel
) -> None:
    async with app.run_test() as pilot:
        model.set(queue=[QueueItem(4, "steer", "use pathlib")])
        await pilot.pause()
        await pilot.press("alt+down")
        model.set(queue=[])
        await pilot.pause()
        assert focused_id(app) == "editor"


async def test_the_exit_hint_goes_away_once_another_key_is_pressed(
    app: PidurableApp, clock: FakeClock
) -> None:
    async with app.run_test() as pilot:
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert [n.text for n in app.notice_bar.shown_notices] == ["Press Ctrl+C again to exit."]
        clock.advance(2.0)
        await pilot.press("x")
        await settle(pilot)
        assert app.notice_bar.shown_notices == []
        assert app.is_running
