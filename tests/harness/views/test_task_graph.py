"""The task graph through the harness (R126): every live task, kept by commits, read-only."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic import BaseModel

from pi_durable_tui.ai import faux_response, faux_tool_call
from pi_durable_tui.harness import Input, ToolApi, ToolResult, define_extension, define_tool
from pi_durable_tui.kernel import CommitInfo, TaskOwned, Tx
from pi_durable_tui.storage import JsonObject, SqliteStorage
from tests.harness.view_support import RigFactory, ViewRig, until, within


def executing_tool(rig: ViewRig) -> bool:
    """Whether a tool task has recorded its intent and runs its effect (R93)."""
    tasks = rig.harness.task_graph()["tasks"].values()
    executing = {"status": "running", "phase": "execute"}
    return any(node["kind"] == "pi.tool" and node["state"] == executing for node in tasks)


def nodes_by_kind(graph: JsonObject) -> dict[str, JsonObject]:
    return {node["kind"]: node for node in graph["tasks"].values()}


async def test_a_node_appears_with_its_task_and_leaves_with_the_commit_making_it_terminal_R126(
    view_rig: RigFactory,
) -> None:
    rig = await view_rig(
        faux_response(faux_tool_call("bash", {"command": "echo hi"})), faux_response("done")
    )
    graph = rig.harness.watch_task_graph()
    changes: list[JsonObject] = []
    graph.subscribe(changes.append)
    problems: list[str] = []

    def check(info: CommitInfo) -> None:  # subscribed after the graph, so it sees it updated
        nodes = graph.value["tasks"]
        for task in info.tasks:
            live = task.status != "terminal"
            if (str(task.id) in nodes) != live:
                problems.append(f"task {task.id} {task.status}: in graph {str(task.id) in nodes}")

    rig.harness.session.subscribe(check)
    await within((await within(rig.root.submit(Input("go")))).wait())
    assert problems == []
    assert graph.value == rig.harness.task_graph() == {"tasks": {}}
    kinds = [sorted(node["kind"] for node in change["tasks"].values()) for change in changes]
    assert ["pi.generation", "pi.tool"] in kinds
    graph.close()


async def test_a_waiting_generation_and_its_running_tool_are_nodes_with_their_state_R126(
    view_rig: RigFactory,
) -> None:
    rig = await view_rig(
        faux_response(faux_tool_call("bash", {"command": "sleep 0.3"})), faux_response("done")
    )
    submission = await within(rig.root.submit(Input("go")))
    await until(lambda: executing_tool(rig))
    nodes = nodes_by_kind(rig.harness.task_graph())
    generation, tool = nodes["pi.generation"], nodes["pi.tool"]
    assert generation == {
        "id": generation["id"],
        "kind": "pi.generation",
        "conversation_id": 1,
        "background": False,
        "abort_requested": False,
        "state": {
            "status": "waiting",
            "phase": "tools",
            "on": [tool["id"]],
            "policy": "all_settled",
        },
        "conversations": [],
    }
    assert tool["owner"] == generation["id"]
    assert tool["state"] == {"status": "running", "phase": "execute"}
    await within(submission.wait())


class SpawnArgs(BaseModel):
    """No arguments."""


async def test_a_task_owning_a_conversation_lists_it_R126(view_rig: RigFactory) -> None:
    release = asyncio.Event()

    async def spawn(_args: SpawnArgs, api: ToolApi) -> ToolResult:
        def create(tx: Tx) -> int:
            return tx.create_conversation(TaskOwned(api.task_id)).id

        child = await api.commit(create)
        await release.wait()
        return ToolResult(content=f"child {child}")

    tool = define_tool("spawn", description="spawn a child", parameters=SpawnArgs, execute=spawn)
    rig = await view_rig(
        faux_response(faux_tool_call("spawn", {})),
        faux_response("done"),
        extensions=[define_extension("spawner", tools=[tool])],
    )
    submission = await within(rig.root.submit(Input("go")))
    await until(
        lambda: bool(
            nodes_by_kind(rig.harness.task_graph()).get("pi.tool", {}).get("conversations")
        )
    )
    (child,) = nodes_by_kind(rig.harness.task_graph())["pi.tool"]["conversations"]
    owner = (await within(rig.harness.session.storage.conversation(child))).owner  # type: ignore[union-attr]
    assert owner is not None
    assert owner.conversation_id == 1
    release.set()
    await within(submission.wait())


async def test_after_reopen_interrupted_tasks_show_pending_and_the_graph_schedules_nothing_R126_R23(
    view_rig: RigFactory, tmp_path: Path
) -> None:
    path = tmp_path / "session.sqlite"
    rig = await view_rig(
        faux_response(faux_tool_call("bash", {"command": "sleep 5"})),
        storage=await within(SqliteStorage.open(path)),
    )
    await within(rig.root.submit(Input("go")))
    await until(lambda: executing_tool(rig))
    await rig.aclose()  # like a kill: close writes no outcome (R27)

    reopened = await view_rig(
        faux_response("interrupted, fine"),
        storage=await within(SqliteStorage.open(path)),
        root=False,
    )
    nodes = nodes_by_kind(reopened.harness.task_graph())
    assert nodes["pi.tool"]["state"] == {"status": "pending", "phase": "execute"}
    assert nodes["pi.generation"]["state"]["status"] == "waiting"
    watched = reopened.harness.watch_task_graph()
    assert watched.value == reopened.harness.task_graph()
    assert (await within(reopened.harness.inspect()))["scheduling"] == "paused"

    await within(reopened.harness.wait_for_idle())
    assert reopened.harness.task_graph() == watched.value == {"tasks": {}}
    watched.close()
