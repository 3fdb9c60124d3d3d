"""Continuations: a waiting task's next step run in the commit that ends its wait (issue 14).

A waiter offers a builder (``offer_continuation``); the task whose commit ends
the wait builds the step before that commit (``continuation``) and passes it as
``then``: the waiter then moves on in that same commit, or, when the wait does
not end there or the waiter may not run now (an abort mark, R47), the step does
not run and the waiter resumes at its checkpoint as before (R51).
"""

from __future__ import annotations

from typing import Any

from pi_durable_tui.kernel import (
    CommitInfo,
    Completed,
    Continuation,
    TaskDefinition,
    TaskRuntime,
    Tx,
    Waiting,
)
from pi_durable_tui.storage.records import TaskRecord
from tests.kernel.task_support import Gate, Kit, Kits, define, gated, outcome_of

DEFINITIONS: dict[str, TaskDefinition] = {}


async def offer_step(record: TaskRecord, note: str) -> Continuation:
    """The waiter's builder: a step completing it with what the ending task passed."""

    def step(tx: Tx) -> Completed:
        return Completed({"by": "step", "note": note})

    return Continuation(record.id, DEFINITIONS["waiter"], step)


async def park(task: TaskRecord, runtime: TaskRuntime) -> None:
    assert isinstance(task.input, dict)
    on = list(task.input["on"])
    runtime.offer_continuation(offer_step)
    await runtime.commit(lambda tx: Waiting(on=on, checkpoint={"phase": "resume"}))


async def resume(task: TaskRecord, runtime: TaskRuntime) -> None:
    await runtime.commit(lambda tx: Completed({"by": "phase"}))


async def end_with_step(task: TaskRecord, runtime: TaskRuntime) -> None:
    then = await runtime.continuation(f"from {task.id}")
    await runtime.commit(lambda tx: Completed(task.id), then=then)


def definitions(gate: Gate) -> tuple[TaskDefinition, TaskDefinition]:
    waiter = define("waiter", {"park": park, "resume": resume})
    DEFINITIONS["waiter"] = waiter
    leaf = define("leaf", {"run": gated(gate, end_with_step)})
    return waiter, leaf


def stored_commits(kit: Kit) -> list[CommitInfo]:
    commits: list[CommitInfo] = []
    kit.session.subscribe(lambda info: commits.append(info) if info.stored else None)
    return commits


async def start(kit: Kit, waiter: TaskDefinition, leaf: TaskDefinition, leaves: int) -> Any:
    conversation = await kit.conversation()
    ids = [(await kit.create(leaf, conversation_id=conversation)).id for _ in range(leaves)]
    parked = await kit.create(waiter, {"on": ids}, conversation_id=conversation)
    kit.session.resume()
    await kit.status_is(parked.id, "waiting")
    return parked.id, ids


async def test_the_commit_that_ends_the_wait_also_runs_the_waiters_step(kits: Kits) -> None:
    gate = Gate()
    waiter, leaf = definitions(gate)
    kit = await kits.open(waiter, leaf)
    waiter_id, (leaf_id,) = await start(kit, waiter, leaf, 1)
    commits = stored_commits(kit)

    gate.open()
    final = await kit.finished(waiter_id)

    assert outcome_of(final)["result"] == {"by": "step", "note": f"from {leaf_id}"}
    ending = [c for c in commits if any(t.id == leaf_id and not t.is_live for t in c.tasks)]
    assert len(ending) == 1
    assert {t.id for t in ending[0].tasks if not t.is_live} == {leaf_id, waiter_id}


async def test_a_task_that_does_not_end_the_wait_gets_no_step_the_last_one_does_r51(
    kits: Kits,
) -> None:
    first_gate, second_gate = Gate(), Gate()
    waiter, leaf = definitions(first_gate)
    other = define("other", {"run": gated(second_gate, end_with_step)})
    kit = await kits.open(waiter, leaf, other)
    conversation = await kit.conversation()
    first = (await kit.create(leaf, conversation_id=conversation)).id
    second = (await kit.create(other, conversation_id=conversation)).id
    parked = await kit.create(waiter, {"on": [first, second]}, conversation_id=conversation)
    kit.session.resume()
    await kit.status_is(parked.id, "waiting")

    first_gate.open()
    await kit.finished(first)
    assert (await kit.task(parked.id)).status == "waiting"
    second_gate.open()
    final = await kit.finished(parked.id)

    assert outcome_of(final)["result"] == {"by": "step", "note": f"from {second}"}


async def test_an_abort_marked_waiter_is_not_moved_by_a_step_r47(kits: Kits) -> None:
    gate = Gate()
    waiter, leaf = definitions(gate)
    kit = await kits.open(waiter, leaf)
    waiter_id, (leaf_id,) = await start(kit, waiter, leaf, 1)
    await gate.wait_reached()

    assert await kit.session.abort_task(waiter_id) == "marked"
    gate.open()
    await kit.finished(leaf_id)
    final = await kit.finished(waiter_id)

    assert outcome_of(final)["status"] == "aborted"


async def test_without_an_offer_the_waiter_resumes_at_its_checkpoint_in_its_own_commit(
    kits: Kits,
) -> None:
    gate = Gate()
    waiter, leaf = definitions(gate)
    kit = await kits.open(waiter, leaf)
    waiter_id, _ids = await start(kit, waiter, leaf, 1)
    reopened = await kits.reopen(kit)  # offers live in memory: a new process has none
    reopened.session.resume()
    gate.open()

    final = await reopened.finished(waiter_id)

    assert outcome_of(final)["result"] == {"by": "phase"}
