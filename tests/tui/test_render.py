"""Pure rendering: tool cards, block kinds, settled Markdown, the generated help."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Group
from rich.style import Style
from rich.text import Text

from pi_durable_tui.app import Block, ToolCard
from pi_durable_tui.tui import load_themes
from pi_durable_tui.tui._commands import COMMANDS
from pi_durable_tui.tui._editor import PromptEditor
from pi_durable_tui.tui._help import format_key, key_rows
from pi_durable_tui.tui._keys import KEY_BINDINGS
from pi_durable_tui.tui._markdown_blocks import finished_prefix
from pi_durable_tui.tui._queue_panel import QueuePanel
from pi_durable_tui.tui._render_blocks import render_block
from pi_durable_tui.tui._render_context import RenderContext
from pi_durable_tui.tui._render_tools import render_tool_card
from tests.tui.conftest import text_of


@pytest.fixture(scope="module")
def ctx() -> RenderContext:
    spec = load_themes(Path("/nonexistent")).themes["dark"]
    return RenderContext(spec.palette(), spec.syntax_theme)


def card_text(card: ToolCard, ctx: RenderContext, *, expanded: bool = False) -> str:
    return text_of(render_tool_card(card, RenderContext(ctx.palette, ctx.syntax_theme, expanded)))


def test_read_card_shows_path_and_range_and_the_content_only_expanded(ctx: RenderContext) -> None:
    card = ToolCard("c", "read", "done", path="src/a.py", line_range="12-80", result_text="x = 1")
    assert card_text(card, ctx).splitlines() == ["read  src/a.py:12-80  ✓"]
    assert "x = 1" in card_text(card, ctx, expanded=True)


def test_write_card_shows_size_and_a_highlighted_preview_cut_when_collapsed(
    ctx: RenderContext,
) -> None:
    preview = "\n".join(f"line_{n} = {n}" for n in range(30))
    card = ToolCard(
        "c", "write", "done", path="a.py", size_bytes=2048, preview=preview, language="python"
    )
    collapsed = card_text(card, ctx)
    assert "write  a.py  (2.0 KB)  ✓" in collapsed
    assert "line_11 = 11" in collapsed
    assert "line_12" not in collapsed
    assert "(18 more lines, ctrl+o to expand)" in collapsed
    assert "line_29 = 29" in card_text(card, ctx, expanded=True)


def test_edit_card_colours_added_and_removed_lines(ctx: RenderContext) -> None:
    card = ToolCard("c", "edit", "done", path="a.py", diff="@@ -1 +1 @@\n-old\n+new")
    card_view = render_tool_card(card, ctx)
    assert "-old" in text_of(card_view)
    assert isinstance(card_view, Group)
    body = card_view.renderables[1]
    assert isinstance(body, Text)
    colours = {span.style.color for span in body.spans if isinstance(span.style, Style)}
    assert ctx.palette.colors["diff_added"] in colours
    assert ctx.palette.colors["diff_removed"] in colours


def test_bash_card_reports_dropped_output_and_a_failing_exit_code(ctx: RenderContext) -> None:
    card = ToolCard(
        "c",
        "bash",
        "error",
        command="make",
        output="boom",
        dropped_lines=120,
        dropped_bytes=4096,
        exit_code=2,
        duration_ms=300,
    )
    text = card_text(card, ctx)
    assert "… 120 earlier lines (4.0 KB) dropped" in text
    assert "exit 2 · 0.3s" in text


def test_a_bash_card_whose_process_runs_on_as_a_job_names_the_job(ctx: RenderContext) -> None:
    card = ToolCard(
        "c",
        "bash",
        "done",
        command="npm run dev",
        output="ready",
        job_id=13,
        job_pid=4711,
        duration_ms=1100,
    )
    assert "runs on as background job 13 (pid 4711): /tasks lists it · 1.1s" in card_text(card, ctx)


@pytest.mark.parametrize(
    ("status", "shown"),
    [
        ("not_run", "Not run: the answer was interrupted."),
        ("interrupted", "process gone after restart"),
        ("aborted", "process gone after restart"),
    ],
)
def test_cut_tool_calls_say_so(ctx: RenderContext, status: str, shown: str) -> None:
    card = ToolCard("c", "bash", status, command="sleep 9", error="process gone after restart")  # type: ignore[arg-type]
    assert shown in card_text(card, ctx)


@pytest.mark.parametrize(
    ("block", "shown"),
    [
        (Block("e1", "reset", 1), "[new context]"),
        (Block("e2", "error", 2, text="Provider error", detail="Retrying in 4s"), "Retrying in 4s"),
        (Block("e3", "assistant", 3, text="**hi**", mark="aborted"), "[aborted]"),
        (Block("e4", "system", 4, detail="tools changed"), "[system] tools changed"),
    ],
)
def test_each_block_kind_renders_what_the_transcript_shows(
    ctx: RenderContext, block: Block, shown: str
) -> None:
    assert shown in text_of(render_block(block, ctx))


def test_html_in_an_answer_shows_as_the_text_the_model_wrote(ctx: RenderContext) -> None:
    text = (
        "Wrap it in <details> with a <summary>.\n\n<div>\nA paragraph that opens with a tag\n"
        "</div>\n\n| tag | use |\n|---|---|\n| <br> | a line break |"
    )
    shown = text_of(render_block(Block("e6", "assistant", 6, text=text), ctx))
    assert "Wrap it in <details> with a <summary>." in shown
    assert "<div> A paragraph that opens with a tag </div>" in " ".join(shown.split())
    assert "<br>" in shown


def test_a_partial_a_crash_cut_is_one_folded_line_until_expanded(ctx: RenderContext) -> None:
    partial = Block("e5", "assistant", 5, text="First paragraph.\n\nSecond one", mark="interrupted")
    folded = " ".join(text_of(render_block(partial, ctx)).split())
    assert folded == (
        "[interrupted] answer cut off when pidurable stopped (3 lines, ctrl+o to expand); "
        "the next attempt answers below"
    )
    expanded = text_of(render_block(partial, RenderContext(ctx.palette, ctx.syntax_theme, True)))
    assert "First paragraph." in expanded
    assert "Second one" in expanded
    assert "[interrupted]" in expanded


@pytest.mark.parametrize(
    ("source", "settled"),
    [
        ("one paragraph still growing", ""),
        ("first\n\nsecond", "first\n\n"),
        ("```py\nx = 1\n", ""),
        ("```py\nx = 1\n```\n\nafter", "```py\nx = 1\n```\n\n"),
        ("- a\n\n- b", ""),
        ("# Title\nbody", "# Title\n"),
    ],
)
def test_only_blocks_followed_by_another_block_are_settled(source: str, settled: str) -> None:
    assert source[: finished_prefix(source)] == settled


def test_help_lists_every_described_binding_and_every_command() -> None:
    rows = key_rows((KEY_BINDINGS, PromptEditor.BINDINGS, QueuePanel.BINDINGS))
    keys = [key for key, _ in rows]
    expected_keys = ("Esc", "Ctrl+C", "Ctrl+O", "Shift+Tab", "F1", "Enter", "Alt+Enter / Ctrl+F")
    for expected in (*expected_keys, "Ctrl+G"):
        assert expected in keys
    assert len(rows) == sum(
        1
        for bindings in (KEY_BINDINGS, PromptEditor.BINDINGS, QueuePanel.BINDINGS)
        for binding in bindings
        if getattr(binding, "description", "")
    )
    assert {command.name for command in COMMANDS} == {
        "model",
        "compact",
        "agents",
        "tasks",
        "fork",
        "new",
        "resume",
        "export",
        "session",
        "name",
        "copy",
        "theme",
        "skills",
        "reload",
        "mcp",
        "permissions",
        "clients",
        "help",
        "quit",
    }
    assert format_key("shift+enter") == "Shift+Enter"
