"""How tasks end: abort handlers, scheduler-written outcomes and their cleanup, the terminal commit.

Rules: R43 (abort handlers), R45 (cleanup of scheduler-written outcomes, and the
backoff when it keeps failing), R56 (the terminal transition).
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
    Running,
    TaskGateClosed,
    TaskRuntime,
    Tx,
    Waiting,
    define_doc,
)
from pi_durable_tui.kernel.tasks import BASE_DELAY_MS, MAX_DELAY_MS
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.records import TaskRecord
from tests.kernel.task_support import (
    Gate,
    Kit,
    Kits,
    RecordingHooks,
    complete,
    crashing_parent,
    create_owned,
    define,
    gated,
    outcome_of,
    spin,
    within,
)

# -- abort handlers (R43) --


async def test_r43_an_abort_handler_runs_once_in_a_fresh_abort_invocation(kits: Kits) -> None:
    calls: list[str] = []

    async def abort(task: TaskRecord, runtime: TaskRuntime) -> None:
        calls.append(runtime.mode)
        await runtime.commit(lambda tx: Failed("gave up"))

    job = define("job", {"never": complete()}, abort=abort)
    kit = await kits.open(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    await kit.session.abort_task(task.id)  # paused: nothing runs yet
    assert calls == []
    final = await kit.finished(task.id)
    await spin()
    assert calls == ["abort"]
    assert outcome_of(final) == {"status": "failed", "error": {"message": "gave up"}}


async def test_r43_an_abort_handler_that_commits_no_outcome_faults_the_task(kits: Kits) -> None:
    async def shrug(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.memo("tried", True)

    job = define("job", {"never": complete()}, abort=shrug)
    kit = await kits.open(job)
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


@pytest.mark.parametrize("swallow", [False, True])
async def test_r43_an_abort_handler_that_returns_waiting_faults_the_task(
    swallow: bool, kits: Kits
) -> None:
    async def wait(task: TaskRecord, runtime: TaskRuntime) -> None:
        try:
            await runtime.commit(lambda tx: Waiting(on=[], checkpoint={"phase": "never"}))
        except TaskGateClosed:
            if not swallow:
                raise

    job = define("job", {"never": complete()}, abort=wait)
    kit = await kits.open(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    await kit.session.abort_task(task.id)
    final = await kit.finished(task.id)
    assert outcome_of(final) == {
        "status": "faulted",
        "error": {"message": f"Abort handler of task {task.id} cannot wait"},
    }


async def test_r43_an_abort_handler_cannot_own_children_but_may_await_background_work(
    kits: Kits,
) -> None:
    seen: dict[str, Any] = {}
    helper = define("helper", {"run": complete("helped")})

    async def abort(task: TaskRecord, runtime: TaskRuntime) -> None:
        try:
            await runtime.commit(create_owned(helper, task.id))
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
    kit = await kits.open(job, helper)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    await kit.session.abort_task(task.id)
    final = await kit.finished(task.id)
    assert f"Task {task.id} is abort-marked" in seen["owned"]
    assert outcome_of(final) == {"status": "completed", "result": "helped"}


# -- the terminal transition (R56) --

SCRATCH = define_doc("scratch", scope="task", initial=lambda: {"n": 0})
LATE = define_doc("late", scope="task", initial=lambda: {"n": 0})


async def test_r56_the_terminal_commit_drops_checkpoint_memos_and_every_task_document(
    kits: Kits,
) -> None:
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
    kit = await kits.open(job)
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


async def test_r56_wait_for_task_on_a_terminal_task_resolves_at_once(kits: Kits) -> None:
    job = define("job", {"a": complete(5)})
    kit = await kits.open(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    final = await kit.finished(task.id)
    again = await kit.session.wait_for_task(task.id)  # no timeout needed: no await inside
    assert again == final


# -- scheduler-written outcomes and their cleanup (R45) --


async def test_r45_a_rejected_fault_write_ends_the_invocation_and_the_task_runs_again(
    kits: Kits,
) -> None:
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
    kit = await kits.open(job, hooks=FlakyCleanup())
    task = await kit.create(job, conversation_id=await kit.conversation())
    kit.session.resume()
    await spin()
    assert runs == ["running"]  # the failed write backs off before the next run (R45)
    retry_at = kit.clock.next_deadline()
    assert retry_at is not None
    kit.clock.set(retry_at)
    final = await kit.finished(task.id)
    assert runs == ["running", "running"]  # the phase ran again at the next reservation
    assert outcome_of(final) == {"status": "faulted", "error": {"message": "phase broke"}}
    assert [(r.code, r.message, r.task_id) for r in kit.reports] == [
        ("invocation_error", "cleanup failed", task.id)
    ]


class BrokenCleanup(RecordingHooks):
    """A cleanup hook that raises every time until ``fixed`` is set."""

    calls = 0
    fixed = False

    async def scheduler_outcome(self, tx: Tx, task: TaskRecord, outcome: JsonObject) -> None:
        self.calls += 1
        if not self.fixed:
            raise RuntimeError("cleanup broke")
        await super().scheduler_outcome(tx, task, outcome)


async def advance_to_retry(kit: Kit) -> float:
    """Move the clock to the next backoff deadline and let the retry run; return the wait."""
    retry_at = kit.clock.next_deadline()
    assert retry_at is not None, "no retry is scheduled"
    waited = retry_at - kit.clock.now()
    kit.clock.set(retry_at)
    await spin()
    return waited


async def test_r45_a_cleanup_that_always_raises_backs_off_exponentially_and_reports_once(
    kits: Kits,
) -> None:
    async def boom(task: TaskRecord, runtime: TaskRuntime) -> None:
        raise RuntimeError("phase broke")

    job = define("job", {"boom": boom})
    healthy = define("healthy", {"run": complete("fine")})
    hooks = BrokenCleanup()
    kit = await kits.open(job, healthy, hooks=hooks)
    task = await kit.create(job, conversation_id=await kit.conversation())
    kit.session.resume()
    await spin()
    assert hooks.calls == 1
    waits = []
    for attempt in range(2, 11):
        await spin()
        assert hooks.calls == attempt - 1  # nothing runs again while the clock stands still
        waits.append(await advance_to_retry(kit))
        assert hooks.calls == attempt
    assert waits == [BASE_DELAY_MS * 2**n for n in range(6)] + [MAX_DELAY_MS] * 3
    assert [(r.code, r.task_id) for r in kit.reports] == [("invocation_error", task.id)]
    assert kit.session.failed is None  # the Session stays healthy: other work runs
    other = await kit.create(healthy, conversation_id=await kit.conversation())
    assert outcome_of(await kit.finished(other.id))["result"] == "fine"
    assert (await kit.task(task.id)).status == "running"  # its fault is not written yet
    hooks.fixed = True
    await advance_to_retry(kit)
    final = await kit.finished(task.id)
    assert outcome_of(final) == {"status": "faulted", "error": {"message": "phase broke"}}


async def test_r45_r49_an_orphaning_cleanup_that_raises_still_marks_and_orphans_later(
    kits: Kits,
) -> None:
    ghost = define("ghost", {"run": complete()})
    hooks = BrokenCleanup()
    kit = await kits.open(hooks=hooks)  # no definition takes "ghost" tasks
    task = await kit.create(ghost, conversation_id=await kit.conversation())
    assert await kit.session.abort_task(task.id) == "marked"  # the abort itself succeeds
    assert (await kit.task(task.id)).abort_requested
    kit.session.resume()
    await spin()
    assert hooks.calls == 1  # the marking commit's orphaning failed; nothing retried yet
    assert await advance_to_retry(kit) == BASE_DELAY_MS
    assert hooks.calls == 2
    codes = sorted(r.code for r in kit.reports if r.task_id == task.id)
    assert codes == ["missing_task", "scheduler_error"]  # the cleanup failure: once
    hooks.fixed = True
    await advance_to_retry(kit)
    final = await kit.finished(task.id)
    assert outcome_of(final) == {"status": "orphaned", "reason": "missing_task"}
    assert final.abort_requested


async def test_r45_r54_a_held_fault_whose_cleanup_raises_becomes_final_after_a_backoff(
    kits: Kits,
) -> None:
    gate = Gate()
    child = define("child", {"run": gated(gate, complete())})

    parent = crashing_parent(child)
    hooks = BrokenCleanup()
    kit = await kits.open(parent, child, hooks=hooks)
    task = await kit.create(parent, conversation_id=await kit.conversation())
    kit.session.resume()
    await kit.status_is(task.id, "completing")
    gate.open()  # the child is aborted by the cascade, or completes: either way it drains
    await spin()
    assert hooks.calls == 1
    assert (await kit.task(task.id)).status == "completing"  # the final commit landed nothing
    assert await advance_to_retry(kit) == BASE_DELAY_MS
    assert hooks.calls == 2
    hooks.fixed = True
    await advance_to_retry(kit)
    final = await kit.finished(task.id)
    assert outcome_of(final) == {"status": "faulted", "error": {"message": "parent broke"}}
    assert [(r.code, r.task_id) for r in kit.reports] == [("scheduler_error", task.id)]
