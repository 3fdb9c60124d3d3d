"""Transcript blocks from committed entries and ``pi.live`` (reference 5.3; issue 8).

Each test runs real turns (faux model, real tools in a workspace, a SQLite store)
and reads the blocks the view model derived; the status line is also checked as a
pure function of ``pi.live``.
"""

from __future__ import annotations

import pytest

from pi_durable_tui.ai import (
    FauxMatch,
    FauxProvider,
    faux_error,
    faux_response,
    faux_text,
    faux_thinking,
    faux_tool_call,
)
from pi_durable_tui.app import ToolCard
from pi_durable_tui.app.screen._blocks import apply_result, status_line
from pi_durable_tui.storage import EntryRecord
from tests.app.screen_support import (
    FAST,
    ScreenFactory,
    call,
    crash_mid_stream,
    gate_command,
    say,
)
from tests.harness.run_support import within


async def test_a_turn_shows_the_user_message_the_answer_with_its_thinking_and_a_card_per_call(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(
        faux_response(
            faux_thinking("Look first."),
            faux_text("Checking."),
            faux_tool_call("bash", {"command": "echo hi"}),
        ),
        say("All good."),
    )
    await rig.ask("check it")
    kinds = [(b.kind, b.text) for b in rig.model.blocks if b.kind != "tool"]
    assert kinds == [("user", "check it"), ("assistant", "Checking."), ("assistant", "All good.")]
    answer = rig.blocks("assistant")[0]
    assert [part.text for part in answer.thinking] == ["Look first."]
    card = rig.card("bash")
    assert card.key.startswith(f"e{answer.entry_id}/")
    assert card.entry_id == answer.entry_id


async def test_read_card_shows_the_path_and_the_line_range_that_was_read(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(
        call("read", path="notes.txt", offset=10, limit=5),
        call("read", path="notes.txt"),
        say("ok"),
    )
    (rig.workdir / "notes.txt").write_text("\n".join(f"line {n}" for n in range(1, 101)))
    await rig.ask("read it")
    ranged, whole = (rig.card("read", i).tool for i in (0, 1))
    assert ranged is not None
    assert whole is not None
    assert (ranged.path, ranged.line_range, ranged.status) == ("notes.txt", "10-14", "done")
    assert whole.line_range == "1-100"


async def test_write_card_previews_the_content_with_its_language_and_size(
    open_screen: ScreenFactory,
) -> None:
    content = "def main():\n    return 1\n"
    rig = await open_screen(call("write", path="app.py", content=content), say("written"))
    await rig.ask("write it")
    card = rig.card("write").tool
    assert card is not None
    assert (card.path, card.preview, card.language) == ("app.py", content, "python")
    assert card.size_bytes == len(content)
    assert (rig.workdir / "app.py").read_text() == content


async def test_edit_card_carries_the_unified_diff_of_the_change(open_screen: ScreenFactory) -> None:
    rig = await open_screen(
        call("edit", path="calc.py", edits=[{"oldText": "a - b", "newText": "a + b"}]),
        say("fixed"),
    )
    (rig.workdir / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    await rig.ask("fix it")
    card = rig.card("edit").tool
    assert card is not None
    assert card.status == "done"
    assert "-    return a - b" in card.diff
    assert "+    return a + b" in card.diff
    assert card.diff.lstrip().startswith("---") or "@@" in card.diff


@pytest.mark.parametrize(
    ("command", "status", "exit_code", "error"),
    [
        ("echo out", "done", 0, ""),
        ("echo out; exit 3", "error", 3, "Command exited with code 3"),
    ],
)
async def test_bash_card_shows_the_command_its_output_exit_code_and_duration(
    open_screen: ScreenFactory, command: str, status: str, exit_code: int, error: str
) -> None:
    rig = await open_screen(call("bash", command=command), say("ran"))
    await rig.ask("run it")
    card = rig.card("bash").tool
    assert card is not None
    assert (card.command, card.status, card.exit_code, card.error) == (
        command,
        status,
        exit_code,
        error,
    )
    assert card.output.strip() == "out"
    assert card.duration_ms is not None
    assert card.duration_ms >= 0


async def test_a_running_bash_card_shows_its_committed_output_before_the_result_R102(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(call("bash", command=gate_command()), say("ran"), settings=FAST)
    await within(rig.controller.submit("run"))
    await rig.until(lambda: "started" in rig.card_output("bash"), "committed output")
    running = rig.card("bash")
    assert running.streaming
    assert running.tool is not None
    assert running.tool.status == "running"
    assert rig.model.status == "Running bash... (esc to abort)"
    rig.release()
    await rig.idle()
    done = rig.card("bash").tool
    assert done is not None
    assert done.status == "done"
    assert "released" in done.output


async def test_a_bash_card_moved_to_the_background_names_its_job_and_pid(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(call("bash", command=gate_command()), say("moved"), settings=FAST)
    await within(rig.controller.submit("run"))
    await rig.until(lambda: "started" in rig.card_output("bash"), "committed output")
    await within(rig.controller.background_command())  # Ctrl+B
    await rig.idle()
    card = rig.card("bash").tool
    assert card is not None
    assert card.status == "done"
    await rig.until(lambda: any(n.label.startswith("job:") for n in rig.model.tasks), "the job")
    [job] = [n.task_id for n in rig.model.tasks if n.label.startswith("job:")]
    assert (card.job_id, card.job_pid is not None) == (job, True)
    rig.release()


async def test_a_foreground_subagent_card_names_the_child_conversation_and_shows_its_answer(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(
        faux_response(faux_text("Child here."), match=FauxMatch(user="[child]")),
        call("subagent", task="[child] summarize"),
        say("The child answered."),
    )
    await rig.ask("delegate")
    card = rig.card("subagent").tool
    assert card is not None
    assert card.status == "done"
    assert card.conversation_id is not None
    assert card.conversation_id != rig.app.root.id
    assert card.output == "Child here."


async def test_calls_of_an_answer_that_did_not_end_in_tool_use_are_marked_not_run(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(
        faux_response(
            faux_text("Reading"), faux_tool_call("read", {"path": "x"}), stop_reason="length"
        )
    )
    await rig.ask("go")
    card = rig.card("read").tool
    assert card is not None
    assert (card.status, card.error) == ("not_run", "Not run: the answer was interrupted.")


async def test_aborting_a_running_command_marks_its_card_aborted(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(call("bash", command=gate_command()))
    await within(rig.controller.submit("run"))
    await rig.until(lambda: rig.model.status.startswith("Running bash"), "running")
    await within(rig.controller.abort())
    await rig.idle()
    card = rig.card("bash").tool
    assert card is not None
    assert card.status == "aborted"
    assert not rig.model.busy
    assert rig.model.status == ""


async def test_an_answer_cut_by_abort_keeps_its_streamed_text_with_the_aborted_mark_R91(
    open_screen: ScreenFactory,
) -> None:
    faux = FauxProvider([say("word " * 400)], tokens_per_second=200)
    rig = await open_screen(faux=faux, settings=FAST)
    await within(rig.controller.submit("talk"))
    await rig.until(lambda: len(getattr(rig.model.block("live"), "text", "")) > 20, "streaming")
    await within(rig.controller.abort())
    await rig.idle()
    answer = rig.blocks("assistant")[-1]
    assert answer.mark == "aborted"
    assert answer.text.startswith("word word")
    assert rig.model.block("live") is None


async def test_a_partial_a_crash_cut_is_marked_interrupted_and_its_answer_follows_once_R84(
    open_screen: ScreenFactory,
) -> None:
    answer = "word " * 400
    await crash_mid_stream(open_screen, answer)
    rig = await open_screen(say(answer), continue_session=True)
    await rig.until(lambda: not rig.model.busy and len(rig.blocks("assistant")) == 2, "the answer")
    partial, again = rig.blocks("assistant")
    assert partial.mark == "interrupted"  # a crash cut it: not "aborted" by the user
    assert answer.startswith(partial.text)
    assert partial.text != answer
    assert (again.mark, again.text) == ("", answer)


async def test_a_failed_model_attempt_is_an_error_block_with_the_provider_message(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(faux_error("bad request: prompt too odd", status=400))
    await rig.ask("go")
    assert rig.texts("error") == ["bad request: prompt too odd"]


async def test_a_compaction_is_a_summary_block_and_a_reset_a_new_context_block(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(
        say("First answer, long enough to be summarized. " * 5),
        say("The user asked for a first answer."),
        settings={"compaction": {"keep_recent_tokens": 1}},
    )
    await rig.ask("first")
    await within(rig.controller.compact())
    await rig.idle()
    await rig.until(lambda: bool(rig.blocks("compaction")), "compaction block")
    summary = rig.blocks("compaction")[0]
    assert summary.text == "The user asked for a first answer."
    assert summary.detail == "manual"
    await within(rig.app.root.reset("Start over from the plan."))
    await rig.until(lambda: bool(rig.blocks("reset")), "reset block")
    assert rig.texts("reset") == ["Start over from the plan."]


@pytest.mark.parametrize("verbose", [False, True])
async def test_system_prompt_changes_show_only_in_verbose_mode(
    open_screen: ScreenFactory, verbose: bool
) -> None:
    rig = await open_screen(say("hi"), verbose=verbose)
    await rig.ask("hello")
    shown = rig.texts("system")
    assert (
        (len(shown) == 1 and shown[0].startswith("System prompt changed")) if verbose else not shown
    )


@pytest.mark.parametrize(
    ("live", "status"),
    [
        ({}, ""),
        ({"run": {"task_id": 3, "inputs": [2]}}, "Working... (esc to abort)"),
        (
            {"run": {}, "tools": [{"call_id": "c", "name": "bash", "status": "running"}]},
            "Running bash... (esc to abort)",
        ),
        ({"compactions": [{"reason": "threshold", "attempt": 1}]}, "Compacting (threshold)..."),
        (
            {"compactions": [{"reason": "overflow", "attempt": 2, "retry": {"at": 0}}]},
            "Retrying overflow compaction (attempt 3)...",
        ),
        (
            {"run": {}, "generation": {"attempt": 1, "retry": {"at": 4_400, "error": "429"}}},
            "Retrying in 4s (attempt 2): 429",
        ),
    ],
)
def test_the_status_line_takes_the_first_match_of_retry_compaction_tool_and_run(
    live: dict[str, object], status: str
) -> None:
    assert status_line(live, now_ms=0) == status


def test_a_finished_card_shows_the_output_the_model_received_not_the_last_live_tail() -> None:
    """Issue 12: a ``search`` card of the planner demo stopped before its final lines.

    The live output was committed up to 100 ms before the call returned, so it
    misses what the call printed last; the result entry holds all of it.
    """
    live = ToolCard("c1", "search", "running", {"topic": "trains"}, output="source 1/2\n")
    result = EntryRecord(
        7,
        1,
        "pi.tool-result",
        model=[{"role": "tool", "content": "source 1/2\nsource 2/2\n- Railjet 07:25\n"}],
    )
    done = apply_result(live, result)
    assert done.status == "done"
    assert done.output.splitlines()[-1] == "- Railjet 07:25"
