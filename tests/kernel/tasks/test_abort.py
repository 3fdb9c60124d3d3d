"""Aborts: explicit aborts, bottom-up abort handlers, cascades, orphaning, idle waits.

Rules: R46 (``abort_task``), R47 (bottom-up), R48 (cascades), R49 (only an abort
orphans), R57 (``abort_conversation``), R58 (``wait_for_idle``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pi_durable_tui.kernel import (
    Aborted,
    Completed,
    Failed,
    TaskGateClosed,
    TaskNotFound,
    TaskOwned,
    TaskRuntime,
    Tx,
    Waiting,
)
from pi_durable_tui.storage.records import TaskRecord
from pi_durable_tui.storage.writes import PutTask
from tests.kernel.task_support import (
    Gate,
    Kit,
    Kits,
    abort_with,
    complete,
    create_owned,
    define,
    gated,
    goto,
    outcome_of,
    spin,
    within,
)

leaf = define("leaf", {"run": complete("leaf")})
ghost = define("ghost", {"run": complete()})  # never installed: its tasks are blocked


def abort_gated(gate: Gate, log: list[str] | None = None, name: str = "") -> Any:
    """An abort handler that logs, stops at ``gate``, then commits ``Aborted``."""

    async def abort(task: TaskRecord, runtime: TaskRuntime) -> None:
        if log is not None:
            log.append(f"abort {name}")
        await gate.passage()
        await runtime.commit(lambda tx: Aborted(name or "stopped"))

    return abort


def marks_in(kit: Kit, task_id: int) -> list[int]:
    """Return the indexes of commits that newly set the task's abort mark."""
    found = []
    previous = False
    for index, info in enumerate(kit.commits):
        for record in info.tasks:
            if record.id == task_id:
                if record.abort_requested and not previous:
                    found.append(index)
                previous = record.abort_requested
    return found


# -- abort_task (R46) --


async def test_r46_abort_task_rejects_an_unknown_task_and_calls_an_ended_one_terminal(
    kits: Kits,
) -> None:
    kit = await kits.open(leaf)
    with pytest.raises(TaskNotFound, match="Task 4242 does not exist"):
        await kit.session.abort_task(4242)
    task = await kit.create(leaf, conversation_id=await kit.conversation())
    final = await kit.finished(task.id)
    seq = kit.storage.last_seq
    assert await kit.session.abort_task(task.id) == "terminal"
    assert kit.storage.last_seq == seq
    assert (await kit.task(task.id)) == final


async def test_r46_abort_task_marks_then_signals_before_cancelling_then_joins(kits: Kits) -> None:
    gate = Gate()
    log: list[str] = []
    runtimes: list[TaskRuntime] = []

    async def work(task: TaskRecord, runtime: TaskRuntime) -> None:
        runtimes.append(runtime)
        try:
            await gate.passage()
        except asyncio.CancelledError:
            records = [r for c in kit.commits for r in c.tasks if r.id == task.id]
            marked = any(r.abort_requested for r in records)
            log.append(f"cancelled aborted={runtime.aborted.is_set()} marked={marked}")
            raise
        finally:
            log.append("phase left")

    job = define("job", {"work": work})
    kit = await kits.open(job)
    task = await kit.create(job, conversation_id=await kit.conversation())
    kit.session.resume()
    await gate.wait_reached()
    assert await kit.session.abort_task(task.id) == "marked"
    assert log == ["cancelled aborted=True marked=True", "phase left"]  # joined
    with pytest.raises(TaskGateClosed, match="invocation has ended"):
        await runtimes[0].memo("after")  # the run invocation is over
    assert outcome_of(await kit.finished(task.id)) == {"status": "aborted", "reason": "stopped"}


async def test_r46_an_abort_right_after_reservation_still_runs_the_abort_handler(
    kits: Kits,
) -> None:
    async def work(task: TaskRecord, runtime: TaskRuntime) -> None:
        await Gate().passage()

    job = define("job", {"work": work}, abort=abort_with("early"))
    kit = await kits.open(job)
    task = await kit.create(job, conversation_id=await kit.conversation())
    kit.session.resume()
    await kit.status_is(task.id, "running")  # resolved in the reservation's publication
    assert await kit.session.abort_task(task.id) == "marked"
    final = await kit.finished(task.id)
    assert outcome_of(final) == {"status": "aborted", "reason": "early"}


async def test_r46_abort_task_reports_terminal_for_a_task_that_ended_while_it_queued(
    kits: Kits,
) -> None:
    gate = Gate()
    job = define("job", {"run": gated(gate, complete(0))})
    kit = await kits.open(job)
    task = await kit.create(job, conversation_id=await kit.conversation())
    kit.session.resume()
    await gate.wait_reached()
    release = asyncio.Event()

    async def hold(tx: Tx) -> None:  # holds the line while the others queue behind it
        await release.wait()

    holder = asyncio.ensure_future(kit.session.commit(hold))
    await spin()
    gate.open()  # the phase's outcome commit queues first...
    await spin()
    aborting = asyncio.ensure_future(kit.session.abort_task(task.id))  # ...the mark after it
    await spin()
    release.set()
    await within(holder)
    assert await within(aborting) == "terminal"
    assert outcome_of(await kit.task(task.id)) == {"status": "completed", "result": 0}
    assert not (await kit.task(task.id)).abort_requested
    assert not any(r.abort_requested for c in kit.commits for r in c.tasks)  # no mark written


@pytest.mark.parametrize(("stored_version", "reason"), [(1, "missing_task"), (7, "task_too_old")])
async def test_r46_r49_an_untakeable_task_is_orphaned_by_the_marking_commit(
    stored_version: int, reason: str, kits: Kits
) -> None:
    kit = await kits.open(leaf)
    conv = await kit.conversation()
    if reason == "missing_task":
        task = await kit.create(ghost, conversation_id=conv)
    else:
        made = await kit.create(leaf, conversation_id=conv)
        task = TaskRecord(made.id, conv, "leaf", stored_version, None, made.state, memos={})
        await kit.storage.commit([PutTask(task)])  # stored by a newer program
        kit = await kits.reopen(kit)
    before = len(kit.commits)
    assert await kit.session.abort_task(task.id) == "marked"
    assert len(kit.commits) == before + 1  # one commit: the mark and the orphan
    final = await kit.task(task.id)
    assert final.state == {
        "status": "terminal",
        "outcome": {"status": "orphaned", "reason": reason},
    }
    assert final.abort_requested is True
    ((hook_id, hook_outcome, staged),) = kit.hooks.outcomes
    assert (hook_id, hook_outcome) == (task.id, {"status": "orphaned", "reason": reason})
    assert staged is not None
    assert staged.status == "terminal"


async def test_r49_a_blocked_task_is_orphaned_only_after_its_owned_work_drained(kits: Kits) -> None:
    gate = Gate()
    child = define("child", {"run": gated(gate, complete())}, abort=abort_with("child"))
    kit = await kits.open(child)
    conv = await kit.conversation()
    owner = await kit.create(ghost, conversation_id=conv)
    kid = await kit.create(child, owner=owner.id)
    kit.session.resume()
    await gate.wait_reached()
    assert await kit.session.abort_task(owner.id) == "marked"
    assert (await kit.task(owner.id)).status == "pending"
    final = await kit.finished(owner.id)
    assert outcome_of(final) == {"status": "orphaned", "reason": "missing_task"}
    assert outcome_of(await kit.task(kid.id)) == {"status": "aborted", "reason": "child"}
    assert [o[0] for o in kit.hooks.outcomes] == [owner.id]


async def test_r46_a_completing_task_is_only_marked_and_its_abort_handler_never_runs(
    kits: Kits,
) -> None:
    gate = Gate()
    aborts: list[int] = []
    child = define("child", {"run": gated(gate, complete())})

    async def abort(task: TaskRecord, runtime: TaskRuntime) -> None:
        aborts.append(task.id)
        await runtime.commit(lambda tx: Failed("should not run"))

    async def finish(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.commit(create_owned(child, task.id))
        await runtime.commit(lambda tx: Completed("held"))

    parent = define("parent", {"finish": finish}, abort=abort)
    kit = await kits.open(parent, child)
    task = await kit.create(parent, conversation_id=await kit.conversation())
    kit.session.resume()
    await kit.status_is(task.id, "completing")
    assert await kit.session.abort_task(task.id) == "marked"
    final = await kit.finished(task.id)
    assert final.state == {
        "status": "terminal",
        "outcome": {"status": "completed", "result": "held"},
    }
    assert final.abort_requested is True
    assert aborts == []


async def test_r46_explicit_abort_works_on_background_tasks(kits: Kits) -> None:
    gate = Gate()
    job = define("job", {"run": gated(gate, complete())})
    kit = await kits.open(job)
    task = await kit.create(job, conversation_id=await kit.conversation(), background=True)
    kit.session.resume()
    await gate.wait_reached()
    assert await kit.session.abort_task(task.id) == "marked"
    assert outcome_of(await kit.finished(task.id)) == {"status": "aborted", "reason": "stopped"}


# -- bottom-up (R47) --


async def test_r47_an_abort_handler_starts_after_its_owned_work_ended_and_sees_outcomes(
    kits: Kits,
) -> None:
    log: list[str] = []
    child_gate = Gate()
    ids: dict[str, int] = {}

    async def child_abort(task: TaskRecord, runtime: TaskRuntime) -> None:
        log.append("child abort")
        await child_gate.passage()
        await runtime.commit(lambda tx: Failed("child stopped"))

    child = define("child", {"run": gated(Gate(), complete())}, abort=child_abort)

    async def spawn(task: TaskRecord, runtime: TaskRuntime) -> None:
        def fn(tx: Tx) -> Waiting:
            made = tx.create_task(child, ownership=TaskOwned(task.id))
            ids["child"] = made.id
            return Waiting(on=[made.id], checkpoint={"phase": "never"})

        await runtime.commit(fn)

    async def parent_abort(task: TaskRecord, runtime: TaskRuntime) -> None:
        log.append("parent abort")
        seen = await runtime.outcomes([ids["child"]])
        await runtime.commit(lambda tx: Completed(seen))

    parent = define("parent", {"spawn": spawn, "never": complete()}, abort=parent_abort)
    kit = await kits.open(parent, child)
    task = await kit.create(parent, conversation_id=await kit.conversation())
    kit.session.resume()
    await kit.status_is(task.id, "waiting")
    await kit.session.abort_task(task.id)
    await child_gate.wait_reached()
    await spin()
    assert log == ["child abort"]
    child_gate.open()
    final = await kit.finished(task.id)
    assert log == ["child abort", "parent abort"]
    assert outcome_of(final)["result"] == [
        {"status": "failed", "error": {"message": "child stopped"}}
    ]


async def test_r47_an_abort_neither_awaits_nor_aborts_waited_tasks_it_does_not_own(
    kits: Kits,
) -> None:
    sibling_gate = Gate()
    sibling = define("sibling", {"run": gated(sibling_gate, complete("sibling"))})
    ids: dict[str, int] = {}

    async def wait_sibling(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.commit(lambda tx: Waiting(on=[ids["sibling"]], checkpoint={"phase": "x"}))

    waiter = define("waiter", {"wait": wait_sibling, "x": complete()})
    kit = await kits.open(waiter, sibling)
    conv = await kit.conversation()
    ids["sibling"] = (await kit.create(sibling, conversation_id=conv)).id
    task = await kit.create(waiter, conversation_id=conv)
    kit.session.resume()
    await kit.status_is(task.id, "waiting")
    await kit.session.abort_task(task.id)
    assert outcome_of(await kit.finished(task.id))["status"] == "aborted"
    assert (await kit.task(ids["sibling"])).abort_requested is False
    sibling_gate.open()
    assert outcome_of(await kit.finished(ids["sibling"]))["result"] == "sibling"


# -- cascades (R48) --


async def test_r48_a_cascade_marks_work_through_owned_conversations_in_a_later_commit(
    kits: Kits,
) -> None:
    gate = Gate()
    worker = define("worker", {"run": gated(gate, complete())}, abort=abort_with("cascaded"))
    kit = await kits.open(worker)
    root = await kit.conversation()
    owner = await kit.create(worker, conversation_id=root)
    owned = await kit.conversation(owner_task=owner.id)
    inner = await kit.create(worker, conversation_id=owned)
    grandchild = await kit.create(worker, owner=inner.id)
    deeper = await kit.conversation(owner_task=grandchild.id)
    kit.session.resume()
    await kit.status_is(grandchild.id, "running")
    await kit.session.abort_task(owner.id)
    for task_id in (owner.id, inner.id, grandchild.id):
        assert outcome_of(await kit.finished(task_id)) == {
            "status": "aborted",
            "reason": "cascaded",
        }
    (owner_mark,) = marks_in(kit, owner.id)
    (inner_mark,) = marks_in(kit, inner.id)
    (grandchild_mark,) = marks_in(kit, grandchild.id)
    assert owner_mark < inner_mark
    assert owner_mark < grandchild_mark
    assert [r.id for r in kit.commits[owner_mark].tasks] == [owner.id]
    reached = sorted({c for call in kit.hooks.cancelled for c in call})
    assert reached == sorted([owned, deeper])  # strictly below; not the root


async def test_r48_a_cascade_stops_at_a_background_task_which_keeps_running(kits: Kits) -> None:
    owner_abort_gate, background_gate = Gate(), Gate()
    owner_def = define(
        "owner", {"run": gated(Gate(), complete())}, abort=abort_gated(owner_abort_gate)
    )
    background_def = define(
        "background",
        {"first": gated(background_gate, goto("second")), "second": complete("bg done")},
    )
    below_gate = Gate()
    below = define("below", {"run": gated(below_gate, complete())})
    kit = await kits.open(owner_def, background_def, below)
    root = await kit.conversation()
    owner = await kit.create(owner_def, conversation_id=root)
    owned = await kit.conversation(owner_task=owner.id)
    bg = await kit.create(background_def, conversation_id=owned, background=True)
    bg_owned = await kit.conversation(owner_task=bg.id)
    under_bg = await kit.create(below, conversation_id=bg_owned)
    kit.session.resume()
    await background_gate.wait_reached()
    await kit.session.abort_task(owner.id)
    await owner_abort_gate.wait_reached()  # the owner is aborting and stays so
    background_gate.open()  # the background task steps while its owner aborts
    held = await kit.status_is(bg.id, "completing")  # its own owned work is still live
    assert outcome_of(held) == {"status": "completed", "result": "bg done"}
    assert held.abort_requested is False
    assert (await kit.task(under_bg.id)).abort_requested is False
    reached = {c for call in kit.hooks.cancelled for c in call}
    assert owned in reached
    assert bg_owned not in reached
    below_gate.open()
    await kit.finished(bg.id)
    owner_abort_gate.open()
    await kit.finished(owner.id)


async def test_r48_a_terminal_owner_never_cascades_to_work_created_after_it_ended(
    kits: Kits,
) -> None:
    async def fail(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.commit(lambda tx: Failed("owner failed"))

    owner_def = define("owner", {"fail": fail})
    kit = await kits.open(owner_def, leaf)
    root = await kit.conversation()
    owner = await kit.create(owner_def, conversation_id=root)
    owned = await kit.conversation(owner_task=owner.id)
    await kit.finished(owner.id)
    later = await kit.create(leaf, conversation_id=owned)
    final = await kit.finished(later.id)
    assert outcome_of(final) == {"status": "completed", "result": "leaf"}
    assert final.abort_requested is False


async def test_r48_work_created_later_below_an_aborting_owner_is_marked_too(kits: Kits) -> None:
    abort_gate = Gate()
    phases: list[int] = []

    async def run(task: TaskRecord, runtime: TaskRuntime) -> None:
        phases.append(task.id)
        await runtime.commit(lambda tx: Completed())

    late = define("late", {"run": run}, abort=abort_with("late"))
    owner_def = define("owner", {"run": gated(Gate(), complete())}, abort=abort_gated(abort_gate))
    kit = await kits.open(owner_def, late)
    root = await kit.conversation()
    owner = await kit.create(owner_def, conversation_id=root)
    owned = await kit.conversation(owner_task=owner.id)
    kit.session.resume()
    await kit.status_is(owner.id, "running")
    await kit.session.abort_task(owner.id)
    await abort_gate.wait_reached()
    newcomer = await kit.create(late, conversation_id=owned)
    final = await kit.finished(newcomer.id)
    assert outcome_of(final) == {"status": "aborted", "reason": "late"}
    assert final.abort_requested is True
    assert phases == []
    abort_gate.open()
    await kit.finished(owner.id)


# -- only an abort orphans (R49) --


async def test_r49_a_task_without_definition_stays_pending_until_an_abort_orphans_it(
    kits: Kits,
) -> None:
    kit = await kits.open(leaf)
    task = await kit.create(ghost, conversation_id=await kit.conversation())
    kit.session.resume()
    await spin()
    assert (await kit.task(task.id)).status == "pending"
    inspected = await kit.session.inspect()
    assert inspected["tasks"][0]["activity"] == {"blocked": {"reason": "missing_task"}}
    await kit.session.abort_task(task.id)
    assert outcome_of(await kit.task(task.id)) == {
        "status": "orphaned",
        "reason": "missing_task",
    }


# -- abort_conversation (R57) --


async def test_r57_abort_conversation_marks_ordinary_work_and_resolves_when_idle(
    kits: Kits,
) -> None:
    bg_gate = Gate()
    worker = define("worker", {"run": gated(Gate(), complete())})
    bg_def = define("bg", {"run": gated(bg_gate, complete("bg"))})
    kit = await kits.open(worker, bg_def)
    root = await kit.conversation()
    a = await kit.create(worker, conversation_id=root)
    owned = await kit.conversation(owner_task=a.id)
    d = await kit.create(worker, conversation_id=owned)
    bg = await kit.create(bg_def, conversation_id=root, background=True)
    kit.session.resume()
    await bg_gate.wait_reached()
    await within(kit.session.abort_conversation(root))
    assert (await kit.task(a.id)).status == "terminal"
    assert (await kit.task(d.id)).status == "terminal"
    marking = kit.commits[marks_in(kit, a.id)[0]]
    assert {r.id for r in marking.tasks} == {a.id, d.id}  # one commit marks them all
    # Handed to the harness once: the cascade does not withdraw them again.
    assert kit.hooks.cancelled == [sorted([root, owned])]
    still = await kit.task(bg.id)
    assert still.is_live
    assert not still.abort_requested
    bg_gate.open()
    assert outcome_of(await kit.finished(bg.id))["result"] == "bg"


async def test_r57_abort_conversation_with_background_marks_and_awaits_background_work(
    kits: Kits,
) -> None:
    bg_abort_gate = Gate()
    worker = define("worker", {"run": gated(Gate(), complete())})
    bg_def = define("bg", {"run": gated(Gate(), complete())}, abort=abort_gated(bg_abort_gate))
    newcomer_gate = Gate()
    newcomer_def = define("newcomer", {"run": gated(newcomer_gate, complete("new"))})
    kit = await kits.open(worker, bg_def, newcomer_def)
    root = await kit.conversation()
    a = await kit.create(worker, conversation_id=root)
    bg = await kit.create(bg_def, conversation_id=root, background=True)
    bg_owned = await kit.conversation(owner_task=bg.id)
    under = await kit.create(worker, conversation_id=bg_owned)
    kit.session.resume()
    await kit.status_is(under.id, "running")
    aborting = asyncio.ensure_future(kit.session.abort_conversation(root, background=True))
    await bg_abort_gate.wait_reached()
    newcomer = await kit.create(newcomer_def, conversation_id=root, background=True)
    await spin()
    assert not aborting.done()  # the marked background task is still live
    bg_abort_gate.open()
    await within(aborting)
    for task_id in (a.id, bg.id, under.id):
        record = await kit.task(task_id)
        assert record.status == "terminal"
        assert record.abort_requested
    assert sorted(kit.hooks.cancelled[0]) == sorted([root, bg_owned])
    fresh = await kit.task(newcomer.id)
    assert fresh.is_live
    assert not fresh.abort_requested
    newcomer_gate.open()
    await kit.finished(newcomer.id)


# -- wait_for_idle (R58) --


async def test_r58_wait_for_idle_of_a_conversation_ignores_background_work(kits: Kits) -> None:
    gate, bg_gate = Gate(), Gate()
    worker = define("worker", {"run": gated(gate, complete())})
    bg_def = define("bg", {"run": gated(bg_gate, complete())})
    kit = await kits.open(worker, bg_def)
    root = await kit.conversation()
    a = await kit.create(worker, conversation_id=root)
    await kit.create(bg_def, conversation_id=root, background=True)
    idle = asyncio.ensure_future(kit.session.wait_for_idle(root))
    await gate.wait_reached()
    await spin()
    assert not idle.done()
    gate.open()
    await within(idle)
    assert (await kit.task(a.id)).status == "terminal"
    bg_gate.open()


async def test_r58_session_idle_waits_for_root_work_but_not_below_background_tasks(
    kits: Kits,
) -> None:
    gate, bg_gate, under_gate = Gate(), Gate(), Gate()
    worker = define("worker", {"run": gated(gate, complete())})
    bg_def = define("bg", {"run": gated(bg_gate, complete())})
    under_def = define("under", {"run": gated(under_gate, complete())})
    kit = await kits.open(worker, bg_def, under_def)
    root = await kit.conversation()
    other_root = await kit.conversation()
    a = await kit.create(worker, conversation_id=other_root)
    bg = await kit.create(bg_def, conversation_id=root, background=True)
    bg_owned = await kit.conversation(owner_task=bg.id)
    await kit.create(under_def, conversation_id=bg_owned)
    idle = asyncio.ensure_future(kit.session.wait_for_idle())
    await gate.wait_reached()
    await under_gate.wait_reached()
    await spin()
    assert not idle.done()
    gate.open()
    await within(idle)
    assert (await kit.task(a.id)).status == "terminal"
    bg_gate.open()
    under_gate.open()


async def test_r58_blocked_tasks_keep_idle_waits_pending(kits: Kits) -> None:
    kit = await kits.open(leaf)
    root = await kit.conversation()
    task = await kit.create(ghost, conversation_id=root)
    conversation_idle = asyncio.ensure_future(kit.session.wait_for_idle(root))
    session_idle = asyncio.ensure_future(kit.session.wait_for_idle())
    await spin()
    assert not conversation_idle.done()
    assert not session_idle.done()
    await kit.session.abort_task(task.id)
    await within(asyncio.gather(conversation_idle, session_idle))


async def test_r58_cancelling_an_idle_wait_cancels_only_that_waiter(kits: Kits) -> None:
    gate = Gate()
    worker = define("worker", {"run": gated(gate, complete("done"))})
    kit = await kits.open(worker)
    root = await kit.conversation()
    task = await kit.create(worker, conversation_id=root)
    first = asyncio.ensure_future(kit.session.wait_for_idle(root))
    second = asyncio.ensure_future(kit.session.wait_for_idle(root))
    task_wait = asyncio.ensure_future(kit.session.wait_for_task(task.id))
    await gate.wait_reached()
    first.cancel()
    task_wait.cancel()
    await spin()
    assert not second.done()
    gate.open()
    await within(second)
    final = await kit.task(task.id)
    assert outcome_of(final) == {"status": "completed", "result": "done"}
    assert not final.abort_requested
    assert first.cancelled()
    assert task_wait.cancelled()
