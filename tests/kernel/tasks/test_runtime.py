"""Task runtimes: gated commits, the effect sandwich, memos, sleep, a runtime that ended.

Rules: R38 (gated runtime commits), R39 (effect sandwich), R40 (memos), R41
(sleep), R42 (a runtime after its invocation).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from pi_durable_tui.kernel import (
    Completed,
    Running,
    TaskGateClosed,
    TaskRuntime,
    Tx,
    Waiting,
)
from pi_durable_tui.storage.records import TaskRecord
from tests.kernel.task_support import (
    Gate,
    Kits,
    complete,
    create_owned,
    define,
    gated,
    outcome_of,
    spin,
    within,
)

# -- runtime commits (R38) --


async def test_r38_runtime_commit_lands_the_state_with_its_writes_and_stamps_entries(
    kits: Kits,
) -> None:
    entries: dict[str, int] = {}

    async def write(task: TaskRecord, runtime: TaskRuntime) -> None:
        def fn(tx: Tx) -> Running:
            entries["task"] = tx.append(task.conversation_id, "note", data="by task").id
            return Running({"phase": "end"})

        await runtime.commit(fn)

    job = define("job", {"write": write, "end": complete()})
    kit = await kits.open(job)
    conv = await kit.conversation()
    plain = await kit.session.commit(lambda tx: tx.append(conv, "note", data="by host"))
    task = await kit.create(job, conversation_id=conv)
    await kit.finished(task.id)
    stored = await kit.storage.entry(entries["task"])
    assert stored is not None
    assert stored.entry.by_task_id == task.id
    host = await kit.storage.entry(plain.id)
    assert host is not None
    assert host.entry.by_task_id is None
    landing = next(i for i in kit.commits if any(e.id == entries["task"] for e in i.entries))
    (record,) = landing.tasks
    assert record.state == {"status": "running", "checkpoint": {"phase": "end"}}


async def test_r38_runtime_commit_rejects_a_terminal_or_waiting_task_and_an_ended_run(
    kits: Kits,
) -> None:
    errors: list[str] = []
    kept: list[TaskRuntime] = []

    async def twice(task: TaskRecord, runtime: TaskRuntime) -> None:
        kept.append(runtime)
        final = task.kind == "ends"
        await runtime.commit(
            lambda tx: Completed() if final else Waiting(on=[], checkpoint={"phase": "after"})
        )
        try:
            await runtime.commit(lambda tx: Running({"phase": "x"}))
        except TaskGateClosed as error:
            errors.append(str(error))

    ends = define("ends", {"twice": twice})
    waits = define("waits", {"twice": twice, "after": complete()})
    kit = await kits.open(ends, waits)
    conv = await kit.conversation()
    a = await kit.create(ends, conversation_id=conv)
    b = await kit.create(waits, conversation_id=conv)
    await kit.finished(a.id)
    await kit.finished(b.id)
    assert sorted(errors) == sorted([f"Task {a.id} is terminal", f"Task {b.id} is waiting"])
    for runtime in kept:
        with pytest.raises(TaskGateClosed, match=f"Task {runtime.task_id} invocation has ended"):
            await runtime.commit(lambda tx: None)


async def test_r38_runtime_commit_of_a_run_invocation_rejects_a_durable_abort_mark(
    kits: Kits,
) -> None:
    gate = Gate()
    errors: list[str] = []

    async def stubborn(task: TaskRecord, runtime: TaskRuntime) -> None:
        with contextlib.suppress(asyncio.CancelledError):  # ignores the signal, carries on
            await gate.passage()
        try:
            await runtime.commit(lambda tx: Running({"phase": "more"}))
        except TaskGateClosed as error:
            errors.append(str(error))

    job = define("job", {"stubborn": stubborn, "more": complete()})
    kit = await kits.open(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    kit.session.resume()
    await gate.wait_reached()
    await kit.session.abort_task(task.id)  # joins the invocation
    assert errors == [f"Task {task.id} has a durable abort mark"]
    assert outcome_of(await kit.finished(task.id)) == {"status": "aborted", "reason": "stopped"}


# -- the effect sandwich (R39) --


async def test_r39_an_effect_runs_off_the_line_and_reopen_resumes_at_its_intent(kits: Kits) -> None:
    ledger: list[str] = []
    attempts: list[int] = []
    gate = Gate()
    side_commit: list[int] = []

    async def intent(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.commit(lambda tx: Running({"phase": "effect", "key": f"effect-{task.id}"}))

    async def effect(task: TaskRecord, runtime: TaskRuntime) -> None:
        key: str = task.state["checkpoint"]["key"]
        attempts.append(task.id)
        if key not in ledger:  # idempotent: the ledger says whether it already happened
            ledger.append(key)
        # Other commits go through while the effect runs: the phase holds no line.
        side = await kit.session.commit(lambda tx: tx.append(task.conversation_id, "side"))
        side_commit.append(side.id)
        if len(attempts) == 1:
            await gate.passage()  # the process "dies" here, before the outcome commit
        await runtime.commit(lambda tx: Completed(key))

    job = define("job", {"intent": intent, "effect": effect})
    kit = await kits.open(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    kit.session.resume()
    await gate.wait_reached()
    kit = await kits.reopen(kit)
    assert (await kit.task(task.id)).state == {
        "status": "pending",
        "checkpoint": {"phase": "effect", "key": f"effect-{task.id}"},
    }
    final = await kit.finished(task.id)
    assert outcome_of(final)["result"] == f"effect-{task.id}"
    assert attempts == [task.id, task.id]  # the intent phase ran again after reopen
    assert ledger == [f"effect-{task.id}"]  # and the effect itself happened once
    assert len(side_commit) == 2


# -- memos (R40) --


async def test_r40_memos_are_first_writer_wins_own_keys_and_survive_checkpoints(kits: Kits) -> None:
    seen: dict[str, Any] = {}

    async def first(task: TaskRecord, runtime: TaskRuntime) -> None:
        seen["absent"] = await runtime.memo("k")
        seen["stored"] = await runtime.memo("k", {"v": 1})
        seen["second"] = await runtime.memo("k", {"v": 2})
        seen["read"] = await runtime.memo("k")
        seen["inherited"] = [await runtime.memo(n) for n in ("keys", "__class__", "get")]
        seen["own"] = await runtime.memo("keys", "mine")
        await runtime.commit(lambda tx: Running({"phase": "second"}))

    async def second(task: TaskRecord, runtime: TaskRuntime) -> None:
        seen["after_checkpoint"] = (await runtime.memo("k"), task.memos)
        await runtime.commit(lambda tx: Completed())

    job = define("job", {"first": first, "second": second})
    kit = await kits.open(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    final = await kit.finished(task.id)
    assert seen["absent"] is None
    assert seen["stored"] == seen["second"] == seen["read"] == {"v": 1}
    assert seen["inherited"] == [None, None, None]
    assert seen["own"] == "mine"
    assert seen["after_checkpoint"] == ({"v": 1}, {"k": {"v": 1}, "keys": "mine"})
    assert final.memos is None
    assert "memos" not in final.to_json()
    assert "checkpoint" not in final.state


async def test_r40_concurrent_memo_callers_get_the_same_winner(kits: Kits) -> None:
    results: list[Any] = []

    async def race(task: TaskRecord, runtime: TaskRuntime) -> None:
        results.extend(
            await asyncio.gather(
                runtime.memo("k", "a"), runtime.memo("k", "b"), runtime.memo("k", "c")
            )
        )
        results.append((await kit.task(task.id)).memos)
        await runtime.commit(lambda tx: Completed())

    job = define("job", {"race": race})
    kit = await kits.open(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    await kit.finished(task.id)
    winner = results[0]
    assert results[:3] == [winner] * 3
    assert results[3] == {"k": winner}


async def test_r40_memos_vanish_when_the_task_holds_its_outcome(kits: Kits) -> None:
    gate = Gate()
    child = define("child", {"run": gated(gate, complete())})

    async def parent_phase(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.memo("m", 1)
        await runtime.commit(create_owned(child, task.id))
        await runtime.commit(lambda tx: Completed())

    parent = define("parent", {"p": parent_phase})
    kit = await kits.open(parent, child)
    conv = await kit.conversation()
    task = await kit.create(parent, conversation_id=conv)
    kit.session.resume()
    held = await kit.status_is(task.id, "completing")
    assert held.memos is None
    gate.open()
    await kit.finished(task.id)


# -- sleep (R41) --


async def test_r41_sleep_returns_once_the_clock_reaches_the_deadline(kits: Kits) -> None:
    woke: list[float] = []

    async def nap(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.sleep(kit.session.clock.now() + 1000)
        woke.append(kit.session.clock.now())
        await runtime.commit(lambda tx: Completed())

    job = define("job", {"nap": nap})
    kit = await kits.open(job)
    start = kit.clock.now()
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    kit.session.resume()
    await kit.status_is(task.id, "running")
    await spin()
    assert kit.clock.sleepers == 1
    kit.clock.advance(999)
    await spin()
    assert woke == []
    assert kit.clock.sleepers == 1
    kit.clock.advance(1)
    await kit.finished(task.id)
    assert woke == [start + 1000]


async def test_r41_sleep_rejects_once_signalled_even_in_a_helper_coroutine(kits: Kits) -> None:
    gate = Gate()
    helper: list[asyncio.Future[None]] = []

    async def work(task: TaskRecord, runtime: TaskRuntime) -> None:
        helper.append(asyncio.ensure_future(runtime.sleep(kit.session.clock.now() + 10**9)))
        await gate.passage()

    job = define("job", {"work": work})
    kit = await kits.open(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    kit.session.resume()
    await gate.wait_reached()
    await kit.session.abort_task(task.id)
    with pytest.raises(TaskGateClosed, match="invocation has ended"):
        await within(helper[0])


# -- a runtime after its invocation (R42) --


async def test_r42_every_runtime_operation_rejects_after_the_invocation_ended(kits: Kits) -> None:
    kept: list[TaskRuntime] = []

    async def work(task: TaskRecord, runtime: TaskRuntime) -> None:
        kept.append(runtime)
        await runtime.memo("m", 1)
        await runtime.commit(lambda tx: Waiting(on=[], checkpoint={"phase": "end"}))

    job = define("job", {"work": work, "end": complete()})
    kit = await kits.open(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    other = await kit.create(define("idle", {"x": complete()}), conversation_id=conv)
    await kit.finished(task.id)
    (runtime,) = kept
    assert runtime.aborted.is_set()  # the signal aborts when the invocation ends
    ended = f"Task {task.id} invocation has ended"
    with pytest.raises(TaskGateClosed, match=ended):
        await runtime.commit(lambda tx: None)
    with pytest.raises(TaskGateClosed, match=ended):
        await runtime.memo("m")
    with pytest.raises(TaskGateClosed, match=ended):
        await runtime.memo("m", 2)
    with pytest.raises(TaskGateClosed, match=ended):
        await runtime.sleep(0)
    with pytest.raises(TaskGateClosed, match=ended):
        await runtime.outcomes([task.id])
    with pytest.raises(TaskGateClosed, match=ended):
        await runtime.wait_for_task(other.id)
