"""Settlement, withdrawal, conversation abort and waiting on submissions (R57, R64, R66-R68).

How inputs settle when a run ends without a model, on a model error, a fault or
a failed run with queued follow-ups (R64, R83, R86, R45); withdrawal of one queued
submission (R66); conversation abort, which settles the run, withdraws queued
inputs, keeps queued writes and crosses into background or tool-owned work only
when asked (R57, R67, R48, R42, R107); and waiting on a submission handle (R68).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pi_durable_tui.ai import ModelRef, faux_error, faux_response, faux_tool_call
from pi_durable_tui.harness import (
    INBOX_DOC,
    EntryDraft,
    HarnessRuntime,
    Input,
    Submission,
    ToolApi,
    ToolResult,
    UnknownSubmission,
    Write,
    define_extension,
    define_task,
    define_tool,
)
from pi_durable_tui.kernel import (
    Aborted,
    Completed,
    ConversationOwned,
    TaskGateClosed,
    TaskOwned,
    Tx,
)
from pi_durable_tui.storage import SubmissionRecord, TaskRecord
from tests.harness.harness_support import (
    Gate,
    HarnessKit,
    NoArgs,
    dialogue,
    hold_busy,
    settled,
    spin,
    within,
)

# -- R64: settlement --


async def test_r64_r83_a_run_without_a_model_settles_unanswered_no_model(kit: HarnessKit) -> None:
    root = await kit.root(model=None)

    record = await within((await root.submit("hi")).wait())

    assert (record.status, record.reason, record.detail) == (
        "unanswered",
        "no_model",
        "No model is configured",
    )
    assert record.entry is not None
    assert await kit.live(root) == {}


async def test_r64_r83_a_run_on_an_unknown_model_settles_unanswered_no_model(
    kit: HarnessKit,
) -> None:
    root = await kit.root(model=ModelRef("faux", "missing"))

    record = await within((await root.submit("hi")).wait())

    assert (record.reason, record.detail) == ("no_model", "Model faux/missing is not available")


async def test_r64_r86_a_model_error_settles_unanswered_with_the_error_text(
    kit: HarnessKit,
) -> None:
    kit.script(faux_error("bad request", status=400, retryable=False))
    root = await kit.root()

    record = await within((await root.submit("hi")).wait())

    assert (record.status, record.reason, record.detail) == (
        "unanswered",
        "model_error",
        "bad request",
    )


async def test_r64_an_input_settled_by_someone_else_stays_as_it_was_and_the_run_still_ends(
    kit: HarnessKit,
) -> None:
    root, gated, first = await hold_busy(kit, faux_response("answer"))
    await root.commit(lambda tx: tx.settle_submission(first.id, "unanswered", reason="app"))

    gated.gate.open()
    await within(root.wait_for_idle())

    record = await first.status()
    assert (record.status, record.reason, record.answer) == ("unanswered", "app", None)
    assert (await dialogue(kit, root))[-1] == "assistant: answer"
    assert await kit.live(root) == {}


async def test_r64_queued_follow_ups_wait_across_a_failed_run_until_the_next_submission(
    kit: HarnessKit,
) -> None:
    root, gated, first = await hold_busy(
        kit, faux_error("overloaded", status=400, retryable=False), faux_response("for f1")
    )
    f1 = await root.submit("f1")
    f2 = await root.submit("f2")

    gated.gate.open()
    failed = await within(first.wait())
    waiting = asyncio.ensure_future(f1.wait())
    await spin()

    assert (failed.status, failed.reason) == ("unanswered", "model_error")
    assert not waiting.done()
    assert await kit.inbox_ids(root) == [f1.id, f2.id]
    assert "run" not in await kit.live(root)

    kit.script(faux_response("for f2"), faux_response("for new"))
    new = await root.submit("new")

    assert new.record.status == "queued"  # idle with queued items: a final boundary ran
    records = await settled(f1, f2, new)
    assert [r.status for r in records] == ["done"] * 3
    assert [line for line in await dialogue(kit, root) if line.startswith("user")][-3:] == [
        "user: f1",
        "user: f2",
        "user: new",
    ]
    assert await waiting == records[0]


async def test_r59_a_write_to_an_idle_conversation_with_queued_items_is_placed_by_a_final_boundary(
    kit: HarnessKit,
) -> None:
    root, gated, first = await hold_busy(
        kit, faux_error("nope", status=400, retryable=False), faux_response("for f1")
    )
    f1 = await root.submit("f1")
    gated.gate.open()
    await within(first.wait())

    write = await root.submit(Write(EntryDraft("app.note")))

    assert write.record.status == "done"
    assert (await within(f1.wait())).status == "done"
    assert (await dialogue(kit, root))[-3:] == ["app.note: ", "user: f1", "assistant: for f1"]


async def test_r45_r64_a_faulted_generation_settles_its_inputs_unanswered_faulted(
    kit: HarnessKit,
) -> None:
    def broken_script(*_args: Any) -> Any:
        raise RuntimeError("script bug")

    kit.faux.enqueue(broken_script)
    root = await kit.root()

    record = await within((await root.submit("hi")).wait())

    assert (record.status, record.reason, record.detail) == ("unanswered", "faulted", "script bug")
    assert await kit.live(root) == {}
    await within(root.wait_for_idle())


# -- R66: withdrawal of one submission --


async def test_r66_a_queued_submission_is_withdrawn_and_settles_unanswered_aborted(
    kit: HarnessKit,
) -> None:
    root, gated, first = await hold_busy(kit, faux_response("a1"))
    follow = await root.submit("f1")
    steer = await root.submit(Input("s1", when_busy="steer"))

    assert await follow.abort() == "aborted"
    assert await kit.harness.abort_submission(steer.id, root.id) == "aborted"

    assert await kit.inbox_ids(root) == []
    for record in await settled(follow, steer):
        assert (record.status, record.reason) == ("unanswered", "aborted")
    assert await follow.abort() == "settled"
    assert await first.abort() == "already_placed"
    gated.gate.open()
    await within(first.wait())


async def test_r66_an_unknown_submission_or_one_of_another_conversation_is_not_found(
    kit: HarnessKit,
) -> None:
    _root, gated, first = await hold_busy(kit, faux_response("a1"))
    other = await kit.harness.create_conversation()

    assert await kit.harness.abort_submission(first.id + 1000) == "not_found"
    assert await kit.harness.abort_submission(first.id, other.id) == "not_found"
    assert await kit.harness.abort_submission(first.id) == "already_placed"
    gated.gate.open()
    await within(first.wait())


async def test_r66_the_handle_abort_of_a_vanished_submission_raises_does_not_exist(
    kit: HarnessKit,
) -> None:
    root = await kit.root()
    record = SubmissionRecord(id=999, conversation_id=root.id, type="input", status="queued")
    handle = Submission(kit.harness._services, record)

    with pytest.raises(UnknownSubmission, match="Submission 999 does not exist"):
        await handle.abort()
    with pytest.raises(UnknownSubmission, match="Submission 999 does not exist"):
        await handle.status()


# -- R57, R67: conversation abort --


async def test_r57_r67_abort_settles_the_run_withdraws_queued_inputs_and_keeps_queued_writes(
    kit: HarnessKit,
) -> None:
    root, _gated, first = await hold_busy(kit)
    follow = await root.submit("f1")
    steer = await root.submit(Input("s1", when_busy="steer"))
    write = await root.submit(Write(EntryDraft("app.note")))

    await within(root.abort())

    records = await settled(first, follow, steer)
    assert [(r.status, r.reason) for r in records] == [("unanswered", "aborted")] * 3
    assert await kit.inbox_ids(root) == [write.id]
    assert (await write.status()).status == "queued"
    assert await kit.live(root) == {}
    assert kit.harness.task_graph() == {"tasks": {}}

    kit.script(faux_response("fresh"))
    new = await root.submit("new")
    assert (await within(write.wait())).status == "done"
    assert (await within(new.wait())).status == "done"


def background_job(gate: Gate) -> Any:
    """A task kind that waits at ``gate``; its abort handler ends it ``Aborted``."""

    async def run(task: TaskRecord, runtime: HarnessRuntime) -> None:
        await gate.passage()
        await runtime.commit(lambda tx: Completed(None))

    async def abort(task: TaskRecord, runtime: HarnessRuntime) -> None:
        await runtime.commit(lambda tx: Aborted("stopped"))

    return define_task(
        "app.background", initial=lambda _: {"phase": "run"}, phases={"run": run}, abort=abort
    )


async def test_r57_abort_leaves_background_work_running_unless_asked_to_cross_it(
    kit: HarnessKit,
) -> None:
    gate = Gate()
    job = background_job(gate)
    kit.install(define_extension("jobs", tasks=[job]))
    root = await kit.root()
    definition = kit.harness.definition(job)

    def start(tx: Tx) -> int:
        task = tx.create_task(
            definition,
            None,
            ownership=ConversationOwned(),
            conversation_id=root.id,
            background=True,
        )
        return task.id

    task_id = await root.commit(start)
    kit.harness.resume()
    await gate.wait_reached()

    await within(root.abort())
    assert str(task_id) in kit.harness.task_graph()["tasks"]

    await within(root.abort(background=True))
    record = await within(kit.harness.wait_for_task(task_id))
    assert record.state["outcome"] == {"status": "aborted", "reason": "stopped"}


async def test_r48_an_abort_cascading_into_a_tool_owned_conversation_withdraws_its_queued_inputs(
    kit: HarnessKit,
) -> None:
    gate = Gate()
    children: list[tuple[int, int]] = []

    async def spawn(args: NoArgs, api: ToolApi) -> ToolResult:
        async def create(tx: Tx) -> None:
            child = tx.create_conversation(TaskOwned(api.task_id))
            queued = tx.create_submission(child.id, "input")
            inbox = await tx.doc(INBOX_DOC, child.id)
            inbox["items"].append({"id": queued.id, "mode": "follow_up", "content": "later"})
            children.append((child.id, queued.id))

        await api.commit(create)
        await gate.passage()
        return ToolResult(content="spawned")

    spawner = define_tool("spawn", description="s", parameters=NoArgs, execute=spawn)
    kit.install(define_extension("spawner", tools=[spawner]))
    kit.script(faux_response(faux_tool_call("spawn")))
    root = await kit.root()
    await root.submit("go")
    await gate.wait_reached()
    [(child_id, queued_id)] = children

    await within(root.abort())

    handle = await kit.harness.submission(queued_id)
    assert handle is not None
    record = await handle.status()
    assert (record.status, record.reason) == ("unanswered", "aborted")
    assert await kit.inbox_ids(kit.harness.conversation(child_id)) == []


async def test_r42_r107_a_task_conversation_handle_takes_only_inputs_and_dies_with_its_invocation(
    kit: HarnessKit,
) -> None:
    kept: list[Any] = []

    async def grab(args: NoArgs, api: ToolApi) -> ToolResult:
        handle = api.conversation(api.conversation_id)
        with pytest.raises(TypeError, match="accepts only Input submissions"):
            await handle.submit(Write(EntryDraft("app.note")))  # type: ignore[arg-type]
        kept.append(handle)
        return ToolResult(content="grabbed")

    grabber = define_tool("grab", description="g", parameters=NoArgs, execute=grab)
    kit.install(define_extension("grabber", tools=[grabber]))
    kit.script(faux_response(faux_tool_call("grab")), faux_response("done"))
    root = await kit.root()
    await within((await root.submit("go")).wait())

    [handle] = kept
    with pytest.raises(TaskGateClosed):
        await handle.submit(Input("too late"))


# -- R68: waiting --


async def test_r68_cancelling_a_wait_cancels_only_that_wait(kit: HarnessKit) -> None:
    _root, gated, first = await hold_busy(kit, faux_response("answer"))
    cancelled = asyncio.ensure_future(first.wait())
    kept = asyncio.ensure_future(first.wait())
    await spin()

    cancelled.cancel()
    gated.gate.open()

    assert (await within(kept)).status == "done"
    assert cancelled.cancelled()


async def test_r68_submission_returns_none_for_an_unknown_id_and_a_handle_after_reopen(
    sqlite_kit: HarnessKit,
) -> None:
    kit = sqlite_kit
    kit.script(faux_response("answer"))
    root = await kit.root()
    done = await within((await root.submit("hi")).wait())
    harness = await kit.reopen()

    assert await harness.submission(done.id + 1000) is None
    handle = await harness.submission(done.id)
    assert handle is not None
    assert await handle.status() == done
    assert await within(handle.wait()) == done
