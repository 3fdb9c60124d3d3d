"""Read-only views of the scheduler: ``inspect()`` and the task graph.

Rules: R28 (inspect: scheduling mode, task activities, open submissions, no
writes), R126 (task-graph nodes, and how ``watch_task_graph`` follows commits),
R23 (neither enables scheduling).
"""

from __future__ import annotations

import asyncio
from typing import Any

from pi_durable_tui.kernel import (
    CommitInfo,
    Completed,
    ConversationOwned,
    TaskOwned,
    TaskRuntime,
    Tx,
    Waiting,
)
from pi_durable_tui.storage.json_ops import Json, JsonObject
from pi_durable_tui.storage.records import TaskRecord
from pi_durable_tui.storage.writes import PutTask
from tests.kernel.task_support import (
    Gate,
    Kits,
    complete,
    create_owned,
    define,
    gated,
    spin,
    within,
)


def activities(report: JsonObject) -> dict[int, Json]:
    return {t["id"]: t["activity"] for t in report["tasks"]}


# -- inspect (R28) --


async def test_r28_inspect_while_paused_reports_ready_and_blocked_tasks_writing_nothing(
    kits: Kits,
) -> None:
    ghost = define("ghost", {"run": complete()})  # not installed
    job_v2 = define("job", {"run": complete()}, version=2, migrate=lambda i, c, v: (i, c))
    owner_def = define("owner", {"run": complete()})
    kit = await kits.open(job_v2, owner_def)
    conv = await kit.conversation()
    current = await kit.create(job_v2, conversation_id=conv)
    older = await kit.create(job_v2, conversation_id=conv)
    await kit.storage.commit([PutTask(TaskRecord(**{**vars_of(older), "version": 1}))])
    newer = await kit.create(job_v2, conversation_id=conv)
    await kit.storage.commit([PutTask(TaskRecord(**{**vars_of(newer), "version": 9}))])
    missing = await kit.create(ghost, conversation_id=conv)
    owner = await kit.create(owner_def, conversation_id=conv)
    child = await kit.create(owner_def, owner=owner.id)
    kit = await kits.reopen(kit)  # pick up the raw writes
    await kit.session.abort_task(owner.id)
    seq = kit.storage.last_seq

    report = await kit.session.inspect()
    assert report["scheduling"] == "paused"
    assert activities(report) == {
        current.id: {"ready": {"migrates": False}},
        older.id: {"ready": {"migrates": True}},
        newer.id: {"blocked": {"reason": "task_too_old"}},
        missing.id: {"blocked": {"reason": "missing_task"}},
        owner.id: {"waiting": {"on": [child.id]}},  # abort-marked: its owned work
        child.id: {"ready": {"migrates": False}},
    }
    assert kit.storage.last_seq == seq
    assert await kit.scheduling() == "paused"


def vars_of(record: TaskRecord) -> dict[str, Any]:
    return {name: getattr(record, name) for name in record.__dataclass_fields__}


async def test_r28_inspect_reports_running_completing_and_waiting_on_live_members(
    kits: Kits,
) -> None:
    gate, hold_gate = Gate(), Gate()
    ids: dict[str, int] = {}
    slow = define("slow", {"run": gated(gate, complete())})
    held_child = define("held-child", {"run": gated(hold_gate, complete())})

    async def hold(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.commit(create_owned(held_child, task.id))
        await runtime.commit(lambda tx: Completed())

    holder = define("holder", {"run": hold})
    done = define("done", {"run": complete()})

    async def wait(task: TaskRecord, runtime: TaskRuntime) -> None:
        on = [ids["done"], ids["slow"]]
        await runtime.commit(lambda tx: Waiting(on=on, checkpoint={"phase": "end"}))

    waiter = define("waiter", {"wait": wait, "end": complete()})
    kit = await kits.open(slow, held_child, holder, done, waiter)
    conv = await kit.conversation()
    ids["done"] = (await kit.create(done, conversation_id=conv)).id
    await kit.finished(ids["done"])
    ids["slow"] = (await kit.create(slow, conversation_id=conv)).id
    holder_task = await kit.create(holder, conversation_id=conv)
    waiter_task = await kit.create(waiter, conversation_id=conv)
    await gate.wait_reached()
    await hold_gate.wait_reached()
    await kit.status_is(holder_task.id, "completing")
    await kit.status_is(waiter_task.id, "waiting")
    while await kit.activity(waiter_task.id) == {"running": True}:
        await asyncio.sleep(0)  # its invocation ends just after the Waiting commit
    report = await kit.session.inspect()
    assert report["scheduling"] == "running"
    found = activities(report)
    assert found[ids["slow"]] == {"running": True}
    assert found[holder_task.id] == {"completing": True}
    assert found[waiter_task.id] == {"waiting": {"on": [ids["slow"]]}}
    assert ids["done"] not in found  # terminal tasks are not live
    gate.open()
    hold_gate.open()
    await kit.finished(waiter_task.id)
    await kit.finished(holder_task.id)


async def test_r28_inspect_lists_queued_and_placed_submissions_in_id_order(kits: Kits) -> None:
    kit = await kits.open()
    conv = await kit.conversation()
    other = await kit.conversation()

    def submit(tx: Tx) -> list[int]:
        return [
            tx.create_submission(other, "input").id,
            tx.create_submission(conv, "input", status="done", entry=None).id,
            tx.create_submission(conv, "input", status="placed", entry=1).id,
            tx.create_submission(conv, "write", status="unanswered", reason="stale").id,
            tx.create_submission(conv, "write").id,
        ]

    queued, _done, placed, _stale, write = await kit.session.commit(submit)
    report = await kit.session.inspect()
    listed = report["submissions"]
    assert [s["id"] for s in listed] == [queued, placed, write]
    assert [s["status"] for s in listed] == ["queued", "placed", "queued"]


async def test_r28_r27_inspect_queued_before_the_seal_reports_closing(kits: Kits) -> None:
    kit = await kits.open()
    release = asyncio.Event()

    async def hold_the_line(tx: Tx) -> None:
        await release.wait()

    holder = asyncio.ensure_future(kit.session.commit(hold_the_line))
    await spin()
    inspected = asyncio.ensure_future(kit.session.inspect())
    await spin()
    closing = asyncio.ensure_future(kit.session.close())
    await spin()
    release.set()
    report = await within(inspected)
    await within(asyncio.gather(holder, closing))
    assert report["scheduling"] == "closing"


# -- the task graph (R126) --


async def test_r126_task_graph_nodes_carry_owner_conversations_state_and_flags(kits: Kits) -> None:
    gate = Gate()
    ids: dict[str, int] = {}
    child = define("child", {"run": gated(gate, complete())})

    async def spawn(task: TaskRecord, runtime: TaskRuntime) -> None:
        def fn(tx: Tx) -> Waiting:
            made = tx.create_task(child, ownership=TaskOwned(task.id))
            first = tx.create_conversation(TaskOwned(task.id))
            second = tx.create_conversation(TaskOwned(task.id))
            ids.update(child=made.id, first=first.id, second=second.id)
            return Waiting(on=[made.id], policy="fail_fast", checkpoint={"phase": "done"})

        await runtime.commit(fn)

    parent = define("parent", {"spawn": spawn, "done": complete()})
    held = define("held", {"run": gated(Gate(), complete())})
    kit = await kits.open(parent, child, held)
    conv = await kit.conversation()
    task = await kit.create(parent, conversation_id=conv)
    bg = await kit.create(held, conversation_id=conv, background=True)
    assert kit.session.task_graph()["tasks"][str(task.id)]["state"] == {
        "status": "pending",
        "phase": "spawn",
    }
    kit.session.resume()
    await gate.wait_reached()
    await kit.status_is(task.id, "waiting")
    await kit.session.abort_task(bg.id)
    graph = kit.session.task_graph()["tasks"]
    assert graph[str(task.id)] == {
        "id": task.id,
        "kind": "parent",
        "conversation_id": conv,
        "background": False,
        "abort_requested": False,
        "state": {
            "status": "waiting",
            "phase": "done",
            "on": [ids["child"]],
            "policy": "fail_fast",
        },
        "conversations": [ids["first"], ids["second"]],
    }
    assert graph[str(ids["child"])]["owner"] == task.id
    assert graph[str(ids["child"])]["state"] == {"status": "running", "phase": "run"}
    assert "owner" not in graph[str(task.id)]
    gate.open()
    await kit.finished(task.id)


async def test_r126_a_watched_node_appears_with_its_creating_commit_and_leaves_at_its_end(
    kits: Kits,
) -> None:
    gate = Gate()
    job = define("job", {"run": gated(gate, complete())})
    kit = await kits.open(job)
    conv = await kit.conversation()
    watch = kit.session.watch_task_graph()
    frames: list[tuple[CommitInfo, JsonObject]] = []
    watch.subscribe(lambda graph: frames.append((kit.commits[-1], graph)))
    task = await kit.create(job, conversation_id=conv)
    key = str(task.id)
    creating_commit, first = frames[0]
    assert [r.id for r in creating_commit.tasks] == [task.id]
    assert first["tasks"][key]["state"] == {"status": "pending", "phase": "run"}
    kit.session.resume()
    await gate.wait_reached()
    assert watch.value["tasks"][key]["state"]["status"] == "running"
    gate.open()
    final = await kit.finished(task.id)
    terminal_commit, last = frames[-1]
    assert [r for r in terminal_commit.tasks if r.id == task.id] == [final]
    assert last == {"tasks": {}}
    assert all(key in graph["tasks"] for _, graph in frames[:-1])
    watch.close()


async def test_r126_r27_a_watched_graph_keeps_its_last_value_from_the_seal_of_close(
    kits: Kits,
) -> None:
    job = define("job", {"run": complete()})
    kit = await kits.open(job)
    conv = await kit.conversation()
    watch = kit.session.watch_task_graph()
    frames: list[JsonObject] = []
    watch.subscribe(frames.append)
    release = asyncio.Event()

    async def admitted(tx: Tx) -> None:  # admitted before the seal, settles during close
        await release.wait()
        tx.create_task(job, ownership=ConversationOwned(), conversation_id=conv)

    creating = asyncio.ensure_future(kit.session.commit(admitted))
    await spin()
    closing = asyncio.ensure_future(kit.session.close())
    await spin()
    release.set()
    await within(asyncio.gather(creating, closing))
    assert frames == []
    assert watch.value == {"tasks": {}}


async def test_r126_r23_after_reopen_the_graph_shows_formerly_running_tasks_pending(
    kits: Kits,
) -> None:
    gate = Gate()
    job = define("job", {"run": gated(gate, complete())})
    kit = await kits.open(job)
    task = await kit.create(job, conversation_id=await kit.conversation())
    kit.session.resume()
    await gate.wait_reached()
    assert kit.session.task_graph()["tasks"][str(task.id)]["state"]["status"] == "running"
    kit = await kits.reopen(kit)
    watch = kit.session.watch_task_graph()
    assert watch.value["tasks"][str(task.id)]["state"] == {"status": "pending", "phase": "run"}
    await spin()
    assert await kit.scheduling() == "paused"
    watch.close()
