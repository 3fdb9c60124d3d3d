"""The screen over a real session: ``PidurableApp`` on ``LiveScreenModel`` and ``AgentController``.

A real harness (faux model, real tools in a workspace, a SQLite store) runs in
the same event loop as the headless app; keys go in through Pilot and every
check reads what the screen mounted from committed state (issue 8, Evidence).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import OptionList, Static

from pi_durable_tui.ai import FauxProvider, FauxResponse, faux_model
from pi_durable_tui.harness import HarnessClosed
from pi_durable_tui.tui import PidurableApp
from pi_durable_tui.tui._help import HelpScreen
from pi_durable_tui.tui._picker import PickerScreen
from tests.app.screen_support import (
    BACKGROUND,
    FOREGROUND,
    ScreenFactory,
    ScreenRig,
    background_subagent,
    call,
    crash_mid_run,
    crash_mid_stream,
    gate_command,
    say,
    seed_history,
)
from tests.deadlines import WAIT
from tests.tui.conftest import running, screen_name, shown, text_of

SIZE = (120, 40)
BusyRun = Callable[..., AbstractAsyncContextManager[tuple[ScreenRig, PidurableApp, Pilot[None]]]]
Run = Callable[[ScreenRig], AbstractAsyncContextManager[tuple[PidurableApp, Pilot[None]]]]


@pytest.fixture
def pidurable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Run:
    """Run the app over a started screen rig, headless (colour on, no user themes).

    ``async with pidurable(rig) as (app, pilot): ...``
    """
    monkeypatch.delenv("NO_COLOR", raising=False)
    themes = tmp_path / "themes"
    themes.mkdir()

    @asynccontextmanager
    async def run(rig: ScreenRig) -> AsyncIterator[tuple[PidurableApp, Pilot[None]]]:
        log = tmp_path / "session" / "pidurable.log"
        app = PidurableApp(rig.model, rig.controller, log_path=log, themes_dir=themes)
        async with app.run_test(size=SIZE) as pilot:
            yield app, pilot

    return run


async def until(pilot: Pilot[None], predicate: Callable[[], bool], what: str) -> None:
    """Let the app and the harness run until ``predicate()`` holds (``WAIT`` at most)."""
    deadline = time.monotonic() + WAIT
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the screen never showed: {what}")
        await pilot.pause(0.01)


def _statics(widget: Widget) -> Iterator[Static]:
    if isinstance(widget, Static):
        yield widget
    for child in widget.children:
        yield from _statics(child)


def shown_text(app: PidurableApp, key: str) -> str:
    """The text a mounted block shows (a live answer: all its parts), or empty."""
    view = app.transcript.view(key)
    if view is None:
        return ""
    return "".join(text_of(static.content) for static in _statics(view) if static.display)


def transcript(app: PidurableApp) -> str:
    """The text of every mounted block, oldest first."""
    return "\n".join(shown_text(app, key) for key in app.transcript.mounted_keys)


def notices(app: PidurableApp) -> str:
    """The notices on screen, one per line."""
    return "\n".join(notice.text for notice in app.notice_bar.shown_notices)


def panel_lines(panel: Widget) -> list[str]:
    """The lines of an option list panel (task tree, queue)."""
    from textual.widgets import OptionList

    assert isinstance(panel, OptionList)
    return [text_of(panel.get_option_at_index(i).prompt).strip() for i in range(panel.option_count)]


async def type_line(pilot: Pilot[None], text: str, key: str = "enter") -> None:
    """Put a line into the editor and send it with ``key``."""
    app = pilot.app
    assert isinstance(app, PidurableApp)
    app.editor.text = text
    await pilot.press("end")
    if app.completion_menu.display:
        await pilot.press("escape")  # close the completion list first
    await pilot.press(key)


async def exchange(pilot: Pilot[None], prompt: str, answer: str) -> None:
    """Send a prompt and wait until its answer shows in the transcript."""
    app = pilot.app
    assert isinstance(app, PidurableApp)
    await type_line(pilot, prompt)
    await until(pilot, lambda: answer in transcript(app), f"the answer {answer!r}")


async def test_a_prompt_streams_its_answer_into_a_live_block_that_becomes_a_static_one(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    answer = "Here is **the answer**, " + "streamed word by word, " * 20
    # Slow enough that a loaded machine still sees the live phase (about 2 s of it).
    rig = await open_screen(faux=FauxProvider([say(answer)], tokens_per_second=60))
    async with pidurable(rig) as (app, pilot):
        await type_line(pilot, "explain")
        await until(pilot, lambda: app.transcript.view("live") is not None, "a live answer")
        assert app.editor.text == ""
        await until(pilot, lambda: "the answer" in shown_text(app, "live"), "streamed text")
        await until(pilot, lambda: "live" not in app.transcript.mounted_keys, "the final answer")
        final = rig.blocks("assistant")[-1].key
        assert app.transcript.mounted_keys[-2:] == [rig.blocks("user")[-1].key, final]
        assert "streamed word by word" in shown_text(app, final)
        assert "explain" in shown_text(app, rig.blocks("user")[-1].key)


async def test_scrolling_to_the_top_pages_older_entries_in_from_the_store(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    rig = await open_screen()
    await seed_history(rig, 200)
    await rig.model.attach(rig.app.root.id)  # remount: only the newest page is loaded
    assert rig.model.has_older
    async with pidurable(rig) as (app, pilot):

        def oldest_mounted() -> str:
            block = rig.model.block(app.transcript.mounted_keys[0])
            return block.text if block is not None else ""

        def at_the_top() -> bool:
            # Each scroll home pages older entries in; keep scrolling until the first.
            if oldest_mounted() == "message 0":
                return True
            app.transcript.scroll_home(animate=True, duration=0.02)
            return False

        await until(pilot, at_the_top, "the oldest entry after scrolling up")
        assert (rig.model.has_older, len(rig.model.blocks)) == (False, 200)


async def busy(pilot: Pilot[None], rig: ScreenRig, prompt: str = "run it") -> None:
    await type_line(pilot, prompt)
    await until(pilot, lambda: rig.model.status.startswith("Running bash"), "a running command")


@pytest.fixture
def busy_screen(open_screen: ScreenFactory, pidurable: Run) -> BusyRun:
    """The app while the first turn runs a command gated by ``go``; ``answers`` follow it.

    ``async with busy_screen(say("Done.")) as (rig, app, pilot): ...``
    """

    @asynccontextmanager
    async def run(
        *answers: FauxResponse,
    ) -> AsyncIterator[tuple[ScreenRig, PidurableApp, Pilot[None]]]:
        rig = await open_screen(call("bash", command=gate_command()), *answers)
        async with pidurable(rig) as (app, pilot):
            await busy(pilot, rig)
            yield rig, app, pilot

    return run


async def test_enter_while_the_agent_works_steers_after_the_tool_round_R61(
    busy_screen: BusyRun,
) -> None:
    async with busy_screen(say("Steered.")) as (rig, app, pilot):
        assert "steers" in str(app.editor.placeholder)
        assert shown(app.status_line)
        await type_line(pilot, "use pathlib")
        await until(pilot, lambda: panel_lines(app.queue_panel) == ["[steer] use pathlib"], "queue")
        rig.release()
        await until(pilot, lambda: not shown(app.queue_panel) and not rig.model.busy, "idle")
        await until(pilot, lambda: "Steered." in transcript(app), "the answer")
        kinds = [rig.model.block(key) for key in app.transcript.mounted_keys]
        order = [(b.kind, b.text) for b in kinds if b is not None and b.kind != "system"]
        assert [kind for kind, _ in order] == ["user", "tool", "user", "assistant"]
        assert order[2] == ("user", "use pathlib")
        assert not shown(app.status_line)


@pytest.mark.parametrize("key", ["alt+enter", "ctrl+f"])
async def test_the_follow_up_keys_queue_a_message_placed_when_the_run_answers(
    busy_screen: BusyRun, key: str
) -> None:
    async with busy_screen(say("Ran."), say("Linted.")) as (rig, app, pilot):
        await type_line(pilot, "then lint", key)
        await until(pilot, lambda: panel_lines(app.queue_panel) == ["[follow-up] then lint"], "q")
        rig.release()
        await until(pilot, lambda: "Linted." in transcript(app), "the follow-up's answer")
        text = transcript(app)
        assert text.index("Ran.") < text.index("then lint") < text.index("Linted.")


async def test_esc_aborts_restores_queued_text_and_leaves_a_background_subagent_running_R57(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    rig = await open_screen(
        *background_subagent(
            say("Reviewer started."), call("bash", command=gate_command()), say("Read the report.")
        )
    )
    async with pidurable(rig) as (app, pilot):
        await exchange(pilot, "start a reviewer", "Reviewer started.")
        await busy(pilot, rig, "now run this")
        await type_line(pilot, "steer text")
        await type_line(pilot, "follow-up text", "ctrl+f")
        await until(pilot, lambda: len(panel_lines(app.queue_panel)) == 2, "two queued")
        await pilot.press("escape")
        await until(pilot, lambda: app.editor.text == "steer text\n\nfollow-up text", "restored")
        await until(pilot, lambda: not rig.model.busy and not shown(app.queue_panel), "aborted")
        await until(pilot, lambda: "[aborted]" in shown_text(app, rig.card("bash").key), "mark")
        lines = panel_lines(app.task_panel)
        assert any("subagent: [bg] review" in line and "[background]" in line for line in lines)
        assert shown(app.task_panel)
        rig.release("bg-go")
        await until(pilot, lambda: "Read the report." in transcript(app), "the report arrives")
        assert "report] Findings: fine." in transcript(app)


async def test_delete_on_a_queued_item_withdraws_it_into_the_editor(busy_screen: BusyRun) -> None:
    async with busy_screen(say("Done.")) as (rig, app, pilot):
        await type_line(pilot, "first steer")
        await type_line(pilot, "second thought", "alt+enter")
        await until(pilot, lambda: len(panel_lines(app.queue_panel)) == 2, "two queued")
        app.queue_panel.focus()
        app.queue_panel.highlighted = 1
        await pilot.press("delete")
        await until(pilot, lambda: app.editor.text == "second thought", "withdrawn text")
        await until(pilot, lambda: panel_lines(app.queue_panel) == ["[steer] first steer"], "q")
        rig.release()
        await until(pilot, lambda: "Done." in transcript(app), "the answer")
        assert "second thought" not in transcript(app)


async def test_the_task_tree_follows_the_work_live_R126(busy_screen: BusyRun) -> None:
    async with busy_screen(say("Done.")) as (rig, app, pilot):
        await until(pilot, lambda: len(panel_lines(app.task_panel)) == 2, "turn and tool")
        turn, tool = panel_lines(app.task_panel)
        assert turn.startswith("turn  running") or turn.startswith("turn  waiting")
        assert tool.startswith("└ bash: echo started")
        assert "running execute" in tool
        assert app.task_panel.border_title == "Tasks (2 live, ctrl+t to hide)"
        rig.release()
        await until(pilot, lambda: not shown(app.task_panel), "an empty tree")


async def test_a_reopened_store_left_mid_run_shows_the_recovery_report_then_the_resumed_work(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    await crash_mid_run(open_screen)
    rig = await open_screen(
        FauxResponse(say("Tests are fine.").content, match=FOREGROUND),
        FauxResponse(say("Docs need an example.").content, match=BACKGROUND),
        say("Resumed: the command was interrupted."),
        say("Noted the review."),
        continue_session=True,
    )
    async with pidurable(rig) as (app, pilot):
        await until(pilot, lambda: "resumed/1" in app.transcript.mounted_keys, "the report")
        # The screen wraps the report's lines: compare its words, not its rows.
        report = " ".join(shown_text(app, "resumed/1").split())
        assert "The turn in the main conversation resumes" in report
        assert "not replay-safe" in report
        assert "replay-safe and runs again" in report
        assert "Background task" in report
        await until(pilot, lambda: "Noted the review." in transcript(app), "the resumed work")
        # The background review may answer before the foreground turn commits the
        # interrupted result: the two resume independently.
        await until(
            pilot,
            lambda: "[interrupted]" in shown_text(app, rig.card("bash").key),
            "the interrupted card",
        )


async def test_a_partial_a_crash_cut_reads_as_one_folded_line_above_its_answer_until_ctrl_o(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    answer = " ".join(f"w{n:03d}" for n in range(300))
    await crash_mid_stream(open_screen, answer)
    rig = await open_screen(say(answer), continue_session=True)
    async with pidurable(rig) as (app, pilot):

        def answered() -> bool:
            # The whole answer, read from its block each time: under load its first
            # commits hold less than its first word, and the live block it streams in
            # gives way to the stored one (another key) when it ends.
            blocks = rig.blocks("assistant")
            return len(blocks) == 2 and "w299" in shown_text(app, blocks[1].key)

        await until(pilot, answered, "the answer again, whole, on screen")
        partial = rig.blocks("assistant")[0]
        folded = shown_text(app, partial.key)
        assert folded.startswith("[interrupted] answer cut off when pidurable stopped")
        assert "w000" not in folded  # the words show once: in the answer below
        assert transcript(app).count("w000") == 1
        await pilot.press("ctrl+o")
        await until(pilot, lambda: "w000" in shown_text(app, partial.key), "the partial expanded")


async def run_command(pilot: Pilot[None], line: str, *keys: str) -> None:
    """Send a command line, then press ``keys`` (in a picker, say) once it is open."""
    await type_line(pilot, line)
    if keys:
        await until(pilot, lambda: isinstance(pilot.app.screen, PickerScreen), "a picker")
        await pilot.press(*keys)


def two_models() -> FauxProvider:
    return FauxProvider(
        [say("one"), say("two"), say("three")], models=[faux_model("faux-1"), faux_model("faux-2")]
    )


@pytest.mark.parametrize("keys", [(), ("f", "a", "u", "x", "-", "2", "enter")])
async def test_model_command_switches_the_shown_conversations_model(
    open_screen: ScreenFactory, pidurable: Run, keys: tuple[str, ...]
) -> None:
    rig = await open_screen(faux=two_models())
    async with pidurable(rig) as (app, pilot):
        await run_command(pilot, "/model faux/faux-2" if not keys else "/model", *keys)
        await until(pilot, lambda: rig.model.footer.model == "faux/faux-2", "the new model")
        await until(pilot, lambda: "faux/faux-2" in text_of(app.footer_bar.content), "the footer")


async def test_compact_command_summarizes_and_says_so(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    rig = await open_screen(
        say("A long answer worth a summary. " * 5),
        say("The summary."),
        settings={"compaction": {"keep_recent_tokens": 1}},
    )
    async with pidurable(rig) as (app, pilot):
        await type_line(pilot, "first")
        await until(pilot, lambda: not rig.model.busy and bool(rig.blocks("assistant")), "answer")
        await run_command(pilot, "/compact keep it short")
        await until(pilot, lambda: "Compacted." in notices(app), "notice")
        assert rig.blocks("compaction")[0].key in app.transcript.mounted_keys


async def test_agents_command_switches_to_a_subagent_conversation(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    rig = await open_screen(
        FauxResponse(say("Child answer.").content, match=FOREGROUND),
        call("subagent", task="[fg] look"),
        say("Parent answer."),
    )
    async with pidurable(rig) as (app, pilot):
        await exchange(pilot, "delegate", "Parent answer.")
        await run_command(pilot, "/agents", *"subagent", "enter")
        await until(pilot, lambda: rig.model.conversation_id != rig.app.root.id, "switched")
        await until(pilot, lambda: "Child answer." in transcript(app), "the child's transcript")
        assert "Parent answer." not in transcript(app)
        assert "subagent" in text_of(app.footer_bar.content)


async def test_tasks_command_lists_the_live_tasks_with_their_ids(busy_screen: BusyRun) -> None:
    async with busy_screen(say("Done.")) as (rig, app, pilot):
        await until(pilot, lambda: shown(app.task_panel), "the tree")
        await run_command(pilot, "/tasks")
        await until(pilot, lambda: screen_name(app) == "PickerScreen", "the task list")
        rows = [text_of(o.prompt) for o in app.screen.query_one(OptionList).options]
        assert any("pi.generation · task" in row for row in rows)
        assert any("pi.tool · task" in row for row in rows)
        await pilot.press("escape")
        rig.release()


async def test_fork_command_forks_before_a_message_and_puts_it_in_the_editor(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    rig = await open_screen(say("One."), say("Two."))
    async with pidurable(rig) as (app, pilot):
        await exchange(pilot, "first question", "One.")
        await exchange(pilot, "second question", "Two.")
        await run_command(pilot, "/fork", *"second", "enter")
        await until(pilot, lambda: app.editor.text == "second question", "the text to edit")
        assert rig.model.conversation_id != rig.app.root.id
        await until(pilot, lambda: "Two." not in transcript(app), "the history before it")
        assert "One." in transcript(app)


async def test_new_and_resume_commands_switch_sessions(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    rig = await open_screen(say("Old answer."), say("New answer."))
    async with pidurable(rig) as (app, pilot):
        await exchange(pilot, "old session question", "Old answer.")
        first = rig.app
        await run_command(pilot, "/new")
        await until(pilot, lambda: rig.app is not first and not app.transcript.mounted_keys, "new")
        await exchange(pilot, "new session question", "New answer.")
        await run_command(pilot, "/resume", *"old session", "enter")
        await until(pilot, lambda: "Old answer." in transcript(app), "the old session again")
        assert "New answer." not in transcript(app)


async def test_export_command_writes_the_transcript_and_says_where(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    rig = await open_screen(say("Exported."))
    target = rig.workdir / "notes.md"
    async with pidurable(rig) as (app, pilot):
        await exchange(pilot, "write this down", "Exported.")
        await run_command(pilot, f"/export markdown {target}")
        await until(pilot, lambda: target.exists(), "the file")
        await until(pilot, lambda: str(target) in notices(app), "the notice")
        assert "write this down" in target.read_text("utf-8")


async def test_theme_help_and_quit_commands(open_screen: ScreenFactory, pidurable: Run) -> None:
    rig = await open_screen()
    async with pidurable(rig) as (app, pilot):
        await run_command(pilot, "/theme light")
        await until(pilot, lambda: app.theme == "light", "the light theme")
        await run_command(pilot, "/help")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help screen")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HelpScreen), "back")
        await run_command(pilot, "/quit")
        await until(pilot, lambda: not running(app), "the app ends")
    with pytest.raises(HarnessClosed):
        await rig.app.harness.wait_for_idle()
    await asyncio.sleep(0)
