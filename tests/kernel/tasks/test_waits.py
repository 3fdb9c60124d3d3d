"""Waits: parking on other tasks, wait validation, and fail-fast groups.

Rules: R51 (waiting, resuming, what a wait may name), R52 (``fail_fast``, and
``outcomes()``), R55 (a held task counts as live for waiters).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pi_durable_tui.kernel import (
    Completed,
    ConversationOwned,
    Failed,
    Running,
    TaskDefinition,
    TaskGateClosed,
    TaskOwned,
    TaskRuntime,
    Tx,
    Waiting,
)
from pi_durable_tui.storage.records import TaskRecord
from tests.kernel.task_support import (
    Gate,
    Kits,
    abort_with,
    complete,
    create_owned,
    define,
    gated,
    outcome_of,
    spin,
)

leaf = define("leaf", {"run": complete("leaf")})


def waiter_on(
    targets: Callable[[TaskRecord], Any],
    *,
    policy: Any = "all_settled",
    collect: bool = True,
    name: str = "waiter",
) -> TaskDefinition:
    """A task that waits on ``targets(task)``, then completes with their outcomes.

    ``targets`` and ``policy`` are loosely typed: some tests pass invalid ones.
    """

    async def wait(task: TaskRecord, runtime: TaskRuntime) -> None:
        on = targets(task)

        def park(tx: Tx) -> Waiting:
            return Waiting(on=on, policy=policy, checkpoint={"phase": "collect", "on": on})

        await runtime.commit(park)

    async def gather(task: TaskRecord, runtime: TaskRuntime) -> None:
        on = task.state["checkpoint"]["on"]
        outcomes = await runtime.outcomes(on) if collect else None
        await runtime.commit(lambda tx: Completed(outcomes))

    return define(name, {"wait": wait, "collect": gather})


def wait_fault(final: TaskRecord) -> str:
    outcome = outcome_of(final)
    assert outcome["status"] == "faulted", outcome
    return outcome["error"]["message"]


# -- waiting and resuming (R51) --


async def test_r51_a_waiting_task_resumes_at_its_checkpoint_once_all_of_on_is_terminal(
    kits: Kits,
) -> None:
    first_gate, second_gate = Gate(), Gate()
    first = define("first", {"run": gated(first_gate, complete(1))})
    second = define("second", {"run": gated(second_gate, complete(2))})
    ids: dict[str, int] = {}
    waiter = waiter_on(lambda task: [ids["second"], ids["first"]])
    kit = await kits.open(waiter, first, second)
    conv = await kit.conversation()
    ids["first"] = (await kit.create(first, conversation_id=conv)).id
    ids["second"] = (await kit.create(second, conversation_id=conv)).id
    task = await kit.create(waiter, conversation_id=conv)
    kit.session.resume()
    parked = await kit.status_is(task.id, "waiting")
    assert parked.state == {
        "status": "waiting",
        "checkpoint": {"phase": "collect", "on": [ids["second"], ids["first"]]},
        "on": [ids["second"], ids["first"]],
        "policy": "all_settled",
    }
    first_gate.open()
    await kit.finished(ids["first"])
    await spin()
    assert (await kit.task(task.id)).status == "waiting"
    second_gate.open()
    final = await kit.finished(task.id)
    assert outcome_of(final)["result"] == [
        {"status": "completed", "result": 2},
        {"status": "completed", "result": 1},
    ]


async def test_r51_a_wait_may_be_empty_or_name_tasks_that_are_already_terminal(kits: Kits) -> None:
    ids: dict[str, int] = {}
    on_done = waiter_on(lambda task: [ids["done"]], name="on-done")
    on_nothing = waiter_on(lambda task: [], name="on-nothing")
    kit = await kits.open(on_done, on_nothing, leaf)
    conv = await kit.conversation()
    ids["done"] = (await kit.create(leaf, conversation_id=conv)).id
    await kit.finished(ids["done"])
    a = await kit.create(on_done, conversation_id=conv)
    b = await kit.create(on_nothing, conversation_id=conv)
    assert outcome_of(await kit.finished(a.id))["result"] == [
        {"status": "completed", "result": "leaf"}
    ]
    assert outcome_of(await kit.finished(b.id))["result"] == []


async def test_r51_a_wait_on_a_missing_task_faults_the_waiter(kits: Kits) -> None:
    waiter = waiter_on(lambda task: [987654])
    kit = await kits.open(waiter)
    task = await kit.create(waiter, conversation_id=await kit.conversation())
    assert "Task 987654 does not exist" in wait_fault(await kit.finished(task.id))


async def test_r51_a_wait_needs_integer_task_ids_and_a_known_policy(kits: Kits) -> None:
    bad_ids = waiter_on(lambda task: ["3", True], name="bad-ids")
    bad_policy = waiter_on(lambda task: [], policy="any", name="bad-policy")
    kit = await kits.open(bad_ids, bad_policy)
    conv = await kit.conversation()
    a = await kit.create(bad_ids, conversation_id=conv)
    b = await kit.create(bad_policy, conversation_id=conv)
    assert wait_fault(await kit.finished(a.id)) == f"Task {a.id} must wait on a list of task IDs"
    assert "wait policy must be all_settled or fail_fast" in wait_fault(await kit.finished(b.id))


async def test_r51_a_task_waiting_on_itself_faults_as_a_wait_cycle(kits: Kits) -> None:
    waiter = waiter_on(lambda task: [task.id])
    kit = await kits.open(waiter)
    task = await kit.create(waiter, conversation_id=await kit.conversation())
    assert wait_fault(await kit.finished(task.id)) == f"Task {task.id} cannot close a wait cycle"


async def test_r51_a_wait_closing_a_cycle_faults_and_the_other_waiter_resumes(kits: Kits) -> None:
    ids: dict[str, int] = {}
    a_def = waiter_on(lambda task: [ids["b"]], name="a")
    gate = Gate()

    async def wait_on_a(task: TaskRecord, runtime: TaskRuntime) -> None:
        await gate.passage()
        await runtime.commit(lambda tx: Waiting(on=[ids["a"]], checkpoint={"phase": "never"}))

    b_def = define("b", {"wait": wait_on_a, "never": complete()})
    kit = await kits.open(a_def, b_def)
    conv = await kit.conversation()
    ids["b"] = (await kit.create(b_def, conversation_id=conv)).id
    ids["a"] = (await kit.create(a_def, conversation_id=conv)).id
    kit.session.resume()
    await kit.status_is(ids["a"], "waiting")
    gate.open()
    b_final = await kit.finished(ids["b"])
    assert wait_fault(b_final) == f"Task {ids['b']} cannot close a wait cycle"
    a_final = await kit.finished(ids["a"])
    assert outcome_of(a_final)["result"] == [outcome_of(b_final)]


async def test_r51_a_task_cannot_wait_on_a_task_on_its_own_owner_chain(kits: Kits) -> None:
    ids: dict[str, int] = {}
    child_def = waiter_on(lambda task: [ids["parent"]], name="child")
    in_owned_def = waiter_on(lambda task: [ids["parent"]], name="in-owned")

    async def spawn(task: TaskRecord, runtime: TaskRuntime) -> None:
        def fn(tx: Tx) -> Waiting:
            child = tx.create_task(child_def, ownership=TaskOwned(task.id))
            owned = tx.create_conversation(TaskOwned(task.id))
            other = tx.create_task(
                in_owned_def, ownership=ConversationOwned(), conversation_id=owned.id
            )
            ids.update(child=child.id, other=other.id)
            return Waiting(on=[child.id, other.id], checkpoint={"phase": "done"})

        await runtime.commit(fn)

    parent = define("parent", {"spawn": spawn, "done": complete("parent")})
    kit = await kits.open(parent, child_def, in_owned_def)
    task = await kit.create(parent, conversation_id=await kit.conversation())
    ids["parent"] = task.id
    assert outcome_of(await kit.finished(task.id))["result"] == "parent"
    for name in ("child", "other"):
        final = await kit.task(ids[name])
        assert wait_fault(final) == f"Task {ids[name]} cannot close a wait cycle"


async def test_r51_fail_fast_is_refused_on_tasks_the_waiter_does_not_own(kits: Kits) -> None:
    ids: dict[str, int] = {}
    waiter = waiter_on(lambda task: [ids["sibling"]], policy="fail_fast")
    gate = Gate()
    sibling = define("sibling", {"run": gated(gate, complete())})
    kit = await kits.open(waiter, sibling)
    conv = await kit.conversation()
    ids["sibling"] = (await kit.create(sibling, conversation_id=conv)).id
    task = await kit.create(waiter, conversation_id=conv)
    assert wait_fault(await kit.finished(task.id)) == (
        f"Task {task.id} can wait failFast only on tasks it owns"
    )
    gate.open()


async def test_r51_a_background_task_may_wait_on_the_owner_of_its_conversation(kits: Kits) -> None:
    ids: dict[str, int] = {}
    gate = Gate()
    background = waiter_on(lambda task: [ids["owner"]], name="background")

    async def own(task: TaskRecord, runtime: TaskRuntime) -> None:
        def fn(tx: Tx) -> Running:
            owned = tx.create_conversation(TaskOwned(task.id))
            made = tx.create_task(
                background, ownership=ConversationOwned(), conversation_id=owned.id, background=True
            )
            ids["background"] = made.id
            return Running({"phase": "finish"})

        await runtime.commit(fn)

    owner = define("owner", {"own": own, "finish": gated(gate, complete("owner"))})
    kit = await kits.open(owner, background)
    task = await kit.create(owner, conversation_id=await kit.conversation())
    ids["owner"] = task.id
    kit.session.resume()
    await gate.wait_reached()
    parked = await kit.status_is(ids["background"], "waiting")
    assert parked.state["on"] == [task.id]
    gate.open()
    final = await kit.finished(task.id)  # no hold edge: the background task is no owned work
    assert outcome_of(final)["result"] == "owner"
    waited = await kit.finished(ids["background"])
    assert outcome_of(waited)["result"] == [outcome_of(final)]


# -- fail_fast (R52) --


async def test_r52_fail_fast_marks_other_members_in_a_later_commit_keeping_the_failure(
    kits: Kits,
) -> None:
    gates = {name: Gate() for name in ("b", "c", "outside")}
    ids: dict[str, int] = {}

    async def fail(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.commit(lambda tx: Failed("first failed"))

    failing = define("failing", {"run": fail})
    slow = {
        name: define(name, {"run": gated(gates[name], complete(name))}, abort=abort_with(name))
        for name in ("b", "c", "outside")
    }

    async def spawn(task: TaskRecord, runtime: TaskRuntime) -> None:
        def fn(tx: Tx) -> Waiting:
            for name, definition in (("a", failing), *slow.items()):
                ids[name] = tx.create_task(definition, ownership=TaskOwned(task.id)).id
            on = [ids["a"], ids["b"], ids["c"]]
            return Waiting(on=on, policy="fail_fast", checkpoint={"phase": "collect"})

        await runtime.commit(fn)

    async def collect(task: TaskRecord, runtime: TaskRuntime) -> None:
        outcomes = await runtime.outcomes([ids["a"], ids["b"], ids["c"]])
        await runtime.commit(lambda tx: Completed(outcomes))

    parent = define("parent", {"spawn": spawn, "collect": collect})
    kit = await kits.open(parent, failing, *slow.values())
    task = await kit.create(parent, conversation_id=await kit.conversation())
    kit.session.resume()
    held = await kit.status_is(task.id, "completing", "terminal")
    assert outcome_of(held)["result"] == [
        {"status": "failed", "error": {"message": "first failed"}},
        {"status": "aborted", "reason": "b"},
        {"status": "aborted", "reason": "c"},
    ]
    failure = await kit.task(ids["a"])
    assert not failure.abort_requested
    assert not (await kit.task(task.id)).abort_requested
    assert not (await kit.task(ids["outside"])).abort_requested
    failing_commit = next(
        i
        for i, info in enumerate(kit.commits)
        for r in info.tasks
        if r.id == ids["a"] and not r.is_live
    )
    for name in ("b", "c"):
        mark = next(
            i
            for i, info in enumerate(kit.commits)
            for r in info.tasks
            if r.id == ids[name] and r.abort_requested
        )
        assert mark > failing_commit
    gates["outside"].open()
    await kit.finished(task.id)


async def test_r52_r55_a_member_holding_a_failure_triggers_fail_fast_before_it_ends(
    kits: Kits,
) -> None:
    hold_gate, sibling_gate = Gate(), Gate()
    ids: dict[str, int] = {}
    grandchild = define("grandchild", {"run": gated(hold_gate, complete())})

    async def fail_holding(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.commit(create_owned(grandchild, task.id))
        await hold_gate.wait_reached()
        await runtime.commit(lambda tx: Failed("held failure"))

    holder = define("holder", {"run": fail_holding})
    sibling = define("sibling", {"run": gated(sibling_gate, complete())})

    async def spawn(task: TaskRecord, runtime: TaskRuntime) -> None:
        def fn(tx: Tx) -> Waiting:
            ids["holder"] = tx.create_task(holder, ownership=TaskOwned(task.id)).id
            ids["sibling"] = tx.create_task(sibling, ownership=TaskOwned(task.id)).id
            on = [ids["holder"], ids["sibling"]]
            return Waiting(on=on, policy="fail_fast", checkpoint={"phase": "done"})

        await runtime.commit(fn)

    parent = define("parent", {"spawn": spawn, "done": complete()})
    kit = await kits.open(parent, holder, sibling, grandchild)
    task = await kit.create(parent, conversation_id=await kit.conversation())
    kit.session.resume()
    await sibling_gate.wait_reached()
    await kit.status_is(ids["holder"], "completing")
    sibling_final = await kit.finished(ids["sibling"])  # marked while the failure is held
    assert outcome_of(sibling_final) == {"status": "aborted", "reason": "stopped"}
    # The held failure is cancellation intent: its own child is aborted too (R55).
    final = await kit.finished(task.id)
    assert outcome_of(await kit.task(ids["holder"])) == {
        "status": "failed",
        "error": {"message": "held failure"},
    }
    assert outcome_of(final)["status"] == "completed"


async def test_r52_a_held_completed_member_is_marked_too_so_its_owned_work_is_aborted(
    kits: Kits,
) -> None:
    fail_gate, grandchild_gate = Gate(), Gate()
    ids: dict[str, int] = {}
    grandchild = define(
        "grandchild", {"run": gated(grandchild_gate, complete())}, abort=abort_with("grand")
    )

    async def hold(task: TaskRecord, runtime: TaskRuntime) -> None:
        def spawn_grandchild(tx: Tx) -> None:
            ids["grandchild"] = tx.create_task(grandchild, ownership=TaskOwned(task.id)).id

        await runtime.commit(spawn_grandchild)
        await runtime.commit(lambda tx: Completed("held ok"))

    holder = define("holder", {"run": hold})

    async def fail(task: TaskRecord, runtime: TaskRuntime) -> None:
        await fail_gate.passage()
        await runtime.commit(lambda tx: Failed("late failure"))

    failing = define("failing", {"run": fail})

    async def spawn(task: TaskRecord, runtime: TaskRuntime) -> None:
        def fn(tx: Tx) -> Waiting:
            ids["holder"] = tx.create_task(holder, ownership=TaskOwned(task.id)).id
            ids["failing"] = tx.create_task(failing, ownership=TaskOwned(task.id)).id
            on = [ids["failing"], ids["holder"]]
            return Waiting(on=on, policy="fail_fast", checkpoint={"phase": "done"})

        await runtime.commit(fn)

    parent = define("parent", {"spawn": spawn, "done": complete()})
    kit = await kits.open(parent, holder, failing, grandchild)
    task = await kit.create(parent, conversation_id=await kit.conversation())
    kit.session.resume()
    await grandchild_gate.wait_reached()
    await kit.status_is(ids["holder"], "completing")
    fail_gate.open()
    await kit.finished(task.id)
    held = await kit.task(ids["holder"])
    assert held.abort_requested  # marked while it held its outcome
    assert outcome_of(held) == {"status": "completed", "result": "held ok"}
    assert outcome_of(await kit.task(ids["grandchild"])) == {
        "status": "aborted",
        "reason": "grand",
    }
    assert not (await kit.task(ids["failing"])).abort_requested


async def test_r52_outcomes_rejects_a_live_task_as_not_terminal(kits: Kits) -> None:
    gate = Gate()
    errors: list[str] = []
    ids: dict[str, int] = {}
    slow = define("slow", {"run": gated(gate, complete())})

    async def peek(task: TaskRecord, runtime: TaskRuntime) -> None:
        try:
            await runtime.outcomes([ids["slow"]])
        except TaskGateClosed as error:
            errors.append(str(error))
        await runtime.commit(lambda tx: Completed())

    peeker = define("peeker", {"peek": peek})
    kit = await kits.open(peeker, slow)
    conv = await kit.conversation()
    ids["slow"] = (await kit.create(slow, conversation_id=conv)).id
    task = await kit.create(peeker, conversation_id=conv)
    await kit.finished(task.id)
    assert errors == [f"Task {ids['slow']} is not terminal"]
    gate.open()
