"""Recovery: reopen after a crash, blocked tasks, migrations, and hot reload.

Rules: R22 (what open reconciles), R44 (definition resolution at reservation),
R35 (hand-over at phase boundaries). A crash is simulated in-process by
``kits.reopen`` (the old Session writes nothing more and its storage stays open)
or by committing the records a crash left straight to the storage.
"""

from __future__ import annotations

from typing import Any

from pi_durable_tui.kernel import (
    Completed,
    Running,
    TaskRegistry,
    TaskRuntime,
    Waiting,
)
from pi_durable_tui.storage.json_ops import Json, JsonObject
from pi_durable_tui.storage.records import ConversationRecord, TaskRecord
from pi_durable_tui.storage.writes import PutConversation, PutTask
from tests.kernel.task_support import (
    CrashableStorage,
    Gate,
    Kits,
    complete,
    define,
    gated,
    outcome_of,
    spin,
)


def stored_task(
    storage: CrashableStorage,
    conversation_id: int,
    kind: str,
    state: JsonObject,
    *,
    version: int = 1,
    owner: int | None = None,
    abort_requested: bool = False,
    task_input: Json = None,
) -> TaskRecord:
    """A task record as a (possibly older or newer) program left it in storage."""
    return TaskRecord(
        storage.mint_id(),
        conversation_id,
        kind,
        version,
        task_input,
        state,
        owner=owner,
        abort_requested=abort_requested,
        memos={} if state["status"] not in ("completing", "terminal") else None,
    )


# -- reopen (R22) --


async def test_r22_reopen_makes_running_tasks_pending_keeping_checkpoint_memos_marks(
    kits: Kits,
) -> None:
    run_gate, abort_gate = Gate(), Gate()
    resumed: list[JsonObject] = []
    aborts: list[int] = []

    async def first(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.memo("seen", "first")
        await runtime.commit(lambda tx: Running({"phase": "second", "n": 1}))

    async def second(task: TaskRecord, runtime: TaskRuntime) -> None:
        if task.input == "abortee":
            await Gate().passage()  # stays here until it is aborted
        resumed.append(task.state["checkpoint"])
        if len(resumed) == 1:
            await run_gate.passage()
        await runtime.commit(lambda tx: Completed(task.memos))

    async def abort(task: TaskRecord, runtime: TaskRuntime) -> None:
        aborts.append(task.id)
        if len(aborts) == 1:
            await abort_gate.passage()
        await runtime.commit(lambda tx: Completed("abort ran"))

    job = define("job", {"first": first, "second": second}, abort=abort)
    kit = await kits.open(job)
    conv = await kit.conversation()
    running = await kit.create(job, conversation_id=conv)
    aborting = await kit.create(job, "abortee", conversation_id=conv)
    kit.session.resume()
    await run_gate.wait_reached()
    await kit.status_is(aborting.id, "running")
    await kit.session.abort_task(aborting.id)
    await abort_gate.wait_reached()
    started = (await kit.task(running.id)).started_at
    kit = await kits.reopen(kit)
    first_record = await kit.task(running.id)
    assert first_record.state == {
        "status": "pending",
        "checkpoint": {"phase": "second", "n": 1},
    }
    assert first_record.memos == {"seen": "first"}
    assert first_record.started_at == started
    second_record = await kit.task(aborting.id)
    assert second_record.status == "pending"
    assert second_record.abort_requested
    assert await kit.scheduling() == "paused"
    final = await kit.finished(running.id)
    assert outcome_of(final)["result"] == {"seen": "first"}
    assert resumed == [{"phase": "second", "n": 1}, {"phase": "second", "n": 1}]
    assert outcome_of(await kit.finished(aborting.id))["result"] == "abort ran"
    assert aborts == [aborting.id, aborting.id]  # the abort handler may rerun


async def test_r36_a_reservation_is_running_in_the_session_and_reopen_reads_what_the_store_holds(
    kits: Kits,
) -> None:
    gate = Gate()
    job = define("job", {"run": gated(gate, complete())})
    kit = await kits.open(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    seq = kit.storage.last_seq
    kit.session.resume()
    await gate.wait_reached()

    assert (await kit.task(task.id)).status == "running"
    assert kit.storage.last_seq == seq, "the reservation wrote nothing"
    stored = await kit.storage.task(task.id)
    assert stored is not None
    assert stored.status == "pending"
    kit = await kits.reopen(kit)
    reopened = await kit.task(task.id)
    assert reopened.state == stored.state
    gate.open()
    assert outcome_of(await kit.finished(task.id))["status"] == "completed"


async def test_r36_a_reserved_task_keeps_its_first_start_across_a_crash_once_anything_is_stored(
    kits: Kits,
) -> None:
    gate = Gate()
    job = define("job", {"run": gated(gate, complete())})
    kit = await kits.open(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv)
    kit.session.resume()
    await gate.wait_reached()
    first_start = (await kit.task(task.id)).started_at
    assert first_start is not None
    seq = kit.storage.last_seq
    await kit.conversation()  # any commit that stores, while the task still runs
    assert kit.storage.last_seq == seq + 1, "the reservation rode on it, no commit of its own"
    stored = await kit.storage.task(task.id)
    assert stored is not None
    assert stored.started_at == first_start

    kit = await kits.reopen(kit)
    assert (await kit.task(task.id)).started_at == first_start
    kit.session.resume()
    gate.open()
    assert (await kit.finished(task.id)).started_at == first_start


async def test_r36_a_background_task_stores_its_first_start_though_nothing_else_is_stored(
    kits: Kits,
) -> None:
    gate = Gate()
    job = define("job", {"run": gated(gate, complete())})
    kit = await kits.open(job)
    conv = await kit.conversation()
    task = await kit.create(job, conversation_id=conv, background=True)
    kit.session.resume()
    await gate.wait_reached()
    first_start = (await kit.task(task.id)).started_at
    stored = await kit.storage.task(task.id)
    assert stored is not None
    assert first_start is not None
    assert stored.started_at == first_start  # a quiet job in an idle session

    kit = await kits.reopen(kit)
    kit.session.resume()
    gate.open()
    assert (await kit.finished(task.id)).started_at == first_start


async def test_r22_reopen_leaves_waiting_tasks_waiting(kits: Kits) -> None:
    gate = Gate()
    slow = define("slow", {"run": gated(gate, complete())})
    ids: dict[str, int] = {}

    async def wait(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.commit(lambda tx: Waiting(on=[ids["slow"]], checkpoint={"phase": "done"}))

    waiter = define("waiter", {"wait": wait, "done": complete("resumed")})
    kit = await kits.open(waiter, slow)
    conv = await kit.conversation()
    ids["slow"] = (await kit.create(slow, conversation_id=conv)).id
    task = await kit.create(waiter, conversation_id=conv)
    kit.session.resume()
    before = await kit.status_is(task.id, "waiting")
    await gate.wait_reached()
    kit = await kits.reopen(kit)
    assert await kit.task(task.id) == before
    gate.open()
    assert outcome_of(await kit.finished(task.id))["result"] == "resumed"


async def test_r22_open_re_evaluates_holds_fail_fast_and_cascades_a_crash_left(kits: Kits) -> None:
    storage = CrashableStorage()
    conv = storage.mint_id()
    held = stored_task(
        storage,
        conv,
        "x",
        {"status": "completing", "outcome": {"status": "completed", "result": 1}},
    )
    drained = stored_task(
        storage,
        conv,
        "x",
        {"status": "terminal", "outcome": {"status": "completed", "result": None}},
        owner=held.id,
    )
    waiter = stored_task(storage, conv, "x", {"status": "pending", "checkpoint": {"phase": "p"}})
    failed = stored_task(
        storage,
        conv,
        "x",
        {"status": "terminal", "outcome": {"status": "failed", "error": {"message": "no"}}},
        owner=waiter.id,
    )
    sibling = stored_task(
        storage, conv, "x", {"status": "pending", "checkpoint": {"phase": "p"}}, owner=waiter.id
    )
    waiter = TaskRecord(
        waiter.id,
        conv,
        "x",
        1,
        None,
        {
            "status": "waiting",
            "checkpoint": {"phase": "p"},
            "on": [failed.id, sibling.id],
            "policy": "fail_fast",
        },
        memos={},
    )
    marked_owner = stored_task(
        storage,
        conv,
        "x",
        {"status": "pending", "checkpoint": {"phase": "p"}},
        abort_requested=True,
    )
    unmarked_child = stored_task(
        storage,
        conv,
        "x",
        {"status": "pending", "checkpoint": {"phase": "p"}},
        owner=marked_owner.id,
    )
    await storage.commit(
        [
            PutConversation(ConversationRecord(conv)),
            *(
                PutTask(r)
                for r in (held, drained, waiter, failed, sibling, marked_owner, unmarked_child)
            ),
        ]
    )
    kit = await kits.open(storage=storage)  # the registry knows no task "x" at all
    assert (await kit.task(held.id)).status == "terminal"
    assert (await kit.task(sibling.id)).abort_requested
    assert not (await kit.task(waiter.id)).abort_requested
    assert (await kit.task(unmarked_child.id)).abort_requested
    for task_id in (waiter.id, sibling.id, marked_owner.id, unmarked_child.id):
        assert (await kit.task(task_id)).is_live  # open never orphans (R22, R49)
    assert await kit.scheduling() == "paused"


async def test_r22_reopen_never_terminalizes_or_migrates_a_task_no_definition_takes(
    kits: Kits,
) -> None:
    storage = CrashableStorage()
    conv = storage.mint_id()
    pending = {"status": "pending", "checkpoint": {"phase": "run"}}
    missing = stored_task(storage, conv, "missing", pending)
    too_old = stored_task(storage, conv, "job", pending, version=5)
    no_migrate = stored_task(storage, conv, "job", {**pending, "status": "running"}, version=1)
    await storage.commit(
        [
            PutConversation(ConversationRecord(conv)),
            *(PutTask(r) for r in (missing, too_old, no_migrate)),
        ]
    )
    job_v2 = define("job", {"run": complete()}, version=2)
    kit = await kits.open(job_v2, storage=storage)
    kit.session.resume()
    await spin()
    assert await kit.task(missing.id) == missing
    assert await kit.task(too_old.id) == too_old
    assert (await kit.task(no_migrate.id)).state == pending
    assert (await kit.task(no_migrate.id)).version == 1
    assert await kit.blocked() == {
        missing.id: "missing_task",
        too_old.id: "task_too_old",
        no_migrate.id: "migration_failed",
    }


# -- blocked tasks and migrations (R44) --


async def test_r44_blocked_reasons_are_reported_once_and_reconsidered_on_publication(
    kits: Kits,
) -> None:
    storage = CrashableStorage()
    conv = storage.mint_id()
    pending = {"status": "pending", "checkpoint": {"phase": "run"}}
    missing = stored_task(storage, conv, "later", pending)
    too_old = stored_task(storage, conv, "newer", pending, version=3)
    await storage.commit(
        [PutConversation(ConversationRecord(conv)), PutTask(missing), PutTask(too_old)]
    )
    newer_v1 = define("newer", {"run": complete()})
    registry = TaskRegistry([newer_v1])
    kit = await kits.open(registry=registry, storage=storage)
    kit.session.resume()
    await spin()
    for _ in range(3):  # more passes: nothing is reported twice
        await kit.conversation()
        await spin()
    codes = sorted((r.code, r.task_id) for r in kit.reports)
    assert codes == [("missing_task", missing.id), ("task_too_old", too_old.id)]
    registry.install(define("later", {"run": complete("later ran")}))
    assert outcome_of(await kit.finished(missing.id))["result"] == "later ran"
    registry.install(define("newer", {"run": complete("v3 ran")}, version=3))
    assert outcome_of(await kit.finished(too_old.id))["result"] == "v3 ran"


async def test_r44_a_failed_migration_blocks_until_another_definition_is_published(
    kits: Kits,
) -> None:
    storage = CrashableStorage()
    conv = storage.mint_id()
    old = stored_task(
        storage,
        conv,
        "job",
        {"status": "pending", "checkpoint": {"phase": "old", "x": 1}},
        task_input={"v": 1},
    )
    await storage.commit([PutConversation(ConversationRecord(conv)), PutTask(old)])
    calls: list[int] = []

    def broken(task_input: Json, checkpoint: JsonObject, version: int) -> tuple[Json, JsonObject]:
        calls.append(version)
        raise ValueError("cannot migrate")

    def working(task_input: Json, checkpoint: JsonObject, version: int) -> tuple[Json, JsonObject]:
        checkpoint["x"] = 999  # a migration mutating its arguments changes no record
        assert isinstance(task_input, dict)
        task_input["v"] = 999
        return {"v": 2}, {"phase": "new", "from": version}

    async def new(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.commit(lambda tx: Completed([task.input, task.state["checkpoint"]]))

    failing = define("job", {"new": new}, version=2, migrate=broken)
    registry = TaskRegistry([failing])
    kit = await kits.open(registry=registry, storage=storage)
    kit.session.resume()
    await spin()
    await kit.conversation()  # another pass
    await spin()
    assert calls == [1]
    assert [(r.code, r.task_id) for r in kit.reports] == [("migration_failed", old.id)]
    assert isinstance(kit.reports[0].error, ValueError)
    registry.install(failing)  # the same object again: not retried
    await spin()
    assert calls == [1]
    assert (await kit.task(old.id)) == old

    fixed = define("job", {"new": new}, version=2, migrate=working)
    registry.install(fixed)
    final = await kit.finished(old.id)
    assert outcome_of(final)["result"] == [{"v": 2}, {"phase": "new", "from": 1}]
    reservation = next(
        info for info in kit.commits for r in info.tasks if r.id == old.id and r.status == "running"
    )
    (reserved,) = [r for r in reservation.tasks if r.id == old.id]
    assert (reserved.version, reserved.input) == (2, {"v": 2})
    assert reserved.state == {"status": "running", "checkpoint": {"phase": "new", "from": 1}}


async def test_r44_a_migration_returning_a_bad_checkpoint_blocks_as_migration_failed(
    kits: Kits,
) -> None:
    storage = CrashableStorage()
    conv = storage.mint_id()
    old = stored_task(storage, conv, "job", {"status": "pending", "checkpoint": {"phase": "a"}})
    healthy = stored_task(
        storage, conv, "other", {"status": "pending", "checkpoint": {"phase": "run"}}
    )
    await storage.commit(
        [PutConversation(ConversationRecord(conv)), PutTask(old), PutTask(healthy)]
    )
    bad = define("job", {"a": complete()}, version=2, migrate=lambda i, c, v: (i, {"no": "phase"}))
    other = define("other", {"run": complete("other ran")})
    kit = await kits.open(bad, other, storage=storage)
    assert outcome_of(await kit.finished(healthy.id))["result"] == "other ran"
    assert (await kit.blocked())[old.id] == "migration_failed"
    assert [(r.code, r.task_id) for r in kit.reports] == [("migration_failed", old.id)]


async def test_r44_a_held_task_is_never_reserved_or_migrated(kits: Kits) -> None:
    storage = CrashableStorage()
    conv = storage.mint_id()
    held = stored_task(
        storage,
        conv,
        "job",
        {"status": "completing", "outcome": {"status": "completed", "result": 0}},
    )
    child = stored_task(
        storage, conv, "child", {"status": "pending", "checkpoint": {"phase": "run"}}, owner=held.id
    )
    await storage.commit([PutConversation(ConversationRecord(conv)), PutTask(held), PutTask(child)])
    migrations: list[int] = []

    def migrate(i: Json, c: JsonObject, v: int) -> tuple[Json, JsonObject]:
        migrations.append(v)
        return i, c

    gate = Gate()
    kit = await kits.open(
        define("job", {"run": complete()}, version=2, migrate=migrate),
        define("child", {"run": gated(gate, complete())}),
        storage=storage,
    )
    kit.session.resume()
    await gate.wait_reached()
    assert (await kit.task(held.id)).version == 1
    gate.open()
    final = await kit.finished(held.id)
    assert final.version == 1
    assert migrations == []
    assert outcome_of(final) == {"status": "completed", "result": 0}


# -- hot reload (R35) --


async def test_r35_a_running_task_hands_over_to_a_new_definition_at_a_phase_boundary(
    kits: Kits,
) -> None:
    gate = Gate()
    ran: list[str] = []

    async def old_first(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.memo("kept", True)
        await gate.passage()
        ran.append("old first")
        await runtime.commit(lambda tx: Running({"phase": "second"}))

    async def old_second(task: TaskRecord, runtime: TaskRuntime) -> None:
        ran.append("old second")
        await runtime.commit(lambda tx: Completed("old"))

    async def new_second(task: TaskRecord, runtime: TaskRuntime) -> None:
        ran.append("new second")
        await runtime.commit(lambda tx: Completed(["new", task.memos]))

    old = define("job", {"first": old_first, "second": old_second})
    new = define("job", {"first": complete("never"), "second": new_second})
    registry = TaskRegistry([old])
    kit = await kits.open(registry=registry)
    task = await kit.create(old, conversation_id=await kit.conversation())
    kit.session.resume()
    await gate.wait_reached()
    registry.install(new)  # the running phase keeps its snapshot until it returns
    gate.open()
    final = await kit.finished(task.id)
    assert ran == ["old first", "new second"]
    assert outcome_of(final)["result"] == ["new", {"kept": True}]
    statuses = [
        (r.status, r.state.get("checkpoint"))
        for i in kit.commits
        for r in i.tasks
        if r.id == task.id
    ]
    assert ("pending", {"phase": "second"}) in statuses  # handed back to pending


async def test_r35_a_definition_that_cannot_take_the_task_is_refused_and_reported_once(
    kits: Kits,
) -> None:
    gate = Gate()
    ran: list[str] = []

    def phase(name: str, then: Any) -> Any:
        async def run(task: TaskRecord, runtime: TaskRuntime) -> None:
            if name == "a":
                await gate.passage()
            ran.append(name)
            await runtime.commit(lambda tx: then)

        return run

    old = define(
        "job",
        {
            "a": phase("a", Running({"phase": "b"})),
            "b": phase("b", Running({"phase": "c"})),
            "c": phase("c", Completed("old kept running")),
        },
    )
    incompatible = define("job", {"a": complete("never")}, version=2)  # no migrate
    registry = TaskRegistry([old])
    kit = await kits.open(registry=registry)
    task = await kit.create(old, conversation_id=await kit.conversation())
    kit.session.resume()
    await gate.wait_reached()
    registry.install(incompatible)
    gate.open()
    final = await kit.finished(task.id)
    assert ran == ["a", "b", "c"]
    assert outcome_of(final)["result"] == "old kept running"
    refusals = [r for r in kit.reports if r.code == "handover_refused"]
    assert len(refusals) == 1
    assert refusals[0].task_id == task.id
