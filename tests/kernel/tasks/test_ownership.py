"""Ownership: who may own new work, the ownership tree, and completing holds.

Rules: R11 (new owned work needs a live owner), R-1.7 (ordinary traversal and
ordinary owned work), R53 (completing holds and when they end), R54 (what a
hold writes), R55 (a held failure is cancellation intent).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pi_durable_tui.kernel import (
    Completed,
    ConversationOwned,
    Failed,
    OwnershipRejected,
    TaskOwned,
    TaskRuntime,
    Tx,
    define_doc,
)
from pi_durable_tui.kernel.tasks import LiveIndex, conversation_busy_tasks, ordinary_owned_work
from pi_durable_tui.storage.records import ConversationOwner, ConversationRecord, TaskRecord
from pi_durable_tui.storage.writes import PutConversation, PutTask
from tests.kernel.task_support import (
    CrashableStorage,
    Gate,
    Kit,
    Kits,
    complete,
    crashing_parent,
    create_owned,
    define,
    gated,
    outcome_of,
    spin,
    within,
)

NOTE = define_doc("note", initial=lambda: {"text": ""})
TASK_NOTE = define_doc("task-note", scope="task", initial=lambda: {"text": ""})
leaf = define("leaf", {"run": complete("leaf")})


def holder_definitions(gate: Gate) -> tuple[Any, Any]:
    """A ``holder`` task that completes while its child (stopped at ``gate``) is live."""
    child = define("gated-child", {"run": gated(gate, complete("child"))})

    async def spawn_then_finish(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.commit(create_owned(child, task.id))
        await runtime.commit(lambda tx: Completed("holder"))

    return define("holder", {"spawn": spawn_then_finish}), child


async def held_holder(kit: Kit, holder: Any, gate: Gate) -> TaskRecord:
    """Run a holder until it holds ``completing``."""
    task = await kit.create(holder, conversation_id=await kit.conversation())
    kit.session.resume()
    await gate.wait_reached()
    return await kit.status_is(task.id, "completing")


# -- R11: new owned work needs a live owner --


async def _rejects(kit: Kit, fn: Any, *fragments: str) -> None:
    seq = kit.storage.last_seq
    with pytest.raises(OwnershipRejected) as caught:
        await kit.session.commit(fn)
    for fragment in fragments:
        assert fragment in str(caught.value), str(caught.value)
    assert kit.storage.last_seq == seq  # rejected before storage


async def test_r11_new_owned_work_is_rejected_when_the_owner_does_not_exist(kits: Kits) -> None:
    kit = await kits.open(leaf)
    conv = await kit.conversation()
    await _rejects(
        kit,
        lambda tx: tx.create_task(leaf, ownership=TaskOwned(9999)),
        "Task 9999 does not exist",
    )
    await _rejects(
        kit,
        lambda tx: tx.create_task(leaf, ownership=TaskOwned(9999), conversation_id=conv),
        "Task 9999 does not exist",
    )
    await _rejects(
        kit, lambda tx: tx.create_conversation(TaskOwned(9999)), "Task 9999 does not exist"
    )


async def test_r11_new_owned_work_is_rejected_when_the_owner_is_completing(kits: Kits) -> None:
    gate = Gate()
    holder_definition, child = holder_definitions(gate)
    kit = await kits.open(holder_definition, child, leaf)
    holder = await held_holder(kit, holder_definition, gate)
    await _rejects(
        kit,
        lambda tx: tx.create_task(leaf, ownership=TaskOwned(holder.id)),
        f"Task {holder.id} is completing",
    )
    await _rejects(
        kit,
        lambda tx: tx.create_conversation(TaskOwned(holder.id)),
        f"Task {holder.id} is completing",
    )
    gate.open()
    await kit.finished(holder.id)


async def test_r11_new_owned_work_is_rejected_when_the_owner_is_terminal(kits: Kits) -> None:
    kit = await kits.open(leaf)
    conv = await kit.conversation()
    done = await kit.create(leaf, conversation_id=conv)
    await kit.finished(done.id)
    await _rejects(
        kit,
        lambda tx: tx.create_task(leaf, ownership=TaskOwned(done.id), conversation_id=conv),
        f"Task {done.id} is terminal",
    )
    await _rejects(
        kit,
        lambda tx: tx.create_conversation(TaskOwned(done.id)),
        f"Task {done.id} is terminal",
    )


async def test_r11_a_child_of_a_terminal_owner_without_a_conversation_names_its_status(
    kits: Kits,
) -> None:
    kit = await kits.open(leaf)
    conv = await kit.conversation()
    done = await kit.create(leaf, conversation_id=conv)
    await kit.finished(done.id)
    await _rejects(
        kit,
        lambda tx: tx.create_task(leaf, ownership=TaskOwned(done.id)),
        f"Task {done.id} is terminal",
    )


async def test_r11_new_owned_work_is_rejected_when_the_owner_is_abort_marked(kits: Kits) -> None:
    kit = await kits.open(leaf)
    conv = await kit.conversation()
    owner = await kit.create(leaf, conversation_id=conv)
    assert await kit.session.abort_task(owner.id) == "marked"  # paused: stays live
    await _rejects(
        kit,
        lambda tx: tx.create_task(leaf, ownership=TaskOwned(owner.id)),
        f"Task {owner.id} is abort-marked",
    )
    await _rejects(
        kit,
        lambda tx: tx.create_conversation(TaskOwned(owner.id)),
        f"Task {owner.id} is abort-marked",
    )


async def test_r11_r12_a_child_lives_in_its_owners_conversation_and_is_never_background(
    kits: Kits,
) -> None:
    kit = await kits.open(leaf)
    conv = await kit.conversation()
    other = await kit.conversation()
    owner = await kit.create(leaf, conversation_id=conv)
    await _rejects(
        kit,
        lambda tx: tx.create_task(leaf, ownership=TaskOwned(owner.id), conversation_id=other),
        "owner's conversation",
    )
    await _rejects(
        kit,
        lambda tx: tx.create_task(leaf, ownership=TaskOwned(owner.id), background=True),
        "cannot be background",
    )
    await _rejects(kit, lambda tx: tx.create_task(leaf, ownership=None), "ownership")
    child = await kit.create(leaf, owner=owner.id)
    assert (child.conversation_id, child.owner) == (conv, owner.id)


async def test_r11_an_owner_created_in_the_same_commit_is_judged_on_its_candidate(
    kits: Kits,
) -> None:
    kit = await kits.open(leaf)
    conv = await kit.conversation()

    def both(tx: Tx) -> tuple[TaskRecord, TaskRecord, ConversationRecord]:
        owner = tx.create_task(leaf, ownership=ConversationOwned(), conversation_id=conv)
        child = tx.create_task(leaf, ownership=TaskOwned(owner.id))
        owned = tx.create_conversation(TaskOwned(owner.id))
        return owner, child, owned

    owner, child, owned = await kit.session.commit(both)
    assert child.owner == owner.id
    assert child.conversation_id == conv
    assert owned.owner == ConversationOwner(conv, owner.id)


async def test_r11_a_task_creating_a_child_in_its_finishing_commit_faults_as_completing(
    kits: Kits,
) -> None:
    async def greedy(task: TaskRecord, runtime: TaskRuntime) -> None:
        def fn(tx: Tx) -> Completed:
            tx.create_task(leaf, ownership=TaskOwned(task.id))
            return Completed("too late")

        await runtime.commit(fn)

    job = define("greedy", {"go": greedy})
    kit = await kits.open(job, leaf)
    task = await kit.create(job, conversation_id=await kit.conversation())
    final = await kit.finished(task.id)
    assert outcome_of(final)["status"] == "faulted"
    assert "is completing" in outcome_of(final)["error"]["message"]
    assert [r for c in kit.commits for r in c.tasks if r.owner == task.id] == []


# -- the ownership tree (R-1.7) --


async def test_r1_7_ordinary_owned_work_enters_owned_conversations_not_background_tasks(
    kits: Kits,
) -> None:
    kit = await kits.open(leaf)
    root = await kit.conversation()
    a = await kit.create(leaf, conversation_id=root)
    b = await kit.create(leaf, owner=a.id)
    c2 = await kit.conversation(owner_task=a.id)
    d = await kit.create(leaf, conversation_id=c2)
    e = await kit.create(leaf, conversation_id=c2, background=True)
    c3 = await kit.conversation(owner_task=e.id)
    f = await kit.create(leaf, conversation_id=c3)
    g = await kit.create(leaf, conversation_id=root, background=True)
    c4 = await kit.conversation(owner_task=b.id)
    h = await kit.create(leaf, conversation_id=c4)
    live = LiveIndex()  # the tree as the Session adopts it from publications
    for info in kit.commits:
        for conversation in info.conversations:
            live.add_conversation(conversation)
        for record in info.tasks:
            live.put_task(record)
    assert ordinary_owned_work(live, a.id) == sorted([b.id, d.id, h.id])
    assert ordinary_owned_work(live, e.id) == [f.id]
    assert ordinary_owned_work(live, g.id) == []
    assert conversation_busy_tasks(live, root) == sorted([a.id, b.id, d.id, h.id])
    assert conversation_busy_tasks(live, c3) == [f.id]


# -- completing holds (R53, R54, R55) --


async def test_r54_a_held_outcome_lands_its_other_writes_and_defers_the_terminal_ones(
    kits: Kits,
) -> None:
    gate = Gate()
    child = define("child", {"run": gated(gate, complete())})
    marks: dict[str, int] = {}

    async def finish(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.commit(create_owned(child, task.id))

        async def fn(tx: Tx) -> Completed:
            marks["entry"] = tx.append(task.conversation_id, "result", data="answer").id
            (await tx.doc(NOTE, task.conversation_id))["text"] = "written at the hold"
            (await tx.doc(TASK_NOTE, task.id))["text"] = "task doc"
            return Completed("parent")

        await runtime.commit(fn)

    parent = define("parent", {"finish": finish})
    kit = await kits.open(parent, child)
    conv = await kit.conversation()
    task = await kit.create(parent, conversation_id=conv)
    kit.session.resume()
    waiter = asyncio.ensure_future(kit.session.wait_for_task(task.id))
    await kit.status_is(task.id, "completing")
    assert await kit.storage.entry(marks["entry"]) is not None
    assert await kit.session.snapshot(NOTE, conv) == {"text": "written at the hold"}
    assert await kit.session.snapshot(TASK_NOTE, task.id) == {"text": "task doc"}
    await spin()
    assert not waiter.done()

    gate.open()
    final = await within(waiter)
    assert outcome_of(final) == {"status": "completed", "result": "parent"}
    assert await kit.session.snapshot(TASK_NOTE, task.id) is None


async def test_r53_a_hold_ends_only_when_work_created_after_it_drains_too(kits: Kits) -> None:
    first_gate, later_gate = Gate(), Gate()
    first = define("first", {"run": gated(first_gate, complete())})
    later = define("later", {"run": gated(later_gate, complete())})
    ids: dict[str, int] = {}

    async def finish(task: TaskRecord, runtime: TaskRuntime) -> None:
        owned = await runtime.commit(lambda tx: tx.create_conversation(TaskOwned(task.id)))
        ids["conv"] = owned.id

        def fn(tx: Tx) -> Completed:
            # Work created in the finishing commit, in a conversation the task owns,
            # holds it (R53: judged on the commit's candidate records).
            tx.create_task(first, ownership=ConversationOwned(), conversation_id=owned.id)
            return Completed("parent")

        await runtime.commit(fn)

    parent = define("parent", {"finish": finish})
    kit = await kits.open(parent, first, later)
    task = await kit.create(parent, conversation_id=await kit.conversation())
    kit.session.resume()
    await kit.status_is(task.id, "completing")
    await first_gate.wait_reached()
    extra = await kit.create(later, conversation_id=ids["conv"])
    first_gate.open()
    await later_gate.wait_reached()
    await spin()
    assert (await kit.task(task.id)).status == "completing"
    later_gate.open()
    final = await kit.finished(task.id)
    assert (await kit.task(extra.id)).status == "terminal"
    assert outcome_of(final) == {"status": "completed", "result": "parent"}
    assert not (await kit.task(extra.id)).abort_requested  # completed holds never cancel


async def test_r53_open_finishes_a_hold_whose_owned_work_drained_before_the_crash(
    kits: Kits,
) -> None:
    storage = CrashableStorage()
    conv = storage.mint_id()
    parent_id, child_id = storage.mint_id(), storage.mint_id()
    parent = TaskRecord(
        parent_id,
        conv,
        "parent",
        1,
        None,
        {"status": "completing", "outcome": {"status": "completed", "result": 1}},
    )
    child = TaskRecord(
        child_id,
        conv,
        "ghost",  # no definition anywhere: a hold never needs one to finish
        1,
        None,
        {"status": "terminal", "outcome": {"status": "completed", "result": None}},
        owner=parent_id,
    )
    await storage.commit(
        [PutConversation(ConversationRecord(conv)), PutTask(parent), PutTask(child)]
    )
    kit = await kits.open(storage=storage)
    final = await kit.task(parent_id)
    assert final.state == {
        "status": "terminal",
        "outcome": {"status": "completed", "result": 1},
    }
    assert await kit.scheduling() == "paused"


async def test_r55_a_held_failure_aborts_the_owned_work_in_a_later_commit_then_ends(
    kits: Kits,
) -> None:
    gate = Gate()
    child_aborted: list[bool] = []

    async def child_abort(task: TaskRecord, runtime: TaskRuntime) -> None:
        child_aborted.append(task.abort_requested)
        await runtime.commit(lambda tx: Failed("child cancelled"))

    child = define("child", {"run": gated(gate, complete())}, abort=child_abort)

    async def fail(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.commit(create_owned(child, task.id))
        await gate.wait_reached()
        await runtime.commit(lambda tx: Failed("parent failed"))

    parent = define("parent", {"fail": fail})
    kit = await kits.open(parent, child)
    task = await kit.create(parent, conversation_id=await kit.conversation())
    final = await kit.finished(task.id)
    assert outcome_of(final) == {"status": "failed", "error": {"message": "parent failed"}}
    assert final.abort_requested is False
    child_id = next(r.id for i in kit.commits for r in i.tasks if r.kind == "child")
    child_final = await kit.task(child_id)
    assert outcome_of(child_final) == {
        "status": "failed",
        "error": {"message": "child cancelled"},
    }
    assert child_aborted == [True]
    hold = next(
        i for i in kit.commits if any(r.id == task.id and r.status == "completing" for r in i.tasks)
    )
    assert all(not r.abort_requested for r in hold.tasks if r.id == child_id)


async def test_r54_a_held_scheduler_fault_writes_only_the_record_and_cleans_up_later(
    kits: Kits,
) -> None:
    gate = Gate()
    child = define("child", {"run": gated(gate, complete())})

    parent = crashing_parent(child)
    kit = await kits.open(parent, child)
    task = await kit.create(parent, conversation_id=await kit.conversation())
    kit.session.resume()
    held = await kit.status_is(task.id, "completing")
    assert outcome_of(held) == {"status": "faulted", "error": {"message": "parent broke"}}
    assert kit.hooks.outcomes == []  # cleanup waits for the final commit (R54)
    final = await kit.finished(task.id)
    ((_hook_task, hook_outcome, staged),) = [o for o in kit.hooks.outcomes if o[0] == task.id]
    assert hook_outcome == outcome_of(final)
    assert staged is not None
    assert staged.status == "terminal"
