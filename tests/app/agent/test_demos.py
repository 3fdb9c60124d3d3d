"""The offline demos run to their end, and a continued demo keeps its script and pace (issue 8).

``demo_pace=0`` runs every wait of a demo (streaming, the slow test command, the
slow travel sources) at once; the flows are the ones a person sees at pace 1.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pi_durable_tui.app import (
    DEMOS,
    AgentApp,
    AgentController,
    AppOptions,
    LiveScreenModel,
    start_screen,
)
from pi_durable_tui.app.agent._demos import coding_script, read_marker
from tests.app.screen_support import ScreenFactory, ScreenRig, running_commands, until
from tests.harness.run_support import within


def workspace(rig: ScreenRig) -> Path:
    marker = read_marker(rig.app.store)
    assert marker is not None
    return Path(marker.workspace)


async def test_the_coding_demo_fixes_the_bug_and_the_background_review_arrives(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(demo="coding", demo_pace=0)
    assert rig.texts("user") == [DEMOS["coding"].prompt]
    assert rig.model.notices[-1].text.startswith("Demo: a scripted model drives real tools")
    await rig.until(
        lambda: any(t.startswith("The reviewer's report is in.") for t in rig.texts("assistant")),
        "the demo's last answer",
    )
    await rig.idle()
    root = workspace(rig)
    assert "return a + b" in (root / "calc.py").read_text()
    first_run, second_run = (rig.card("bash", i).tool for i in (0, 1))
    assert first_run is not None
    assert second_run is not None
    assert "1 passed, 2 failed" in first_run.output
    assert "3 passed, 0 failed" in second_run.output
    assert [c.tool.name for c in rig.blocks("tool") if c.tool] == [
        "read",
        "bash",
        "edit",
        "bash",
        "subagent",
    ]
    assert [c.tool.status for c in rig.blocks("tool") if c.tool] == [
        "done",
        "error",
        "done",
        "done",
        "done",
    ]
    reports = [t for t in rig.texts("user") if t.startswith("[background task ")]
    assert any("usage example" in t for t in reports)
    assert rig.model.tasks == ()


async def test_the_planner_demo_researches_in_the_background_and_ends_with_a_plan(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(demo="planner", demo_pace=0)
    await rig.until(
        lambda: any(t.startswith("Here is your weekend") for t in rig.texts("assistant")),
        "the plan",
    )
    research = next(u for u in rig.texts("user") if u.startswith("[background task "))
    assert "Railjet" in research
    await rig.idle()
    conversations = await within(rig.controller.conversations())
    (subagent,) = [c for c in conversations if c.label.startswith("subagent")]
    await within(rig.controller.switch_conversation(subagent.conversation_id))
    searches = [c.tool for c in rig.blocks("tool") if c.tool and c.tool.name == "search"]
    assert [s.arguments["topic"] for s in searches] == ["weather", "museums", "trains"]
    assert all(s.status == "done" for s in searches)
    assert "source 10/10" in searches[2].output


async def test_a_continued_demo_reopens_with_the_same_demo_pace_and_workspace(
    open_screen: ScreenFactory,
) -> None:
    first = await open_screen(demo="planner", demo_pace=0)
    place = workspace(first)
    await within(first.controller.close())
    rig = await open_screen(continue_session=True)
    assert rig.app.demo is not None
    assert (rig.app.demo.name, rig.app.demo.pace) == ("planner", 0)
    assert workspace(rig) == place
    assert rig.texts("user")[0] == DEMOS["planner"].prompt
    assert "search" in {tool.name for ext in rig.app.demo.extensions for tool in ext.tools}


@pytest.mark.parametrize(
    ("pace", "sleep", "speed"), [(1.0, "sleep 0.7", 45), (0.5, "sleep 0.35", 90)]
)
def test_the_pace_scales_the_demo_waits(pace: float, sleep: str, speed: float) -> None:
    script = coding_script(pace)
    assert script["tokens_per_second"] == speed
    commands = [
        block["arguments"]["command"]
        for response in script["responses"]
        for block in response["content"]
        if block.get("name") == "bash"
    ]
    assert commands
    assert all(sleep in command for command in commands)


def test_a_negative_pace_is_refused() -> None:
    with pytest.raises(ValueError, match="A demo pace must be 0 or more"):
        DEMOS["coding"].paced(-1)


@pytest.fixture
async def continued(tmp_path: Path) -> AsyncIterator[list[AgentController]]:
    """Controllers of demos reopened as ``pidurable --continue`` does; closed at teardown."""
    opened: list[AgentController] = []
    yield opened
    for controller in opened:
        await within(controller.close())


async def crash_in_test_run(
    open_screen: ScreenFactory, continued: list[AgentController], tmp_path: Path, run: int
) -> tuple[LiveScreenModel, Path]:
    """Leave the coding demo while its ``run``-th test run runs (as ``kill -9`` would), reopen it.

    The store is closed with the command running and its first line committed
    (``Harness.close()`` writes no outcome, R27); the session reopens as
    ``pidurable --continue`` opens it (the demo's own script, from its marker),
    and gets the run back as ``interrupted``. Returns the reopened screen's model
    once the demo's last answer is in, and the demo's workspace.
    """
    rig = await open_screen(demo="coding", demo_pace=0.5)
    place = workspace(rig)

    def running() -> bool:
        bash = [b for b in rig.blocks("tool") if b.tool and b.tool.name == "bash"]
        return len(bash) == run and len(running_commands(rig)) == 1

    await rig.until(running, f"test run {run} running")
    await rig.until(lambda: "collecting tests... 1/6" in rig.card_output("bash"), "its output")
    await within(rig.controller.close())
    app = await within(AgentApp.open(AppOptions(cwd=str(tmp_path / "work"), continue_session=True)))
    model, controller = await within(start_screen(app, reopened=True))
    continued.append(controller)

    def texts() -> list[str]:
        return [b.text for b in model.blocks if b.kind == "assistant"]

    await until(
        lambda: any(t.startswith("The reviewer's report is in.") for t in texts()),
        what="the demo's last answer",
    )
    await within(app.harness.wait_for_idle())
    return model, place


def answers(model: LiveScreenModel) -> list[str]:
    return [b.text for b in model.blocks if b.kind == "assistant"]


def tools(model: LiveScreenModel) -> list[tuple[str, str, str]]:
    return [(b.tool.name, b.tool.status, b.tool.output) for b in model.blocks if b.tool]


async def test_a_crash_in_the_second_test_run_never_has_the_demo_claim_the_tests_pass(
    open_screen: ScreenFactory, continued: list[AgentController], tmp_path: Path
) -> None:
    model, _ = await crash_in_test_run(open_screen, continued, tmp_path, 2)

    assert [(name, status) for name, status, _ in tools(model)][-2:] == [
        ("bash", "interrupted"),
        ("subagent", "done"),
    ]
    said = answers(model)
    assert not any("pass" in t and "cannot tell you" not in t for t in said), said
    (honest,) = [t for t in said if t.startswith("The test run was cut off")]
    assert "cannot tell you the tests pass" in honest
    assert "python3 test_calc.py" in honest


async def test_a_crash_in_the_first_test_run_fixes_the_bug_without_claiming_what_the_run_showed(
    open_screen: ScreenFactory, continued: list[AgentController], tmp_path: Path
) -> None:
    model, place = await crash_in_test_run(open_screen, continued, tmp_path, 1)

    said = answers(model)
    assert not any("fail as expected" in t for t in said), said
    assert any(t.startswith("The test run was cut off") for t in said)
    assert "return a + b" in (place / "calc.py").read_text()
    runs = [(status, output) for name, status, output in tools(model) if name == "bash"]
    assert runs[0][0] == "interrupted"
    assert runs[1][0] == "done"
    assert "3 passed, 0 failed" in runs[1][1]  # a run it saw complete: it may say so
    assert any(t.startswith("All tests pass") for t in said)
