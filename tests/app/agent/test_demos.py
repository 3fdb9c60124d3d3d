"""The offline demos run to their end, and a continued demo keeps its script and pace (issue 8).

``demo_pace=0`` runs every wait of a demo (streaming, the slow test command, the
slow travel sources) at once; the flows are the ones a person sees at pace 1.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_durable_tui.app import DEMOS
from pi_durable_tui.app.agent._demos import coding_script, read_marker
from tests.app.screen_support import ScreenFactory, ScreenRig
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
