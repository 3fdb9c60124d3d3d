"""The transcript: patching by key, streaming into frozen blocks, windowing and following."""

from __future__ import annotations

import asyncio
from contextvars import Context
from dataclasses import replace
from typing import Any

import pytest

from pi_durable_tui.app import Block, ToolCard, ViewChange
from pi_durable_tui.bench.tui_model import RecordingController, StaticScreenModel, sample_blocks
from pi_durable_tui.tui import PidurableApp
from pi_durable_tui.tui._block_views import BlockView
from pi_durable_tui.tui._live_view import FrozenMarkdown, LiveAssistantView, LiveTail
from pi_durable_tui.tui._render_context import RenderContext
from pi_durable_tui.tui._transcript import INITIAL, WINDOW
from tests.tui.conftest import FakeClock, anchored, settle, text_of


async def test_a_streaming_update_re_renders_only_the_live_block(
    app: PidurableApp, model: StaticScreenModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    updates: list[str] = []
    original = BlockView.update_block

    def counting(self: BlockView, block: Block, ctx: RenderContext) -> None:
        updates.append(block.key)
        original(self, block, ctx)

    monkeypatch.setattr(BlockView, "update_block", counting)
    async with app.run_test() as pilot:
        before = {key: app.transcript.view(key) for key in app.transcript.mounted_keys}
        model.append(Block("live", "assistant", text="Hel", streaming=True))
        for text in ("Hello", "Hello wor", "Hello world"):
            model.update("live", text=text)
        await pilot.pause(0.1)
        live = app.transcript.view("live")
        assert isinstance(live, LiveAssistantView)
        assert live.query_one(LiveTail).source == "Hello world"
        assert updates == []
        assert all(app.transcript.view(key) is view for key, view in before.items())


async def test_finished_markdown_blocks_freeze_and_only_the_last_block_stays_live(
    app: PidurableApp, model: StaticScreenModel
) -> None:
    async with app.run_test() as pilot:
        model.append(Block("live", "assistant", text="", streaming=True))
        text = ""
        for part in ("First para", "graph.\n\n", "```py\nx = 1\n```\n\n", "- a\n- b"):
            text += part
            model.update("live", text=text)
            await pilot.pause(0.05)
        live = app.transcript.view("live")
        assert isinstance(live, LiveAssistantView)
        frozen = [widget.source for widget in live.query(FrozenMarkdown)]
        assert "".join(frozen) == "First paragraph.\n\n```py\nx = 1\n```\n\n"
        assert live.query_one(LiveTail).source == "- a\n- b"


async def test_a_burst_of_tokens_costs_a_few_renders_not_one_per_token(
    app: PidurableApp, model: StaticScreenModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    renders: list[int] = []
    original = LiveTail.update

    def counting(self: LiveTail, *args: Any, **kwargs: Any) -> None:
        renders.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(LiveTail, "update", counting)
    async with app.run_test() as pilot:
        model.append(Block("live", "assistant", text="", streaming=True))
        await pilot.pause()
        renders.clear()
        text = ""
        for index in range(200):
            text += f"token{index} "
            model.update("live", text=text)
        await pilot.pause(0.2)
        live = app.transcript.view("live")
        assert isinstance(live, LiveAssistantView)
        assert live.query_one(LiveTail).source == text
        assert 1 <= len(renders) <= 10


async def test_the_final_answer_replaces_the_live_block_with_a_static_one(
    app: PidurableApp, model: StaticScreenModel
) -> None:
    async with app.run_test() as pilot:
        model.append(Block("live", "assistant", text="Done.", streaming=True))
        await pilot.pause()
        model.remove("live")
        model.append(Block("e50", "assistant", 50, text="Done."))
        await pilot.pause()
        assert "live" not in app.transcript.mounted_keys
        view = app.transcript.view("e50")
        assert isinstance(view, BlockView)
        assert "Done." in text_of(view.content)


async def test_a_live_tool_card_shows_its_bounded_tail_then_its_exit_code(
    app: PidurableApp, model: StaticScreenModel
) -> None:
    output = "\n".join(f"progress {n}" for n in range(20))
    card = ToolCard("c1", "bash", "running", command="make test", output=output)
    async with app.run_test() as pilot:
        model.append(Block("live/c1", "tool", tool=card, streaming=True))
        await pilot.pause()
        view = app.transcript.view("live/c1")
        assert isinstance(view, BlockView)
        shown = text_of(view.content)
        assert "$ make test" in shown
        assert "progress 19" in shown
        assert "progress 10" not in shown
        assert "15 earlier lines (ctrl+o to expand)" in shown
        model.update("live/c1", tool=replace(card, status="done", exit_code=0, duration_ms=2500))
        await pilot.pause()
        assert "exit 0 · 2.5s" in text_of(view.content)


async def test_ctrl_o_expands_tool_output_and_compaction_summaries(
    app: PidurableApp, model: StaticScreenModel
) -> None:
    async with app.run_test() as pilot:
        model.append(
            Block("e90", "compaction", 90, text="We fixed the parser.", detail="threshold")
        )
        await pilot.pause()
        summary = app.transcript.view("e90")
        bash = app.transcript.view("e2")
        assert summary is not None
        assert bash is not None
        assert isinstance(summary, BlockView)
        assert isinstance(bash, BlockView)
        assert "Earlier context summarized (ctrl+o to expand)" in text_of(summary.content)
        assert "line 0 of output" not in text_of(bash.content)
        await pilot.press("ctrl+o")
        assert "We fixed the parser." in text_of(summary.content)
        assert "line 0 of output" in text_of(bash.content)
        await pilot.press("ctrl+o")
        assert "line 0 of output" not in text_of(bash.content)


async def test_alt_t_folds_thinking_to_one_line(app: PidurableApp) -> None:
    async with app.run_test() as pilot:
        view = app.transcript.view("e1")
        assert isinstance(view, BlockView)
        assert "The failure is probably the comparison." in text_of(view.content)
        await pilot.press("alt+t")
        assert "thinking (1 line, alt+t to show)" in text_of(view.content)


async def test_a_10000_block_model_mounts_only_the_newest_window(
    controller: RecordingController, clock: FakeClock
) -> None:
    model = StaticScreenModel(sample_blocks(10_000))
    app = PidurableApp(model, RecordingController(model), clock=clock)
    async with app.run_test() as pilot:
        await pilot.pause()
        assert len(app.transcript.mounted_keys) == INITIAL
        assert app.transcript.mounted_keys[-1] == "e9999"
        assert len(app.transcript.query(BlockView)) == INITIAL


async def test_scrolling_up_pages_in_loaded_blocks_then_older_ones_and_down_again_to_follow(
    clock: FakeClock,
) -> None:
    model = StaticScreenModel(sample_blocks(60, start=100), older=sample_blocks(40))
    controller = RecordingController(model)
    app = PidurableApp(model, controller, clock=clock)
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = app.transcript
        assert transcript.mounted_keys[0] == "e130"
        for _ in range(8):
            # Animated, as a user's scrolls are: they creep up to the edge in fractions.
            transcript.scroll_home(animate=True, duration=0.05)
            await pilot.pause(0.15)
            await settle(pilot)
        assert controller.called("load_older")
        assert transcript.mounted_keys[0] == "e0"  # older blocks loaded through the controller
        assert len(transcript.mounted_keys) <= WINDOW
        assert not anchored(transcript)
        for _ in range(8):
            transcript.scroll_end(animate=True, duration=0.05)
            await pilot.pause(0.15)
            await settle(pilot)
        assert transcript.mounted_keys[-1] == "e159"
        assert anchored(transcript)
        model.append(*sample_blocks(2, start=500))
        await pilot.pause(0.1)
        assert transcript.mounted_keys[-1] == "e501"
        assert transcript.scroll_y == transcript.max_scroll_y


async def test_new_blocks_follow_the_end_until_the_user_scrolls_up(
    app: PidurableApp, model: StaticScreenModel
) -> None:
    async with app.run_test(size=(100, 20)) as pilot:
        transcript = app.transcript
        await pilot.pause()
        model.append(*sample_blocks(4, start=20))
        await pilot.pause(0.1)
        assert transcript.scroll_y == transcript.max_scroll_y > 0
        await pilot.press("pageup")
        await pilot.pause(0.1)
        held = transcript.scroll_y
        assert held < transcript.max_scroll_y
        model.append(*sample_blocks(4, start=30))
        await pilot.pause(0.1)
        assert transcript.scroll_y == held
        await pilot.press(*"new prompt", "enter")
        await settle(pilot)
        assert transcript.scroll_y == transcript.max_scroll_y


async def test_a_transcript_reset_rebuilds_from_the_model(
    app: PidurableApp, model: StaticScreenModel
) -> None:
    async with app.run_test() as pilot:
        model._blocks[:] = sample_blocks(3, start=70)
        model.push(ViewChange(transcript_reset=True))
        await pilot.pause()
        assert app.transcript.mounted_keys == ["e70", "e71", "e72"]


async def test_marks_and_recovery_report_are_shown(
    app: PidurableApp, model: StaticScreenModel
) -> None:
    async with app.run_test() as pilot:
        model.append(
            Block("e80", "assistant", 80, text="Partial answer", mark="interrupted"),
            Block("resumed/1", "resumed", text="Resumed run 3: bash `make` was interrupted."),
        )
        await pilot.pause()
        marked = app.transcript.view("e80")
        resumed = app.transcript.view("resumed/1")
        assert isinstance(marked, BlockView)
        assert isinstance(resumed, BlockView)
        assert "[interrupted]" in text_of(marked.content)
        shown = text_of(resumed.content)
        assert "resumed" in shown
        assert "bash `make` was interrupted" in shown


async def test_clicking_a_subagent_card_opens_its_conversation(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController
) -> None:
    card = ToolCard("c9", "subagent", "running", arguments={"task": "research"}, conversation_id=12)
    async with app.run_test() as pilot:
        model.append(Block("e95/c9", "tool", 95, tool=card))
        await pilot.pause(0.1)
        view = app.transcript.view("e95/c9")
        assert isinstance(view, BlockView)
        assert "The subagent is working. /agents switches to it." in text_of(view.content)
        await pilot.click(view)
        await settle(pilot)
        assert controller.called("switch_conversation") == [(12,)]


async def test_changes_announced_from_the_harness_tasks_outside_textual_are_applied_safely(
    app: PidurableApp, model: StaticScreenModel
) -> None:
    async def harness_side() -> None:
        model.append(Block("live", "assistant", text="", streaming=True))
        for text in ("Stream", "Streaming text", "Streaming text\n\nmore"):
            model.update("live", text=text)
            await asyncio.sleep(0.06)  # long enough for the render timer to fire
        model.remove("live")
        model.append(Block("e60", "assistant", 60, text="Streaming text\n\nmore"))

    async with app.run_test() as pilot:
        # A commit publication runs in the harness's task, without Textual's context
        # variables: timers or mounts made there would fail when the app stops them.
        task = asyncio.get_running_loop().create_task(harness_side(), context=Context())
        await task
        await pilot.pause(0.1)
        assert app.transcript.mounted_keys[-1] == "e60"
