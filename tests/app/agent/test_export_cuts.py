"""Exports mark an answer that was cut, so a reader does not take a partial one for whole.

Each cut is made for real on a session: Esc in the middle of an answer, a store
left while an answer streams or while a command runs (as ``kill -9`` leaves it,
R27), then ``--continue``. The Markdown and the HTML of ``/export`` (the same
writer as ``pidurable export``) carry a note under the cut entry, from what the
entry records (its ``stop_reason``, its error diagnostic's code), and only there.
"""

from __future__ import annotations

from pathlib import Path

from pi_durable_tui.ai import FauxProvider, faux_error
from pi_durable_tui.app.agent._export import entries_of
from tests.app.screen_support import (
    FAST,
    ScreenFactory,
    ScreenRig,
    call,
    crash_mid_stream,
    gate_command,
    running_commands,
    say,
)
from tests.harness.run_support import within

LONG = " ".join(f"word{n}" for n in range(600))


async def exported(rig: ScreenRig, tmp_path: Path) -> tuple[str, str]:
    """The shown conversation as ``/export markdown`` and ``/export html`` write it."""
    markdown = await within(rig.controller.export("markdown", str(tmp_path / "t.md")))
    page = await within(rig.controller.export("html", str(tmp_path / "t.html")))
    return Path(markdown).read_text(), Path(page).read_text()


async def test_an_answer_aborted_with_esc_is_marked_cut_in_markdown_and_html(
    open_screen: ScreenFactory, tmp_path: Path
) -> None:
    rig = await open_screen(
        faux=FauxProvider([say(LONG), say("A whole answer.")], tokens_per_second=200),
        settings=FAST,
    )
    await within(rig.controller.submit("talk"))
    await rig.until(lambda: len(getattr(rig.model.block("live"), "text", "")) > 20, "a partial")
    await within(rig.controller.abort())
    await rig.until(lambda: not rig.model.busy, "aborted")
    await rig.ask("again")

    markdown, page = await exported(rig, tmp_path)

    assert markdown.count("_(answer cut: aborted)_") == 1
    cut, whole = markdown.split("_(answer cut: aborted)_")
    assert "word1 " in cut
    assert "A whole answer." in whole
    assert "cut:" not in whole
    assert page.count("<p class='cut'>(answer cut: aborted)</p>") == 1
    assert page.index("word1 ") < page.index("class='cut'") < page.index("A whole answer.")


async def test_the_partial_a_crash_left_is_marked_interrupted_and_the_answer_after_it_is_not(
    open_screen: ScreenFactory, tmp_path: Path
) -> None:
    await crash_mid_stream(open_screen, LONG)
    rig = await open_screen(say("The answer again, whole."), continue_session=True)
    await rig.idle()

    markdown, page = await exported(rig, tmp_path)

    note = "answer cut: interrupted, pidurable stopped while it streamed"
    assert markdown.count(f"_({note})_") == 1
    assert markdown.rstrip().endswith("The answer again, whole.")
    assert page.count(f"<p class='cut'>({note})</p>") == 1
    assert "[aborted]" not in markdown  # one mark, in words


async def test_a_command_cut_by_a_crash_is_marked_as_a_tool_call_cut_R95(
    open_screen: ScreenFactory, tmp_path: Path
) -> None:
    rig = await open_screen(
        call("bash", command=gate_command()), settings={"progress": {"output_interval_ms": 10}}
    )
    await within(rig.controller.submit("run it"))
    await rig.until(lambda: len(running_commands(rig)) == 1, "the command runs")
    await rig.until(lambda: "started" in rig.card_output("bash"), "committed output")
    await within(rig.controller.close())
    again = await open_screen(say("It was cut."), continue_session=True)
    await again.idle()

    markdown, page = await exported(again, tmp_path)

    note = "tool call cut: interrupted, it may have partly run"
    assert markdown.count(f"_({note})_") == 1
    assert markdown.index("started") < markdown.index(note) < markdown.index("It was cut.")
    assert page.count(f"<p class='cut'>({note})</p>") == 1


async def test_an_error_answer_shows_its_escaped_message_in_html_and_whole_answers_no_note(
    open_screen: ScreenFactory, tmp_path: Path
) -> None:
    rig = await open_screen(
        say("Fine <b>answer</b>."),
        faux_error("<script>alert(1)</script>", status=400, retryable=False),
    )
    await rig.ask("one")
    await rig.ask("two")

    markdown, page = await exported(rig, tmp_path)

    assert "cut:" not in markdown
    assert "class='cut'" not in page
    assert "<script>" not in page
    assert "<b>" not in page
    assert "<p class='error'>[error] &lt;script&gt;alert(1)&lt;/script&gt;</p>" in page
    from pi_durable_tui.app.agent._export import cut_of

    entries = [e async for e in entries_of(rig.app.harness.session.storage, rig.app.root.id)]
    assert [cut_of(e) for e in entries if e.kind == "pi.assistant"] == [None, None]
