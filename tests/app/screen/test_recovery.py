"""The recovery report of ``--continue`` after a store was left mid-run (issue 8; R39, R95).

``Harness.close()`` writes no outcome (R27), so closing the first session while
its tools run leaves its tasks exactly as ``kill -9`` at that moment would;
reopening it with ``continue_session`` is what ``pidurable --continue`` does: the
report is read before scheduling resumes and shown as a ``resumed`` block, then
the work carries on. What cut a call is worded from the stop marker the app's
close commits (``app/agent/_stop_marker.py``): a stop signal, a quit, or, when no
close said anything (a harness closed behind the app's back, as ``kill -9``
leaves the store), the crash.
"""

from __future__ import annotations

import re
from pathlib import Path

from pi_durable_tui.ai import FauxMatch, FauxProvider, FauxResponse, faux_response, faux_text
from pi_durable_tui.app import AgentApp, AppOptions, PermissionChoices
from tests.app.screen_support import (
    BACKGROUND,
    FOREGROUND,
    ScreenFactory,
    ScreenRig,
    call,
    crash_mid_run,
    gate_command,
    running_commands,
    say,
)
from tests.harness.run_support import within


def child_answer(match: FauxMatch, text: str) -> FauxResponse:
    return faux_response(faux_text(text), match=match)


async def test_continue_reports_the_resumed_turn_the_cut_calls_and_the_background_task_R95(
    open_screen: ScreenFactory,
) -> None:
    await crash_mid_run(open_screen)
    rig = await open_screen(
        child_answer(FOREGROUND, "Tests are fine."),
        child_answer(BACKGROUND, "Docs need an example."),
        say("The command was interrupted; the subagent says the tests are fine."),
        say("Noted the docs review."),
        continue_session=True,
    )
    (resumed,) = rig.blocks("resumed")
    lines = resumed.text.splitlines()
    main_turn = [line for line in lines if line.startswith("The turn in the main conversation")]
    assert len(main_turn) == 1
    assert any(
        line.startswith("bash `echo started")
        and "not replay-safe" in line
        and "interrupted" in line
        for line in lines
    )
    assert any(
        line.startswith("subagent `[fg] check the tests`") and "replay-safe and runs again" in line
        for line in lines
    )
    (background,) = [line for line in lines if line.startswith("Background task")]
    assert re.fullmatch(
        r"Background task (\d+) \(subagent: \[bg\] review the docs\) is still running; "
        r"/tasks lists it\.",
        background,
    ), background
    await rig.until(lambda: "Noted the docs review." in rig.texts("assistant"), "all work done")
    main_bash = rig.card("bash").tool
    assert main_bash is not None
    assert main_bash.status == "interrupted"
    assert "started" in main_bash.output
    subagent = rig.card("subagent", 0).tool
    assert subagent is not None
    assert subagent.status == "done"
    assert subagent.output == "Tests are fine."
    assert rig.texts("user")[:1] == ["go"]
    assert sum(text == "go" for text in rig.texts("user")) == 1
    task_id = re.search(r"\d+", background)
    assert task_id is not None
    report = f"[background task {task_id.group()} report] Docs need an example."
    assert report in rig.texts("user")  # the id the recovery report and /tasks show


async def test_continue_after_an_idle_close_reports_nothing(open_screen: ScreenFactory) -> None:
    first = await open_screen(say("hi"))
    await first.ask("hello")
    await within(first.controller.close())
    rig = await open_screen(continue_session=True)
    assert rig.blocks("resumed") == []
    assert rig.texts("user") == ["hello"]


async def test_continue_lists_a_call_left_waiting_for_approval_and_asks_the_same_again(
    open_screen: ScreenFactory,
) -> None:
    ask = PermissionChoices()  # the product's default, auto-edit: this command asks
    first = await open_screen(call("bash", command="echo ran >> made.txt"), permissions=ask)
    await first.controller.submit("make it")
    await first.until(lambda: first.model.approval is not None, "the approval request")
    await within(first.controller.close())  # no outcome written: as kill -9 leaves it (R27)

    rig = await open_screen(say("done"), continue_session=True, permissions=ask)
    (resumed,) = rig.blocks("resumed")
    assert any(
        line.startswith("bash `echo ran >> made.txt` waits for your approval")
        and "nothing of it ran" in line
        for line in resumed.text.splitlines()
    )
    await rig.until(lambda: rig.model.approval is not None, "the same request")
    question = rig.model.approval
    assert question is not None
    assert question.argument == "echo ran >> made.txt"
    assert not (Path(rig.workdir) / "made.txt").exists()


async def _stop_during_a_command(open_screen: ScreenFactory, signal_name: str | None) -> Path:
    """Stop a session while ``bash`` runs: an orderly close, after ``signal_name`` if given.

    Returns the workspace, to reopen it.
    """
    rig = await open_screen(call("bash", command=gate_command()))
    await within(rig.controller.submit("go"))
    await rig.until(lambda: len(running_commands(rig)) == 1, "the command runs")
    if signal_name is not None:
        rig.app.stop_by(signal_name)  # what the CLI does the moment the signal arrives
    await within(rig.controller.close())
    return rig.workdir


def _cut_line(rig: ScreenRig) -> str:
    (resumed,) = rig.blocks("resumed")
    (line,) = [line for line in resumed.text.splitlines() if line.startswith("bash `echo started")]
    return line


async def _open_bare(workdir: Path) -> AgentApp:
    """``--continue`` without a screen: the session opens and nothing is scheduled (R23)."""
    options = AppOptions(cwd=str(workdir), continue_session=True, model="faux/faux-1")
    return await within(AgentApp.open(options, faux=FauxProvider([])))


async def test_a_call_cut_by_a_stop_signal_is_reported_as_stopped_by_it_not_as_a_crash(
    open_screen: ScreenFactory,
) -> None:
    await _stop_during_a_command(open_screen, "SIGTERM")

    rig = await open_screen(say("The command was interrupted."), continue_session=True)

    assert _cut_line(rig).endswith(
        "` was cut when pidurable was stopped (SIGTERM) while running; it is not replay-safe, "
        "so it does not run again: the model gets it as interrupted, with the output it had "
        "committed."
    )
    await rig.until(lambda: "The command was interrupted." in rig.texts("assistant"), "the turn")
    bash = rig.card("bash").tool
    assert bash is not None
    assert bash.status == "interrupted"  # recovered as R95 says, whatever cut it


async def test_a_call_cut_by_a_quit_is_reported_as_cut_when_the_session_was_closed(
    open_screen: ScreenFactory,
) -> None:
    await _stop_during_a_command(open_screen, None)

    rig = await open_screen(say("The command was interrupted."), continue_session=True)

    assert " was cut when the session was closed while running; " in _cut_line(rig)


async def test_a_run_that_took_the_stop_marker_then_died_without_closing_is_reported_as_a_crash(
    open_screen: ScreenFactory,
) -> None:
    workdir = await _stop_during_a_command(open_screen, "SIGTERM")
    taker = await _open_bare(workdir)  # takes the marker at its opening
    await within(taker.harness.close())  # the store as kill -9 leaves it: no close of its own

    rig = await open_screen(say("The command was interrupted."), continue_session=True)

    assert " was cut by the crash while running; " in _cut_line(rig)


async def test_a_run_stopped_before_it_ran_the_cut_call_hands_the_earlier_cause_on(
    open_screen: ScreenFactory,
) -> None:
    workdir = await _stop_during_a_command(open_screen, "SIGTERM")
    taker = await _open_bare(workdir)
    taker.stop_by("SIGINT")  # stopped at once: the call never ran again in this run
    await within(taker.close())

    rig = await open_screen(say("The command was interrupted."), continue_session=True)

    assert " was cut when pidurable was stopped (SIGTERM) while running; " in _cut_line(rig)
