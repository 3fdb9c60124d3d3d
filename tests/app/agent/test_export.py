"""``pidurable export``: a scripted session as JSON lines, Markdown and HTML."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from pi_durable_tui.app import export_main, export_transcript
from pi_durable_tui.bench.hostile_escapes import CLIPBOARD, EVIL
from pi_durable_tui.storage import SqliteStorage
from tests.app.conftest import OpenApp
from tests.app.support import FAUX, raw_store, run, stored_entries, write_script

PAGE = "<script>alert('x')</script>\n```\nfenced\n```\n"


@pytest.fixture
async def session(open_app: OpenApp, project: Path) -> Path:
    """A closed session: thinking, a read tool call and its result, then an answer."""
    (project / "page.html").write_text(PAGE)
    script = write_script(
        project,
        {
            "content": [
                {"type": "thinking", "text": "Read the page first."},
                {"type": "text", "text": "Reading."},
                {"type": "tool_call", "name": "read", "arguments": {"path": "page.html"}},
            ]
        },
        {"content": [{"type": "text", "text": "It shows <b>an alert</b> & a fence."}]},
    )
    app = await open_app(model=FAUX, faux_script=str(script))
    assert (await run(app, "What does page.html do?")).status == 0
    await app.close()
    return app.store


async def export(store: Path, fmt: str) -> str:
    out = io.StringIO()
    storage = await SqliteStorage.open(store)
    try:
        await export_transcript(storage, fmt, out)  # type: ignore[arg-type]
    finally:
        await storage.close()
    return out.getvalue()


async def test_jsonl_holds_every_entry_exactly_as_committed(session: Path) -> None:
    lines = (await export(session, "jsonl")).splitlines()

    assert [json.loads(line) for line in lines] == [
        e.to_json() for e in await stored_entries(session)
    ]


async def test_markdown_shows_the_prompt_thinking_tool_calls_results_and_the_answer(
    session: Path,
) -> None:
    markdown = await export(session, "markdown")

    assert "## User\n\nWhat does page.html do?\n" in markdown
    assert "> Read the page first.\n" in markdown
    assert '**read**\n\n```json\n{\n  "path": "page.html"\n}\n```\n' in markdown
    assert "## Tool result: read\n" in markdown
    assert "\n````\n1\t<script>alert('x')</script>\n2\t```\n" in markdown  # a longer fence
    assert markdown.rstrip().endswith("It shows <b>an alert</b> & a fence.")
    assert "<role>" not in markdown  # the system prompt is not part of the transcript


async def test_html_is_one_page_with_every_text_escaped(session: Path) -> None:
    page = await export(session, "html")

    assert page.startswith("<!doctype html>")
    assert "<script>" not in page
    assert "<b>an alert" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "It shows &lt;b&gt;an alert&lt;/b&gt; &amp; a fence." in page
    assert "<h3>Tool result: read</h3>" in page


def test_export_writes_the_newest_session_of_the_cwd_to_a_file(
    session: Path, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = project / "transcript.md"

    assert export_main(["--format", "markdown", "-o", str(target)]) == 0

    assert "## User\n\nWhat does page.html do?" in target.read_text()
    assert capsys.readouterr().out == ""


def test_export_without_a_session_says_none_exists(
    home: Path, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert export_main(["--format", "jsonl"]) == 2

    assert capsys.readouterr().err == (
        f"pidurable export: No session exists for {project.resolve()}\n"
    )


HOSTILE = f"<script>alert(1)</script>{EVIL}\x9b2J"  # and an 8-bit CSI


@pytest.fixture
async def hostile_store(tmp_path: Path) -> Path:
    """Entries whose every field holds markup and escape sequences (issue 13)."""
    content = [
        {"type": "thinking", "thinking": HOSTILE},
        {"type": "text", "text": HOSTILE},
        {"type": "tool_call", "id": "c", "name": HOSTILE, "arguments": {"path": HOSTILE}},
    ]
    return await raw_store(
        tmp_path / "hostile.sqlite",
        {"role": "user", "content": HOSTILE},
        {"role": "assistant", "content": content},
        {"role": "toolResult", "tool_name": HOSTILE, "content": HOSTILE},
    )


async def test_html_escapes_markup_and_shows_escape_sequences_as_visible_text(
    hostile_store: Path,
) -> None:
    page = await export(hostile_store, "html")

    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    for control in ("\x1b", "\x07", "\x9b"):
        assert control not in page
    assert f"\\x1b]52;c;{CLIPBOARD}\\x07" in page  # shown, inert


@pytest.mark.parametrize("fmt", ["markdown", "jsonl"])
async def test_markdown_and_json_lines_write_no_control_character_to_a_terminal(
    hostile_store: Path, fmt: str
) -> None:
    exported = await export(hostile_store, fmt)

    for control in ("\x1b", "\x07", "\x9b"):
        assert control not in exported
