"""Task steps: definitions, reservation, the step before every phase, what starts scheduling.

Rules: R-1.6 (definitions), R36 (reservation), R37 (one invocation and its steps),
R23 (what starts scheduling).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from pi_durable_tui.kernel import (
    CommitInfo,
    Completed,
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
from pi_durable_tui.storage.records import TaskRecord
from tests.kernel.task_support import (
    Gate,
    Kits,
    abort_with,
    complete,
    create_owned,
    define,
    gated,
    goto,
    outcome_of,
    spin,
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
                version=version,
            )
    with pytest.raises(ValueError, match="at least one phase"):
        define_task("t", initial=lambda i: {"phase": "a"}, phases={}, abort=abort_with())


async def test_r1_6_a_new_task_is_pending_at_the_checkpoint_initial_returns(kits: Kits) -> None:
    job = define_task(
        "job",
        initial=lambda i: {"phase": "a", "n": i["n"]},  # type: ignore[index,call-overload]
        phases={"a": complete()},
        abort=abort_with(),
    )
    kit = await kits.open(job)
    conv = await kit.conversation()
    record = await kit.create(job, {"n": 3}, conversation_id=conv)
    assert record.state == {"status": "pending", "checkpoint": {"phase": "a", "n": 3}}
    assert (record.kind, record.version, record.input) == ("job", 1, {"n": 3})
    assert record.memos == {}
    assert record.started_at is None


# -- reservation (R36) --


async def test_r36_one_reservation_commit_moves_ready_tasks_to_running_before_code_runs(
    kits: Kits,
) -> None:
    ran: list[str] = []

    async def work(task: TaskRecord, runtime: TaskRuntime) -> None:
        ran.append(task.status)
        await runtime.commit(lambda tx: Completed(task.id))

    job = define("job", {"work": work})
    kit = await kits.open(job)
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


# -- one invocation and its steps (R37) --


async def test_r37_one_invocation_runs_the_phases_in_checkpoint_order(kits: Kits) -> None:
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
    kit = await kits.open(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    final = await kit.finished(task.id)
    assert order == ["a", "b", "c"]
    assert len({id(r) for r in runtimes}) == 1  # one invocation
    assert outcome_of(final) == {"status": "completed", "result": "done"}


async def test_r37_a_wait_stops_the_invocation_and_a_fresh_one_resumes_at_its_checkpoint(
    kits: Kits,
) -> None:
    runtimes: dict[str, TaskRuntime] = {}

    async def park(task: TaskRecord, runtime: TaskRuntime) -> None:
        runtimes["park"] = runtime
        await runtime.commit(lambda tx: Waiting(on=[], checkpoint={"phase": "resume"}))

    async def resume(task: TaskRecord, runtime: TaskRuntime) -> None:
        runtimes["resume"] = runtime
        await runtime.commit(lambda tx: Completed(task.state["checkpoint"]))

    job = define("job", {"park": park, "resume": resume})
    kit = await kits.open(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    final = await kit.finished(task.id)
    assert outcome_of(final)["result"] == {"phase": "resume"}
    assert runtimes["park"] is not runtimes["resume"]
    statuses = [r.status for info in kit.commits for r in info.tasks if r.id == task.id]
    assert statuses == ["pending", "running", "waiting", "running", "terminal"]


async def test_r37_a_committed_outcome_stops_the_invocation_without_a_fault(kits: Kits) -> None:
    later: list[str] = []

    async def finish(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.commit(lambda tx: Failed("no luck", detail={"code": 7}))

    async def never(task: TaskRecord, runtime: TaskRuntime) -> None:
        later.append("ran")

    job = define("job", {"finish": finish, "never": never})
    kit = await kits.open(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    final = await kit.finished(task.id)
    assert outcome_of(final) == {
        "status": "failed",
        "error": {"message": "no luck", "detail": {"code": 7}},
    }
    assert later == []


async def test_r37_a_held_outcome_stops_the_invocation_until_owned_work_drains(kits: Kits) -> None:
    child_gate = Gate()
    phases_run: list[str] = []

    async def spawning(task: TaskRecord, runtime: TaskRuntime) -> None:
        phases_run.append("spawn")
        await runtime.commit(create_owned(CHILD, runtime.task_id))
        await runtime.commit(lambda tx: Running({"phase": "finish"}))

    async def finish(task: TaskRecord, runtime: TaskRuntime) -> None:
        phases_run.append("finish")
        await runtime.commit(lambda tx: Completed("parent"))

    CHILD = define("child", {"run": gated(child_gate, complete("child"))})
    parent = define("parent", {"spawn": spawning, "finish": finish})
    kit = await kits.open(parent, CHILD)
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
    assert await kit.activity(task.id) == {"completing": True}  # no invocation runs it
    child_gate.open()
    final = await kit.finished(task.id)
    assert outcome_of(final) == {"status": "completed", "result": "parent"}


async def test_r37_closing_stops_at_the_next_step_and_keeps_checkpoint_and_memos(
    kits: Kits,
) -> None:
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
    kit = await kits.open(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    kit.session.resume()
    await gate.wait_reached()
    commits_before_close = len(kit.commits)
    await kit.close()

    assert later == []
    assert len(kit.commits) == commits_before_close  # close writes nothing (R27)
    record = await kit.session.read_task(task.id)
    assert record is not None
    assert record.state == {"status": "running", "checkpoint": {"phase": "second"}}
    assert record.memos == {"kept": 1}


async def test_r37_an_abort_mark_ends_the_run_invocation_and_a_fresh_one_aborts(kits: Kits) -> None:
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
    kit = await kits.open(job)
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


async def test_r37_a_task_whose_owner_gained_cancellation_intent_runs_no_further_phase(
    kits: Kits,
) -> None:
    """R37 step 3b and R48: the owner's intent ends the child's run invocation."""
    later: list[str] = []
    ids: dict[str, int] = {}

    async def child_first(task: TaskRecord, runtime: TaskRuntime) -> None:
        await kit.session.abort_task(ids["parent"])
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
    kit = await kits.open(parent, child)
    conv = await kit.conversation()
    task = await kit.create(parent, conversation_id=conv)
    ids["parent"] = task.id
    kit.session.resume()
    final = await kit.finished(task.id)
    child_final = await kit.finished(ids["child"])
    assert later == []
    assert outcome_of(child_final) == {"status": "aborted", "reason": "stopped"}
    assert outcome_of(final) == {"status": "aborted", "reason": "stopped"}


async def test_r37_a_phase_that_raised_faults_the_task_with_the_error_message(kits: Kits) -> None:
    async def boom(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.commit(lambda tx: Running({"phase": "boom", "step": 2}))
        raise RuntimeError("the phase broke")

    job = define("job", {"boom": boom})
    kit = await kits.open(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    final = await kit.finished(task.id)
    assert final.state == {
        "status": "terminal",
        "outcome": {"status": "faulted", "error": {"message": "the phase broke"}},
    }
    assert kit.hooks.outcomes[0][0] == task.id  # scheduler-written: cleanup hook ran


@pytest.mark.parametrize("commit_nothing", [True, False])
async def test_r37_a_phase_that_returned_without_durable_progress_faults_the_task(
    commit_nothing: bool,
    kits: Kits,
) -> None:
    async def idle(task: TaskRecord, runtime: TaskRuntime) -> None:
        if commit_nothing:
            return
        await runtime.commit(lambda tx: None)  # returning None leaves the state (R38)

    job = define("job", {"idle": idle})
    kit = await kits.open(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    final = await kit.finished(task.id)
    assert outcome_of(final) == {
        "status": "faulted",
        "error": {"message": "Task job phase idle returned without durable progress"},
    }


async def test_r37_progress_within_the_same_phase_counts_and_key_order_does_not(kits: Kits) -> None:
    runs: list[int] = []

    async def count(task: TaskRecord, runtime: TaskRuntime) -> None:
        n = task.state["checkpoint"]["n"]
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
    kit = await kits.open(counter, same)
    conv = await kit.conversation()
    a = await kit.create(counter, conversation_id=conv)
    b = await kit.create(same, conversation_id=conv)
    assert outcome_of(await kit.finished(a.id)) == {"status": "completed", "result": 3}
    assert runs == [0, 1, 2, 3]
    assert outcome_of(await kit.finished(b.id))["status"] == "faulted"


async def test_r37_a_checkpoint_without_a_known_phase_faults_the_task(kits: Kits) -> None:
    job = define("job", {"a": goto("nowhere")})
    kit = await kits.open(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    final = await kit.finished(task.id)
    assert outcome_of(final)["status"] == "faulted"
    assert "nowhere" in outcome_of(final)["error"]["message"]


# -- what starts scheduling (R23) --

SCRATCH = define_doc("scratch", scope="task", initial=lambda: {"n": 0})


async def test_r23_open_dispatches_nothing_and_pure_reads_do_not_start_scheduling(
    kits: Kits,
) -> None:
    runs: list[int] = []

    async def work(task: TaskRecord, runtime: TaskRuntime) -> None:
        runs.append(task.id)
        await runtime.commit(lambda tx: Completed())

    job = define("job", {"work": work})
    kit = await kits.open(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    kit = await kits.reopen(kit)
    seq = kit.storage.last_seq
    await kit.session.inspect()
    kit.session.task_graph()
    kit.session.watch_task_graph().close()
    await kit.session.read_task(task.id)
    await kit.session.snapshot(SCRATCH, task.id)
    await spin()
    assert runs == []
    assert await kit.scheduling() == "paused"
    assert kit.storage.last_seq == seq
    assert (await kit.task(task.id)).status == "pending"


async def test_r23_resume_is_idempotent_and_refused_after_close(kits: Kits) -> None:
    runs: list[int] = []

    async def work(task: TaskRecord, runtime: TaskRuntime) -> None:
        runs.append(task.id)
        await runtime.commit(lambda tx: Completed())

    job = define("job", {"work": work})
    kit = await kits.open(job)
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
