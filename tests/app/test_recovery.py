"""The recovery report of ``--continue`` after a store was left mid-run (issue 8; R39, R95).

``Harness.close()`` writes no outcome (R27), so closing the first session while
its tools run leaves the SQLite store exactly as ``kill -9`` at that moment
would; reopening it with ``continue_session`` is what ``pidurable --continue``
does: the report is read before scheduling resumes and shown as a ``resumed``
block, then the work carries on.
"""

from __future__ import annotations

from pi_durable_tui.ai import (
    FauxMatch,
    FauxResponse,
    faux_response,
    faux_text,
    faux_tool_call,
)
from pi_durable_tui.app import TaskNode
from tests.app.screen_support import ScreenFactory, ScreenRig, gate_command, say, within

FG, BG = FauxMatch(user="[fg]"), FauxMatch(user="[bg]")


def child_answer(match: FauxMatch, text: str) -> FauxResponse:
    return faux_response(faux_text(text), match=match)


def walk(nodes: tuple[TaskNode, ...] | list[TaskNode]) -> list[TaskNode]:
    return [n for node in nodes for n in (node, *walk(node.children))]


def running_commands(rig: ScreenRig) -> int:
    return sum(1 for n in walk(list(rig.model.tasks)) if n.label.startswith("bash"))


async def crash_mid_run(open_screen: ScreenFactory) -> ScreenRig:
    """A main turn running a command, a foreground and a background subagent, then a crash."""
    rig = await open_screen(
        faux_response(faux_tool_call("bash", {"command": gate_command("fg-go")}), match=FG),
        faux_response(faux_tool_call("bash", {"command": gate_command("bg-go")}), match=BG),
        faux_response(
            faux_text("Working on three fronts."),
            faux_tool_call("bash", {"command": gate_command()}),
            faux_tool_call("subagent", {"task": "[fg] check the tests"}),
            faux_tool_call("subagent", {"task": "[bg] review the docs", "background": True}),
        ),
        settings={"progress": {"output_interval_ms": 10}},
    )
    await within(rig.controller.submit("go"))
    await rig.until(lambda: running_commands(rig) == 3, "three commands run")
    await rig.until(lambda: "started" in rig.card_output("bash"), "committed output")
    await within(rig.controller.close())  # the store is left as a kill -9 would leave it
    return rig


async def test_continue_reports_the_resumed_turn_the_cut_calls_and_the_background_task_R95(
    open_screen: ScreenFactory,
) -> None:
    await crash_mid_run(open_screen)
    rig = await open_screen(
        child_answer(FG, "Tests are fine."),
        child_answer(BG, "Docs need an example."),
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
    assert any(
        line.startswith("Background task") and "[bg] review the docs" in line for line in lines
    )
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
    assert any(t.endswith("report] Docs need an example.") for t in rig.texts("user"))


async def test_continue_after_an_idle_close_reports_nothing(open_screen: ScreenFactory) -> None:
    first = await open_screen(say("hi"))
    await first.ask("hello")
    await within(first.controller.close())
    rig = await open_screen(continue_session=True)
    assert rig.blocks("resumed") == []
    assert rig.texts("user") == ["hello"]
