"""Every slash command dispatches to the controller (or the screen) it names."""

from __future__ import annotations

import base64

import pytest
from textual.widgets import OptionList

from pi_durable_tui.app import (
    Block,
    ConversationInfo,
    ModelChoice,
    SessionInfo,
    TaskNode,
    ToolCard,
)
from pi_durable_tui.bench.tui_model import RecordingController, StaticScreenModel
from pi_durable_tui.tui import PidurableApp
from pi_durable_tui.tui._commands import COMMANDS, CommandError, parse_command
from tests.tui.conftest import running, screen_name, settle, shown, text_of


async def run_command(app: PidurableApp, line: str, *keys: str) -> None:
    """Type a command line, send it, then press ``keys`` (in a picker, say)."""
    async with app.run_test() as pilot:
        app.editor.text = line
        await pilot.press("end")
        await pilot.press("escape")  # close the completion list
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press(*keys)
        await settle(pilot)


@pytest.mark.parametrize(
    ("line", "call"),
    [
        ("/compact", ("compact", (None,))),
        ("/compact keep the API notes", ("compact", ("keep the API notes",))),
        ("/new", ("new_session", ())),
        ("/export", ("export", ("html", None))),
        ("/export markdown notes.md", ("export", ("markdown", "notes.md"))),
        ("/export ~/notes/x.md", ("export", ("markdown", "~/notes/x.md"))),
        ("/export my notes/Log.JSONL", ("export", ("jsonl", "my notes/Log.JSONL"))),
        ("/export out.htm", ("export", ("html", "out.htm"))),
        ("/model anthropic/claude-x", ("set_model", ("anthropic/claude-x",))),
    ],
)
async def test_commands_with_arguments_call_the_controller(
    app: PidurableApp,
    controller: RecordingController,
    line: str,
    call: tuple[str, tuple[object, ...]],
) -> None:
    await run_command(app, line)
    name, args = call
    assert controller.called(name) == [args]
    assert app.editor.text == ""


async def test_export_says_where_it_wrote(app: PidurableApp) -> None:
    await run_command(app, "/export jsonl")
    assert app.notice_bar.shown_notices[-1].text == "Exported the transcript to transcript.jsonl"


async def test_export_with_an_unknown_format_says_which_exist(
    app: PidurableApp, controller: RecordingController
) -> None:
    await run_command(app, "/export pdf")
    assert controller.called("export") == []
    assert (
        "Unknown export format 'pdf'; use jsonl, markdown, html, or a path ending in "
        ".jsonl, .md or .html."
    ) in [notice.text for notice in app.notice_bar.shown_notices]


async def test_export_to_a_path_whose_ending_names_no_format_says_which_endings_do(
    app: PidurableApp, controller: RecordingController
) -> None:
    await run_command(app, "/export ~/notes.txt")
    assert controller.called("export") == []
    assert "or a path ending in .jsonl, .md or .html." in app.notice_bar.shown_notices[-1].text


async def test_model_picker_filters_and_sets_the_chosen_model(
    app: PidurableApp, controller: RecordingController
) -> None:
    controller.model_choices = [
        ModelChoice("anthropic/claude-x", "Claude X", "anthropic", 200_000, reasoning=True),
        ModelChoice("openai/gpt-y", "GPT Y", "openai", 128_000, configured=False),
        ModelChoice("local/qwen", "Qwen", "local", 32_000),
    ]
    await run_command(app, "/model", *"qwen", "enter")
    assert controller.called("set_model") == [("local/qwen",)]


async def test_model_with_nothing_to_list_says_to_wait_or_type_the_name(
    app: PidurableApp, controller: RecordingController
) -> None:
    # The session is still opening (or hosted elsewhere): no models yet.
    controller.model_choices = []
    await run_command(app, "/model")
    assert app.notice_bar.shown_notices[-1].text == (
        "No models to list yet (the session is still opening, or another process hosts it): "
        "try /model again in a moment, or type /model provider/id"
    )
    assert controller.called("set_model") == []


async def test_picking_a_model_without_its_key_says_which_variable_to_set(
    app: PidurableApp, controller: RecordingController
) -> None:
    """Issue 12: Enter on a model without a key did nothing, the picker stayed open."""
    controller.model_choices = [
        ModelChoice("openai/gpt-y", "GPT Y", "openai", configured=False, missing_key="OPENAI_KEY")
    ]
    async with app.run_test() as pilot:
        app.editor.text = "/model"
        await pilot.press("end", "escape", "enter")
        await settle(pilot)
        assert "(set OPENAI_KEY)" in text_of(app.screen.query_one(OptionList).options[0].prompt)
        await pilot.press(*"gpt", "enter")
        await settle(pilot)
        assert screen_name(app) != "PickerScreen"
        assert app.focused is app.editor
        notices = [notice.text for notice in app.notice_bar.shown_notices]
        assert any("openai/gpt-y needs OPENAI_KEY: export OPENAI_KEY=" in n for n in notices)
        assert any('"providers"' in n for n in notices)
    assert controller.called("set_model") == []


async def test_agents_picker_switches_conversation(
    app: PidurableApp, controller: RecordingController
) -> None:
    controller.conversation_list = [
        ConversationInfo(1, "main", "Fix the parser", shown=True),
        ConversationInfo(12, "subagent 12", "Research the API", busy=True),
    ]
    await run_command(app, "/agents", "down", "enter")
    assert controller.called("switch_conversation") == [(12,)]


async def test_resume_picker_opens_the_chosen_session(
    app: PidurableApp, controller: RecordingController
) -> None:
    controller.session_list = [
        SessionInfo("/s/new/session.sqlite", "Add a cache", 1_700_000_000_000, 2_048),
        SessionInfo("/s/old/session.sqlite", "Fix the parser", 1_600_000_000_000, 4_096_000),
    ]
    await run_command(app, "/resume", *"parser", "enter")
    assert controller.called("open_session") == [("/s/old/session.sqlite",)]


async def test_fork_picker_forks_at_the_chosen_message_and_fills_the_editor(
    app: PidurableApp, controller: RecordingController
) -> None:
    controller.fork_text = "Please look at module 0 and fix the failing test."
    await run_command(app, "/fork", "down", "enter")
    assert controller.called("fork") == [(0,)]
    assert app.editor.text == controller.fork_text


async def test_tasks_command_lists_ids_and_kinds_and_opens_a_subagent_while_ctrl_t_hides(
    app: PidurableApp, model: StaticScreenModel, controller: RecordingController
) -> None:
    subagent = TaskNode(
        3, "pi.subagent", "subagent: review", "running", subagent_conversation_id=12
    )
    model.tasks = [TaskNode(1, "pi.generation", "turn", "running", children=(subagent,))]
    async with app.run_test() as pilot:
        assert shown(app.task_panel)
        await pilot.press("ctrl+t")
        assert not shown(app.task_panel)
        await pilot.press("ctrl+t")
        assert shown(app.task_panel)
        app.editor.text = "/tasks"
        await pilot.press("end", "escape", "enter")
        await settle(pilot)
        assert screen_name(app) == "PickerScreen"
        rows = [text_of(o.prompt) for o in app.screen.query_one(OptionList).options]
        assert "pi.generation · task 1" in rows[0]
        assert "pi.subagent · task 3 · conversation 12" in rows[1]
        await pilot.press("down", "enter")
        await settle(pilot)
        assert controller.called("switch_conversation") == [(12,)]


async def test_theme_command_switches_theme_and_reports_unknown_names(app: PidurableApp) -> None:
    async with app.run_test() as pilot:
        for line in ("/theme light", "/theme solarized"):
            app.editor.text = line
            await pilot.press("end", "escape", "enter")
            await settle(pilot)
        assert app.theme == "light"
        assert "Theme 'solarized' is not available" in app.notice_bar.shown_notices[-1].text


async def test_theme_picker_lists_the_themes(app: PidurableApp) -> None:
    await run_command(app, "/theme", *"contrast", "enter")
    assert app.theme == "high-contrast"


async def test_help_command_and_f1_open_the_help_screen(app: PidurableApp) -> None:
    async with app.run_test() as pilot:
        app.editor.text = "/help"
        await pilot.press("end", "escape", "enter")
        await settle(pilot)
        assert screen_name(app) == "HelpScreen"
        await pilot.press("escape")
        await pilot.press("f1")
        assert screen_name(app) == "HelpScreen"


async def test_quit_command_exits_and_closes_the_controller(
    app: PidurableApp, controller: RecordingController
) -> None:
    await run_command(app, "/quit")
    assert not running(app)
    assert controller.called("close") == [()]


async def test_escape_closes_a_picker_without_a_choice(
    app: PidurableApp, controller: RecordingController
) -> None:
    controller.conversation_list = [ConversationInfo(1, "main", "x")]
    async with app.run_test() as pilot:
        app.editor.text = "/agents"
        await pilot.press("end", "escape", "enter")
        await settle(pilot)
        assert screen_name(app) == "PickerScreen"
        await pilot.press("escape")
        await settle(pilot)
        assert screen_name(app) != "PickerScreen"
        assert controller.called("switch_conversation") == []


def test_every_command_parses_and_an_unknown_one_is_an_error() -> None:
    for command in COMMANDS:
        parsed = parse_command(f"/{command.name} some words")
        assert parsed is not None
        assert parsed[0] is command
        assert parsed[1] == "some words"
    assert parse_command("hello /model") is None
    with pytest.raises(CommandError, match="Unknown command /nope"):
        parse_command("/nope")


def clipboard_writes(app: PidurableApp) -> list[str]:
    """Record what the app writes to the terminal (its driver) from now on."""
    writes: list[str] = []
    driver = app._driver
    assert driver is not None
    write = driver.write

    def record(data: str) -> None:
        writes.append(data)
        write(data)

    driver.write = record  # type: ignore[method-assign]
    return writes


async def test_copy_puts_the_last_answer_on_the_clipboard_as_one_osc_52_sequence(
    app: PidurableApp, model: StaticScreenModel
) -> None:
    answer = "Fixed: `check` was **inverted**.\n\n\x1b]0;evil\x07- done"
    model.append(
        Block("e10", "assistant", 10, text=answer),
        Block("e10/c1", "tool", 10, tool=ToolCard("c1", "bash", "done", command="true")),
        Block("e11", "user", 11, text="thanks"),
        Block("live", "assistant", text="still stream", streaming=True),
    )
    shown_answer = "Fixed: `check` was **inverted**.\n\n- done"  # the block made it safe
    async with app.run_test() as pilot:
        writes = clipboard_writes(app)
        app.editor.text = "/copy"
        await pilot.press("end", "escape", "enter")
        await settle(pilot)
        assert app.clipboard == shown_answer
        encoded = base64.b64encode(shown_answer.encode()).decode()
        assert writes == [f"\x1b]52;c;{encoded}\x07"]
        assert app.notice_bar.shown_notices[-1].text == (
            f"Copied the last answer to the clipboard ({len(shown_answer)} characters)."
        )


async def test_copy_before_any_answer_says_there_is_none() -> None:
    model = StaticScreenModel(
        [
            Block("e0", "user", 0, text="hello"),
            Block("live", "assistant", text="Hel", streaming=True),
        ]
    )
    app = PidurableApp(model, RecordingController(model))
    async with app.run_test() as pilot:
        writes = clipboard_writes(app)
        app.editor.text = "/copy"
        await pilot.press("end", "escape", "enter")
        await settle(pilot)
        assert app.notice_bar.shown_notices[-1].text == "There is no answer to copy yet."
        assert writes == []
