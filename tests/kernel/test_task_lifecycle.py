"""Task lifecycle: definitions, reservation, steps, runtime commits, memos, sleep, ends.

Rules: R36 (reservation), R37 (steps), R38 (gated runtime commits), R39 (effect
sandwich), R40 (memos), R41 (sleep), R42 (a runtime after its invocation), R43
(abort handlers), R56 (terminal transition), R23 (what starts scheduling).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from pi_durable_tui.kernel import (
    Completed,
    ConversationOwned,
    Failed,
    Running,
    SessionClosed,
    TaskGateClosed,
    TaskOwned,
    TaskRuntime,
    Tx,
    Waiting,
    define_doc,
    define_task,
)
from pi_durable_tui.kernel.errors import OwnershipRejected
from pi_durable_tui.kernel.publication import CommitInfo
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.records import TaskRecord
from tests.kernel.task_support import (
    Gate,
    RecordingHooks,
    abandon_without_closing_and_reopen,
    abort_with,
    complete,
    define,
    gated,
    goto,
    open_kit,
    outcome_of,
    spin,
    within,
)

# -- definitions (R-1.6) --


def test_r1_6_define_task_rejects_an_empty_name_a_bad_version_and_no_phases() -> None:
    phases = {"a": complete()}
    with pytest.raises(ValueError, match="non-empty"):
        define_task("", initial=lambda i: {"phase": "a"}, phases=phases, abort=abort_with())
    for version in (0, -1, True):
        with pytest.raises(ValueError, match="positive integer"):
            define_task(
                "t",
                initial=lambda i: {"phase": "a"},
                phases=phases,
                abort=abort_with(),
                version=version,  # type: ignore[arg-type]
            )
    with pytest.raises(ValueError, match="at least one phase"):
        define_task("t", initial=lambda i: {"phase": "a"}, phases={}, abort=abort_with())


async def test_r1_6_a_new_task_is_pending_at_the_checkpoint_initial_returns() -> None:
    job = define_task(
        "job",
        initial=lambda i: {"phase": "a", "n": i["n"]},  # type: ignore[index,call-overload]
        phases={"a": complete()},
        abort=abort_with(),
    )
    kit = await open_kit(job)
    try:
        conv = await kit.conversation()
        record = await kit.create(job, {"n": 3}, conversation_id=conv)
        assert record.state == {"status": "pending", "checkpoint": {"phase": "a", "n": 3}}
        assert (record.kind, record.version, record.input) == ("job", 1, {"n": 3})
        assert record.memos == {}
        assert record.started_at is None
    finally:
        await kit.close()


# -- reservation (R36) --


async def test_r36_one_reservation_commit_moves_ready_tasks_to_running_before_code_runs() -> None:
    ran: list[str] = []

    async def work(task: TaskRecord, runtime: TaskRuntime) -> None:
        ran.append(task.status)
        await runtime.commit(lambda tx: Completed(task.id))

    job = define("job", {"work": work})
    kit = await open_kit(job)
    try:
        conv = await kit.conversation()
        a = await kit.create(job, conversation_id=conv)
        b = await kit.create(job, conversation_id=conv)
        seen: list[tuple[CommitInfo, int]] = []
        kit.session.subscribe(lambda info: seen.append((info, len(ran))))
        kit.clock.advance(5)
        await kit.finished(a.id)
        await kit.finished(b.id)

        reservation, ran_before = seen[0]
        assert {r.id: r.status for r in reservation.tasks} == {a.id: "running", b.id: "running"}
        assert ran_before == 0  # the reservation ran no user code
        assert all(r.started_at == kit.clock.now() for r in reservation.tasks)
        assert ran == ["running", "running"]  # phases receive the reserved record
    finally:
        await kit.close()


# -- one invocation and its steps (R37) --


async def test_r37_one_invocation_runs_the_phases_in_checkpoint_order() -> None:
    order: list[str] = []
    runtimes: list[TaskRuntime] = []

    def phase(name: str, then: Any) -> Any:
        async def run(task: TaskRecord, runtime: TaskRuntime) -> None:
            order.append(name)
            runtimes.append(runtime)
            await runtime.commit(lambda tx: then)

        return run

    job = define(
        "job",
        {
            "c": phase("c", Completed("done")),
            "a": phase("a", Running({"phase": "b"})),
            "b": phase("b", Running({"phase": "c"})),
        },
        first="a",
    )
    kit = await open_kit(job)
    try:
        conv = await kit.conversation()
        task = await kit.create(job, conversation_id=conv)
        final = await kit.finished(task.id)
        assert order == ["a", "b", "c"]
        assert len({id(r) for r in runtimes}) == 1  # one invocation
        assert outcome_of(final) == {"status": "completed", "result": "done"}
    finally:
        await kit.close()


async def test_r37_a_wait_stops_the_invocation_and_a_fresh_one_resumes_at_its_checkpoint() -> None:
    runtimes: dict[str, TaskRuntime] = {}

    async def park(task: TaskRecord, runtime: TaskRuntime) -> None:
        runtimes["park"] = runtime
        await runtime.commit(lambda tx: Waiting(on=[], checkpoint={"phase": "resume"}))

    async def resume(task: TaskRecord, runtime: TaskRuntime) -> None:
        runtimes["resume"] = runtime
        await runtime.commit(lambda tx: Completed(task.state["checkpoint"]))

    job = define("job", {"park": park, "resume": resume})
    kit = await open_kit(job)
    try:
        conv = await kit.conversation()
        task = await kit.create(job, conversation_id=conv)
        final = await kit.finished(task.id)
        assert outcome_of(final)["result"] == {"phase": "resume"}
        assert runtimes["park"] is not runtimes["resume"]
        statuses = [r.status for info in kit.commits for r in info.tasks if r.id == task.id]
        assert statuses == ["pending", "running", "waiting", "running", "terminal"]
    finally:
        await kit.close()


async def test_r37_a_committed_outcome_stops_the_invocation_without_a_fault() -> None:
    later: list[str] = []

    async def finish(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.commit(lambda tx: Failed("no luck", detail={"code": 7}))

    async def never(task: TaskRecord, runtime: TaskRuntime) -> None:
        later.append("ran")

    job = define("job", {"finish": finish, "never": never})
    kit = await open_kit(job)
    try:
        conv = await kit.conversation()
        task = await kit.create(job, conversation_id=conv)
        final = await kit.finished(task.id)
        assert outcome_of(final) == {
            "status": "failed",
            "error": {"message": "no luck", "detail": {"code": 7}},
        }
        assert later == []
    finally:
        await kit.close()


async def test_r37_a_held_outcome_stops_the_invocation_until_owned_work_drains() -> None:
    child_gate = Gate()
    phases_run: list[str] = []

    async def spawn(task: TaskRecord, runtime: TaskRuntime) -> None:
        phases_run.append("spawn")
        await runtime.commit(
            lambda tx: tx.create_task(CHILD, ownership=TaskOwned(runtime.task_id)) and None
        )
        await runtime.commit(lambda tx: Running({"phase": "finish"}))

    async def finish(task: TaskRecord, runtime: TaskRuntime) -> None:
        phases_run.append("finish")
        await runtime.commit(lambda tx: Completed("parent"))

    CHILD = define("child", {"run": gated(child_gate, complete("child"))})
    parent = define("parent", {"spawn": spawn, "finish": finish})
    kit = await open_kit(parent, CHILD)
    try:
        conv = await kit.conversation()
        task = await kit.create(parent, conversation_id=conv)
        kit.session.resume()
        held = await kit.status_is(task.id, "completing")
        assert held.state == {
            "status": "completing",
            "outcome": {"status": "completed", "result": "parent"},
        }
        await spin()
        assert phases_run == ["spawn", "finish"]
        assert task.id not in kit.session.scheduler.invocations
        child_gate.open()
        final = await kit.finished(task.id)
        assert outcome_of(final) == {"status": "completed", "result": "parent"}
    finally:
        await kit.close()


async def test_r37_closing_stops_at_the_next_step_and_keeps_checkpoint_and_memos() -> None:
    gate = Gate()
    later: list[str] = []

    async def first(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.memo("kept", 1)
        await runtime.commit(lambda tx: Running({"phase": "second"}))
        # Ignore the signal: the step must still stop for the closing Session.
        with contextlib.suppress(asyncio.CancelledError):
            await gate.passage()

    async def second(task: TaskRecord, runtime: TaskRuntime) -> None:
        later.append("second")

    job = define("job", {"first": first, "second": second})
    kit = await open_kit(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    kit.session.resume()
    await gate.wait_reached()
    commits_before_close = len(kit.commits)
    await kit.close()

    assert later == []
    assert len(kit.commits) == commits_before_close  # close writes nothing (R27)
    record = kit.session.live.task(task.id)
    assert record is not None
    assert record.state == {"status": "running", "checkpoint": {"phase": "second"}}
    assert record.memos == {"kept": 1}


async def test_r37_an_abort_mark_ends_the_run_invocation_and_a_fresh_one_aborts() -> None:
    gate = Gate()
    observed: dict[str, Any] = {}

    async def work(task: TaskRecord, runtime: TaskRuntime) -> None:
        observed["run"] = runtime
        try:
            await gate.passage()
        except asyncio.CancelledError:
            observed["aborted_when_cancelled"] = runtime.aborted.is_set()
            raise

    async def abort(task: TaskRecord, runtime: TaskRuntime) -> None:
        observed["abort"] = runtime
        observed["abort_sees"] = (task.status, task.abort_requested)
        await runtime.commit(lambda tx: Completed("cleaned up"))

    job = define("job", {"work": work}, abort=abort)
    kit = await open_kit(job)
    try:
        conv = await kit.conversation()
        task = await kit.create(job, conversation_id=conv)
        kit.session.resume()
        await gate.wait_reached()
        assert await kit.session.abort_task(task.id) == "marked"
        assert observed["aborted_when_cancelled"] is True
        final = await kit.finished(task.id)
        assert outcome_of(final) == {"status": "completed", "result": "cleaned up"}
        assert final.abort_requested is True
        assert observed["abort"] is not observed["run"]
        assert observed["abort"].mode == "abort"
        assert observed["abort_sees"] == ("running", True)
    finally:
        await kit.close()


async def test_r37_a_task_whose_owner_gained_cancellation_intent_runs_no_further_phase() -> None:
    """R37 step 3b and R48: the owner's intent ends the child's run invocation."""
    later: list[str] = []
    ids: dict[str, int] = {}

    async def child_first(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.session.abort_task(ids["parent"])
        # The next commit may land before the cascade marks this task, or be refused
        # by the mark; either way no further phase may run.
        with contextlib.suppress(TaskGateClosed):
            await runtime.commit(lambda tx: Running({"phase": "second"}))

    async def child_second(task: TaskRecord, runtime: TaskRuntime) -> None:
        later.append("second")

    child = define("child", {"first": child_first, "second": child_second})

    async def spawn(task: TaskRecord, runtime: TaskRuntime) -> None:
        def create(tx: Tx) -> Waiting:
            made = tx.create_task(child, ownership=TaskOwned(runtime.task_id))
            ids["child"] = made.id
            return Waiting(on=[made.id], checkpoint={"phase": "done"})

        await runtime.commit(create)

    parent = define("parent", {"spawn": spawn, "done": complete()})
    kit = await open_kit(parent, child)
    try:
        conv = await kit.conversation()
        task = await kit.create(parent, conversation_id=conv)
        ids["parent"] = task.id
        kit.session.resume()
        final = await kit.finished(task.id)
        child_final = await kit.finished(ids["child"])
        assert later == []
        assert outcome_of(child_final) == {"status": "aborted", "reason": "stopped"}
        assert outcome_of(final) == {"status": "aborted", "reason": "stopped"}
    finally:
        await kit.close()


async def test_r37_a_phase_that_raised_faults_the_task_with_the_error_message() -> None:
    async def boom(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.commit(lambda tx: Running({"phase": "boom", "step": 2}))
        raise RuntimeError("the phase broke")

    job = define("job", {"boom": boom})
    kit = await open_kit(job)
    try:
        conv = await kit.conversation()
        task = await kit.create(job, conversation_id=conv)
        final = await kit.finished(task.id)
        assert final.state == {
            "status": "terminal",
            "outcome": {"status": "faulted", "error": {"message": "the phase broke"}},
        }
        assert kit.hooks.outcomes[0][0] == task.id  # scheduler-written: cleanup hook ran
    finally:
        await kit.close()


async def test_r45_a_rejected_fault_write_ends_the_invocation_and_the_task_runs_again() -> None:
    runs: list[str] = []

    class FlakyCleanup(RecordingHooks):
        failures = 1

        async def scheduler_outcome(self, tx: Tx, task: TaskRecord, outcome: JsonObject) -> None:
            if self.failures:
                self.failures -= 1
                raise RuntimeError("cleanup failed")
            await super().scheduler_outcome(tx, task, outcome)

    async def boom(task: TaskRecord, runtime: TaskRuntime) -> None:
        runs.append(task.status)
        raise RuntimeError("phase broke")

    job = define("job", {"boom": boom})
    kit = await open_kit(job, hooks=FlakyCleanup())
    try:
        task = await kit.create(job, conversation_id=await kit.conversation())
        final = await kit.finished(task.id)
        assert runs == ["running", "running"]  # the phase ran again at the next reservation
        assert outcome_of(final) == {"status": "faulted", "error": {"message": "phase broke"}}
        assert [(r.code, r.message, r.task_id) for r in kit.reports] == [
            ("invocation_error", "cleanup failed", task.id)
        ]
    finally:
        await kit.close()


@pytest.mark.parametrize("commit_nothing", [True, False])
async def test_r37_a_phase_that_returned_without_durable_progress_faults_the_task(
    commit_nothing: bool,
) -> None:
    async def idle(task: TaskRecord, runtime: TaskRuntime) -> None:
        if commit_nothing:
            return
        await runtime.commit(lambda tx: None)  # returning None leaves the state (R38)

    job = define("job", {"idle": idle})
    kit = await open_kit(job)
    try:
        conv = await kit.conversation()
        task = await kit.create(job, conversation_id=conv)
        final = await kit.finished(task.id)
        assert outcome_of(final) == {
            "status": "faulted",
            "error": {"message": "Task job phase idle returned without durable progress"},
        }
    finally:
        await kit.close()


async def test_r37_progress_within_the_same_phase_counts_and_key_order_does_not() -> None:
    runs: list[int] = []

    async def count(task: TaskRecord, runtime: TaskRuntime) -> None:
        n = task.state["checkpoint"]["n"]  # type: ignore[index,call-overload]
        runs.append(n)
        if n < 3:
            await runtime.commit(lambda tx: Running({"phase": "count", "n": n + 1}))
        else:
            await runtime.commit(lambda tx: Completed(n))

    counter = define_task(
        "counter",
        initial=lambda i: {"phase": "count", "n": 0},
        phases={"count": count},
        abort=abort_with(),
    )

    async def shuffle(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.commit(lambda tx: Running({"y": [1, {"b": 2, "a": 1}], "phase": "same"}))

    same = define_task(
        "same",
        initial=lambda i: {"phase": "same", "y": [1, {"a": 1, "b": 2}]},
        phases={"same": shuffle},
        abort=abort_with(),
    )
    kit = await open_kit(counter, same)
    try:
        conv = await kit.conversation()
        a = await kit.create(counter, conversation_id=conv)
        b = await kit.create(same, conversation_id=conv)
        assert outcome_of(await kit.finished(a.id)) == {"status": "completed", "result": 3}
        assert runs == [0, 1, 2, 3]
        assert outcome_of(await kit.finished(b.id))["status"] == "faulted"
    finally:
        await kit.close()


async def test_r37_a_checkpoint_without_a_known_phase_faults_the_task() -> None:
    job = define("job", {"a": goto("nowhere")})
    kit = await open_kit(job)
    try:
        conv = await kit.conversation()
        task = await kit.create(job, conversation_id=conv)
        final = await kit.finished(task.id)
        assert outcome_of(final)["status"] == "faulted"
        assert "nowhere" in outcome_of(final)["error"]["message"]  # type: ignore[index,operator]
    finally:
        await kit.close()


# -- runtime commits (R38) --


async def test_r38_runtime_commit_lands_the_state_with_its_writes_and_stamps_entries() -> None:
    entries: dict[str, int] = {}

    async def write(task: TaskRecord, runtime: TaskRuntime) -> None:
        def fn(tx: Tx) -> Running:
            entries["task"] = tx.append(task.conversation_id, "note", data="by task").id
            return Running({"phase": "end"})

        await runtime.commit(fn)

    job = define("job", {"write": write, "end": complete()})
    kit = await open_kit(job)
    try:
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
    finally:
        await kit.close()


async def test_r38_runtime_commit_rejects_a_terminal_or_waiting_task_and_an_ended_run() -> None:
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
    kit = await open_kit(ends, waits)
    try:
        conv = await kit.conversation()
        a = await kit.create(ends, conversation_id=conv)
        b = await kit.create(waits, conversation_id=conv)
        await kit.finished(a.id)
        await kit.finished(b.id)
        assert sorted(errors) == sorted([f"Task {a.id} is terminal", f"Task {b.id} is waiting"])
        for runtime in kept:
            with pytest.raises(
                TaskGateClosed, match=f"Task {runtime.task_id} invocation has ended"
            ):
                await runtime.commit(lambda tx: None)
    finally:
        await kit.close()


async def test_r38_runtime_commit_of_a_run_invocation_rejects_a_durable_abort_mark() -> None:
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
    kit = await open_kit(job)
    try:
        conv = await kit.conversation()
        task = await kit.create(job, conversation_id=conv)
        kit.session.resume()
        await gate.wait_reached()
        await kit.session.abort_task(task.id)  # joins the invocation
        assert errors == [f"Task {task.id} has a durable abort mark"]
        assert outcome_of(await kit.finished(task.id)) == {"status": "aborted", "reason": "stopped"}
    finally:
        await kit.close()


# -- the effect sandwich (R39) --


async def test_r39_an_effect_runs_off_the_line_and_reopen_resumes_at_its_intent() -> None:
    ledger: list[str] = []
    attempts: list[int] = []
    gate = Gate()
    side_commit: list[int] = []

    async def intent(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.commit(lambda tx: Running({"phase": "effect", "key": f"effect-{task.id}"}))

    async def effect(task: TaskRecord, runtime: TaskRuntime) -> None:
        key: str = task.state["checkpoint"]["key"]  # type: ignore[index,call-overload,assignment]
        attempts.append(task.id)
        if key not in ledger:  # idempotent: the ledger says whether it already happened
            ledger.append(key)
        # Other commits go through while the effect runs: the phase holds no line.
        side = await runtime.session.commit(lambda tx: tx.append(task.conversation_id, "side"))
        side_commit.append(side.id)
        if len(attempts) == 1:
            await gate.passage()  # the process "dies" here, before the outcome commit
        await runtime.commit(lambda tx: Completed(key))

    job = define("job", {"intent": intent, "effect": effect})
    kit = await open_kit(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    kit.session.resume()
    await gate.wait_reached()
    kit = await abandon_without_closing_and_reopen(kit)
    try:
        assert (await kit.task(task.id)).state == {
            "status": "pending",
            "checkpoint": {"phase": "effect", "key": f"effect-{task.id}"},
        }
        final = await kit.finished(task.id)
        assert outcome_of(final)["result"] == f"effect-{task.id}"
        assert attempts == [task.id, task.id]  # the intent phase ran again after reopen
        assert ledger == [f"effect-{task.id}"]  # and the effect itself happened once
        assert len(side_commit) == 2
    finally:
        await kit.close()


# -- memos (R40) --


async def test_r40_memos_are_first_writer_wins_own_keys_and_survive_checkpoints() -> None:
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
    kit = await open_kit(job)
    try:
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
    finally:
        await kit.close()


async def test_r40_concurrent_memo_callers_get_the_same_winner() -> None:
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
    kit = await open_kit(job)
    try:
        conv = await kit.conversation()
        task = await kit.create(job, conversation_id=conv)
        await kit.finished(task.id)
        winner = results[0]
        assert results[:3] == [winner] * 3
        assert results[3] == {"k": winner}
    finally:
        await kit.close()


async def test_r40_memos_vanish_when_the_task_holds_its_outcome() -> None:
    gate = Gate()
    child = define("child", {"run": gated(gate, complete())})

    async def parent_phase(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.memo("m", 1)
        await runtime.commit(
            lambda tx: tx.create_task(child, ownership=TaskOwned(task.id)) and None
        )
        await runtime.commit(lambda tx: Completed())

    parent = define("parent", {"p": parent_phase})
    kit = await open_kit(parent, child)
    try:
        conv = await kit.conversation()
        task = await kit.create(parent, conversation_id=conv)
        kit.session.resume()
        held = await kit.status_is(task.id, "completing")
        assert held.memos is None
        gate.open()
        await kit.finished(task.id)
    finally:
        await kit.close()


# -- sleep (R41) --


async def test_r41_sleep_returns_once_the_clock_reaches_the_deadline() -> None:
    woke: list[float] = []

    async def nap(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.sleep(runtime.session.clock.now() + 1000)
        woke.append(runtime.session.clock.now())
        await runtime.commit(lambda tx: Completed())

    job = define("job", {"nap": nap})
    kit = await open_kit(job)
    try:
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
    finally:
        await kit.close()


async def test_r41_sleep_rejects_once_signalled_even_in_a_helper_coroutine() -> None:
    gate = Gate()
    helper: list[asyncio.Future[None]] = []

    async def work(task: TaskRecord, runtime: TaskRuntime) -> None:
        helper.append(asyncio.ensure_future(runtime.sleep(runtime.session.clock.now() + 10**9)))
        await gate.passage()

    job = define("job", {"work": work})
    kit = await open_kit(job)
    try:
        conv = await kit.conversation()
        task = await kit.create(job, conversation_id=conv)
        kit.session.resume()
        await gate.wait_reached()
        await kit.session.abort_task(task.id)
        with pytest.raises(TaskGateClosed, match="invocation has ended"):
            await within(helper[0])
    finally:
        await kit.close()


# -- a runtime after its invocation (R42) --


async def test_r42_every_runtime_operation_rejects_after_the_invocation_ended() -> None:
    kept: list[TaskRuntime] = []

    async def work(task: TaskRecord, runtime: TaskRuntime) -> None:
        kept.append(runtime)
        await runtime.memo("m", 1)
        await runtime.commit(lambda tx: Waiting(on=[], checkpoint={"phase": "end"}))

    job = define("job", {"work": work, "end": complete()})
    kit = await open_kit(job)
    try:
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
    finally:
        await kit.close()


# -- abort handlers (R43) --


async def test_r43_an_abort_handler_runs_once_in_a_fresh_abort_invocation() -> None:
    calls: list[str] = []

    async def abort(task: TaskRecord, runtime: TaskRuntime) -> None:
        calls.append(runtime.mode)
        await runtime.commit(lambda tx: Failed("gave up"))

    job = define("job", {"never": complete()}, abort=abort)
    kit = await open_kit(job)
    try:
        conv = await kit.conversation()
        task = await kit.create(job, conversation_id=conv)
        await kit.session.abort_task(task.id)  # paused: nothing runs yet
        assert calls == []
        final = await kit.finished(task.id)
        await spin()
        assert calls == ["abort"]
        assert outcome_of(final) == {"status": "failed", "error": {"message": "gave up"}}
    finally:
        await kit.close()


async def test_r43_an_abort_handler_that_commits_no_outcome_faults_the_task() -> None:
    async def shrug(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.memo("tried", True)

    job = define("job", {"never": complete()}, abort=shrug)
    kit = await open_kit(job)
    try:
        conv = await kit.conversation()
        task = await kit.create(job, conversation_id=conv)
        await kit.session.abort_task(task.id)
        final = await kit.finished(task.id)
        assert outcome_of(final) == {
            "status": "faulted",
            "error": {
                "message": f"Abort handler of task {task.id} returned without a terminal outcome"
            },
        }
    finally:
        await kit.close()


@pytest.mark.parametrize("swallow", [False, True])
async def test_r43_an_abort_handler_that_returns_waiting_faults_the_task(swallow: bool) -> None:
    async def wait(task: TaskRecord, runtime: TaskRuntime) -> None:
        try:
            await runtime.commit(lambda tx: Waiting(on=[], checkpoint={"phase": "never"}))
        except TaskGateClosed:
            if not swallow:
                raise

    job = define("job", {"never": complete()}, abort=wait)
    kit = await open_kit(job)
    try:
        conv = await kit.conversation()
        task = await kit.create(job, conversation_id=conv)
        await kit.session.abort_task(task.id)
        final = await kit.finished(task.id)
        assert outcome_of(final) == {
            "status": "faulted",
            "error": {"message": f"Abort handler of task {task.id} cannot wait"},
        }
    finally:
        await kit.close()


async def test_r43_an_abort_handler_cannot_own_children_but_may_await_background_work() -> None:
    seen: dict[str, Any] = {}
    helper = define("helper", {"run": complete("helped")})

    async def abort(task: TaskRecord, runtime: TaskRuntime) -> None:
        try:
            await runtime.commit(
                lambda tx: tx.create_task(helper, ownership=TaskOwned(task.id)) and None
            )
        except OwnershipRejected as error:
            seen["owned"] = str(error)

        def background(tx: Tx) -> TaskRecord:
            return tx.create_task(
                helper,
                ownership=ConversationOwned(),
                conversation_id=task.conversation_id,
                background=True,
            )

        made = await runtime.commit(background)
        done = await runtime.wait_for_task(made.id)
        await runtime.commit(lambda tx: Completed(outcome_of(done)["result"]))

    job = define("job", {"never": complete()}, abort=abort)
    kit = await open_kit(job, helper)
    try:
        conv = await kit.conversation()
        task = await kit.create(job, conversation_id=conv)
        await kit.session.abort_task(task.id)
        final = await kit.finished(task.id)
        assert f"Task {task.id} is abort-marked" in seen["owned"]
        assert outcome_of(final) == {"status": "completed", "result": "helped"}
    finally:
        await kit.close()


# -- the terminal transition (R56) --

SCRATCH = define_doc("scratch", scope="task", initial=lambda: {"n": 0})
LATE = define_doc("late", scope="task", initial=lambda: {"n": 0})


async def test_r56_the_terminal_commit_drops_checkpoint_memos_and_every_task_document() -> None:
    async def first(task: TaskRecord, runtime: TaskRuntime) -> None:
        async def fn(tx: Tx) -> Running:
            (await tx.doc(SCRATCH, task.id))["n"] = 1
            return Running({"phase": "last"})

        await runtime.memo("m", 1)
        await runtime.commit(fn)

    async def last(task: TaskRecord, runtime: TaskRuntime) -> None:
        async def fn(tx: Tx) -> Completed:
            (await tx.doc(LATE, task.id))["n"] = 2  # created in the finishing commit itself
            return Completed("ok")

        await runtime.commit(fn)

    job = define("job", {"first": first, "last": last})
    kit = await open_kit(job)
    try:
        conv = await kit.conversation()
        task = await kit.create(job, conversation_id=conv)
        waiter = asyncio.ensure_future(kit.session.wait_for_task(task.id))
        final = await within(waiter)
        assert final.state == {
            "status": "terminal",
            "outcome": {"status": "completed", "result": "ok"},
        }
        assert final.memos is None
        assert final.ended_at == kit.clock.now()
        assert await kit.session.snapshot(SCRATCH, task.id) is None
        assert await kit.session.snapshot(LATE, task.id) is None
        terminal_commit = next(
            i for i in kit.commits if any(r.id == task.id and not r.is_live for r in i.tasks)
        )
        retired = {c.address.kind for c in terminal_commit.documents if c.retired}
        assert retired == {"scratch", "late"}
        page = await kit.storage.scan_documents(SCRATCH.address(task.id, None).scope)
        assert page.items == []
    finally:
        await kit.close()


async def test_r56_wait_for_task_on_a_terminal_task_resolves_at_once() -> None:
    job = define("job", {"a": complete(5)})
    kit = await open_kit(job)
    try:
        conv = await kit.conversation()
        task = await kit.create(job, conversation_id=conv)
        final = await kit.finished(task.id)
        again = await kit.session.wait_for_task(task.id)  # no timeout needed: no await inside
        assert again == final
    finally:
        await kit.close()


# -- what starts scheduling (R23) --


async def test_r23_open_dispatches_nothing_and_pure_reads_do_not_start_scheduling() -> None:
    runs: list[int] = []

    async def work(task: TaskRecord, runtime: TaskRuntime) -> None:
        runs.append(task.id)
        await runtime.commit(lambda tx: Completed())

    job = define("job", {"work": work})
    kit = await open_kit(job)
    try:
        conv = await kit.conversation()
        task = await kit.create(job, conversation_id=conv)
        kit = await abandon_without_closing_and_reopen(kit)
        seq = kit.storage.last_seq
        await kit.session.inspect()
        kit.session.task_graph()
        kit.session.watch_task_graph().close()
        await kit.session.read_task(task.id)
        await kit.session.snapshot(SCRATCH, task.id)
        await spin()
        assert runs == []
        assert not kit.session.scheduler.enabled
        assert kit.storage.last_seq == seq
        assert (await kit.task(task.id)).status == "pending"
    finally:
        await kit.close()


async def test_r23_resume_is_idempotent_and_refused_after_close() -> None:
    runs: list[int] = []

    async def work(task: TaskRecord, runtime: TaskRuntime) -> None:
        runs.append(task.id)
        await runtime.commit(lambda tx: Completed())

    job = define("job", {"work": work})
    kit = await open_kit(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    kit.session.resume()
    kit.session.resume()
    await kit.finished(task.id)
    kit.session.resume()
    await spin()
    assert runs == [task.id]
    await kit.close()
    with pytest.raises(SessionClosed):
        kit.session.resume()
