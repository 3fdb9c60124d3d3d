"""The task tree from the harness's task graph: nesting, labels, flags, liveness (R126)."""

from __future__ import annotations

from typing import Any

from pi_durable_tui.app import TaskNode
from pi_durable_tui.app.screen._task_tree import build_tree
from tests.app.screen_support import (
    ScreenFactory,
    background_subagent,
    call,
    gate_command,
    running_commands,
    say,
)
from tests.harness.run_support import within


def node(task_id: int, kind: str, conversation: int, **fields: Any) -> dict[str, Any]:
    state = fields.pop("state", {"status": "running", "phase": "run"})
    return {
        "id": task_id,
        "kind": kind,
        "conversation_id": conversation,
        "background": False,
        "abort_requested": False,
        "state": state,
        "conversations": [],
        **fields,
    }


def shape(nodes: tuple[TaskNode, ...] | list[TaskNode]) -> list[Any]:
    return [(n.task_id, shape(n.children)) if n.children else n.task_id for n in nodes]


def test_tasks_nest_under_their_owner_and_a_child_conversations_tasks_under_its_owner_R126() -> (
    None
):
    graph = {
        "tasks": {
            "10": node(10, "pi.generation", 1, state={"status": "waiting", "phase": "tools"}),
            "11": node(11, "pi.tool", 1, owner=10),
            "12": node(12, "pi.tool", 1, owner=10, conversations=[20]),
            "21": node(21, "pi.generation", 20),
            "22": node(22, "pi.tool", 20, owner=21, state={"status": "pending", "phase": "call"}),
            "30": node(30, "pi.subagent", 1, background=True, conversations=[40]),
            "41": node(41, "pi.generation", 40, abort_requested=True),
            "50": node(50, "pi.compaction", 1, state={"status": "completing", "outcome": "failed"}),
        }
    }
    started = {10: 1_000.0, 11: 1_500.0, 41: 2_000.0}
    roots = build_tree(graph, lambda n: f"#{n['id']}", started.get, now_ms=4_000.0)
    assert shape(roots) == [(10, [11, (12, [(21, [22])])]), (30, [41]), 50]
    turn, subagent, compaction = roots
    assert (turn.label, turn.status, turn.phase, turn.elapsed_s) == ("#10", "waiting", "tools", 3.0)
    assert turn.children[1].subagent_conversation_id == 20
    assert turn.children[1].children[0].children[0].elapsed_s is None
    assert (subagent.background, subagent.subagent_conversation_id) == (True, 40)
    assert subagent.children[0].aborting
    assert (compaction.status, compaction.phase) == ("completing", "failed")


async def test_a_running_tool_call_shows_under_its_turn_and_the_tree_empties_when_done(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(call("bash", command=gate_command()), say("done"))
    await within(rig.controller.submit("run"))
    await rig.until(lambda: bool(running_commands(rig)), "the command runs")
    (turn,) = rig.model.tasks
    assert (turn.kind, turn.label) == ("pi.generation", "turn")
    (tool,) = turn.children
    assert tool.kind == "pi.tool"
    assert tool.label == f"bash: {gate_command()[:48]}…"
    assert tool.status == "running"
    assert tool.elapsed_s is not None
    rig.release()
    await rig.idle()
    await rig.until(lambda: not rig.model.tasks, "empty tree")


async def test_a_background_subagent_is_a_root_marked_background_with_its_child_conversation(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(*background_subagent(say("Started."), say("Read the report.")))
    await rig.ask("review in the background")
    await rig.until(lambda: bool(running_commands(rig)), "the subagent's command runs")
    assert not rig.model.busy
    subagent = rig.task("pi.subagent")
    assert subagent is not None
    assert subagent.background
    assert subagent.label == "subagent: [bg] review"
    child = subagent.subagent_conversation_id
    assert child is not None
    (turn,) = subagent.children
    assert turn.label == "turn"  # under its subagent: no conversation id (issue 12)
    assert [t.label.split(":")[0] for t in turn.children] == ["bash"]
    rig.release("bg-go")
    await rig.until(lambda: "Read the report." in rig.texts("assistant"), "report answered")
    await rig.until(lambda: not rig.model.tasks, "empty tree")
    report = f"[background task {subagent.task_id} report] Findings"  # the id /tasks lists
    assert any(t.startswith(report) for t in rig.texts("user"))
