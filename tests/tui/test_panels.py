"""Task tree, queue, notices and footer follow the model (durable-behavior.md 5.3)."""

from __future__ import annotations

import pytest

from pi_durable_tui.app import Footer, Notice, QueueItem, TaskNode
from pi_durable_tui.bench.tui_model import RecordingController, StaticScreenModel
from pi_durable_tui.tui import PidurableApp
from pi_durable_tui.tui._footer import footer_lines, format_count
from pi_durable_tui.tui._task_panel import format_elapsed
from tests.tui.conftest import FakeClock, settle, shown, text_of

TREE = [
    TaskNode(
        1,
        "pi.generation",
        "turn",
        "waiting",
        elapsed_s=10.0,
        children=(
            TaskNode(2, "pi.tool", "bash: npm test", "running", phase="exec", elapsed_s=4.0),
            TaskNode(3, "pi.tool", "subagent: review", "running", subagent_conversation_id=12),
        ),
    ),
    TaskNode(7, "vacation.research", "research", "running", background=True, aborting=True),
]


def panel_lines(app: PidurableApp) -> list[str]:
    panel = app.task_panel
    return [text_of(panel.get_option_at_index(i).prompt).strip() for i in range(panel.option_count)]


async def test_the_task_tree_shows_nested_tasks_with_status_phase_and_flags_R126(
    app: PidurableApp, model: StaticScreenModel
) -> None:
    async with app.run_test() as pilot:
        assert not shown(app.task_panel)
        model.set(tasks=TREE)
        await pilot.pause()
        assert shown(app.task_panel)
        assert app.task_panel.border_title == "Tasks (4 live, ctrl+t to hide)"
        lines = panel_lines(app)
        assert lines[0].startswith("turn  waiting  10s")
        assert lines[1] == "└ bash: npm test  running exec  4s"
        assert lines[2].endswith("[enter opens]")
        assert not any("pi." in line or "12" in line for line in lines)  # no kinds, no ids
        assert lines[3].endswith("[background]  [aborting]")
        model.set(tasks=[])
        await pilot.pause()
        assert not shown(app.task_panel)


async def test_elapsed_times_tick_without_a_model_update(
    app: PidurableApp, model: StaticScreenModel, clock: FakeClock
) -> None:
    async with app.run_test() as pilot:
        model.set(tasks=TREE)
        await pilot.pause()
        clock.advance(65)
        app.task_panel.tick()
        assert panel_lines(app)[1].endswith("running exec  1m09s")


async def test_selecting_a_subagent_task_opens_its_conversation(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        model.set(tasks=TREE)
        await pilot.pause()
        app.task_panel.focus()
        app.task_panel.highlighted = 2
        await pilot.press("enter")
        await settle(pilot)
        assert controller.called("switch_conversation") == [(12,)]


async def test_a_queued_item_withdrawn_with_delete_returns_to_the_editor(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController
) -> None:
    controller.withdraw_texts = {5: "also update the docs"}
    async with app.run_test() as pilot:
        model.set(queue=[QueueItem(4, "steer", "use pathlib"), QueueItem(5, "follow_up", "x")])
        await pilot.pause()
        assert shown(app.queue_panel)
        first = text_of(app.queue_panel.get_option_at_index(0).prompt).strip()
        assert first == "[steer] use pathlib"
        app.queue_panel.focus()
        app.queue_panel.highlighted = 1
        await pilot.press("delete")
        await settle(pilot)
        assert controller.called("withdraw") == [(5,)]
        assert app.editor.text == "also update the docs"
        assert app.focused is app.editor


async def test_delete_right_after_alt_down_withdraws_the_first_queued_item(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController
) -> None:
    controller.withdraw_texts = {4: "use pathlib"}
    async with app.run_test() as pilot:
        model.set(queue=[QueueItem(4, "steer", "use pathlib"), QueueItem(5, "follow_up", "x")])
        await pilot.pause()
        await pilot.press("alt+down", "delete")
        await settle(pilot)
        assert controller.called("withdraw") == [(4,)]
        assert app.editor.text == "use pathlib"


async def test_enter_right_after_entering_the_task_tree_opens_the_first_subagent(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController
) -> None:
    async with app.run_test() as pilot:
        model.set(
            tasks=[
                TaskNode(3, "pi.tool", "subagent: review", "running", subagent_conversation_id=12)
            ]
        )
        await pilot.pause()
        await pilot.press("alt+down", "enter")
        await settle(pilot)
        assert controller.called("switch_conversation") == [(12,)]


async def test_the_queue_cursor_stays_on_its_item_when_the_queue_changes(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController
) -> None:
    controller.withdraw_texts = {4: "first"}
    queue = [QueueItem(4, "steer", "first"), QueueItem(5, "follow_up", "second")]
    async with app.run_test() as pilot:
        model.set(queue=queue)
        await pilot.pause()
        await pilot.press("alt+down")  # the cursor on "first"
        model.set(queue=[QueueItem(3, "steer", "typed in another terminal"), *queue])
        await pilot.pause()
        await pilot.press("delete")
        await settle(pilot)
        assert controller.called("withdraw") == [(4,)]


async def test_alt_up_takes_the_newest_queued_item_back(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController
) -> None:
    controller.withdraw_texts = {9: "newest"}
    async with app.run_test() as pilot:
        model.set(queue=[QueueItem(8, "steer", "older"), QueueItem(9, "steer", "newest")])
        await pilot.press("alt+up")
        await settle(pilot)
        assert controller.called("withdraw") == [(9,)]
        assert app.editor.text == "newest"


async def test_notices_show_the_newest_four_and_expire(
    app: PidurableApp, model: StaticScreenModel, clock: FakeClock
) -> None:
    async with app.run_test() as pilot:
        model.set(notices=[Notice("info", f"notice {n}", id=n) for n in range(6)])
        await pilot.pause()
        assert [n.text for n in app.notice_bar.shown_notices] == [
            f"notice {n}" for n in range(2, 6)
        ]
        clock.advance(13)
        app.notice("error", "a screen notice")
        assert [n.text for n in app.notice_bar.shown_notices] == ["a screen notice"]


async def test_a_new_notice_shows_at_once_under_an_older_one_that_wraps(
    app: PidurableApp, model: StaticScreenModel
) -> None:
    # Issue 12: the store failure's line (its path wraps it over four rows) filled the
    # bar, whose height cut the newer notice below it until the long one expired.
    long = "the disk holding the session store " + "/very/long/path" * 20 + " is full; quit"
    async with app.run_test(size=(100, 30)) as pilot:
        model.set(notices=[Notice("error", long, id=1)])
        await pilot.pause()
        app.notice("error", "submit failed: the session store cannot be written")
        await pilot.pause()
        painted = text_of(app.notice_bar.render(), width=98).splitlines()
        assert len(painted) == app.notice_bar.size.height == 4  # nothing cut off below
        assert painted[-1].strip() == "submit failed: the session store cannot be written"
        assert painted[-2].strip().endswith("is full; quit")  # the older one's last rows
        assert [n.id for n in app.notice_bar.shown_notices] == [1, -1]


async def test_a_lasting_notice_gives_way_to_newer_ones_and_never_expires(
    app: PidurableApp, model: StaticScreenModel, clock: FakeClock
) -> None:
    # The store failure's notice: the status line says "see the notice" for as long as
    # the session lives, so the notice must still be there after the newer ones expire.
    long = "the disk holding the session store " + "/very/long/path" * 12 + " is full; quit"
    async with app.run_test(size=(100, 30)) as pilot:
        model.set(notices=[Notice("error", long, id=1, lasting=True)])
        await pilot.pause()
        app.notice("error", "submit failed: the session store cannot be written")
        await pilot.pause()
        assert [n.id for n in app.notice_bar.shown_notices] == [1, -1]
        clock.advance(60)
        app.notice_bar.show(app.model.notices)
        await pilot.pause()
        assert [n.id for n in app.notice_bar.shown_notices] == [1]
        painted = " ".join(text_of(app.notice_bar.render(), width=98).split())
        assert painted.startswith("the disk holding")  # whole again: three rows of four
        assert painted.endswith("is full; quit")


def test_footer_shows_spend_context_cwd_model_and_thinking() -> None:
    footer = Footer(
        tokens_in=12_345,
        tokens_out=987,
        cache_read=40_000,
        cost=0.1234,
        context_tokens=185_000,
        context_window=200_000,
        cwd="~/work/app",
        model="anthropic/claude-x",
        thinking_level="high",
        conversation_label="subagent 12",
        permission_mode="auto-edit",
    )
    first, second = text_of(footer_lines(footer, "F1 help")).splitlines()
    assert first == "↑12k ↓987 R40k $0.123  92.5%/200k  ~/work/app"
    assert second == "subagent 12  anthropic/claude-x  thinking:high  mode:auto-edit  F1 help"
    assert text_of(footer_lines(Footer(), "")).startswith("↑0 ↓0 $0.000  ?/?")


@pytest.mark.parametrize(
    ("mode", "stands_out"), [("plan", True), ("auto", True), ("ask", False), ("auto-edit", False)]
)
def test_plan_and_auto_stand_out_in_the_footer_and_the_asking_modes_do_not(
    mode: str, stands_out: bool
) -> None:
    line = footer_lines(Footer(permission_mode=mode), "")
    assert f"mode:{mode}" in text_of(line)
    styles = [
        str(span.style) for span in line.spans if f"mode:{mode}" in str(line)[span.start : span.end]
    ]
    assert len(styles) == 1
    assert (" on " in styles[0]) is stands_out


def test_a_footer_before_the_session_is_open_names_no_mode() -> None:
    assert "mode:" not in text_of(footer_lines(Footer(), "F1 help"))


def test_context_above_90_percent_is_red_and_below_is_not() -> None:
    high = footer_lines(Footer(context_tokens=181, context_window=200), "")
    low = footer_lines(Footer(context_tokens=100, context_window=200), "")
    assert any("$error" in str(span.style) for span in high.spans)
    assert not any("$error" in str(span.style) for span in low.spans)


def test_counts_and_durations_are_compact() -> None:
    assert [format_count(n) for n in (950, 1234, 12_345, 2_500_000)] == [
        "950",
        "1.2k",
        "12k",
        "2.5M",
    ]
    assert [format_elapsed(s) for s in (5, 65, 3_725)] == ["5s", "1m05s", "1h02m"]
