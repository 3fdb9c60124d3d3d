"""Submissions and the inbox: admission, boundaries, placement, settlement, withdrawal (R59-R70).

Most tests hold a run inside a tool round with a ``GatedTool`` (the conversation is
busy while the gate is closed), queue submissions, then open the gate and read
the transcript and the settled records.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from pi_durable_tui.ai import FauxResponse, ModelRef, faux_error, faux_response, faux_tool_call
from pi_durable_tui.harness import (
    INBOX_DOC,
    RESET,
    Conversation,
    ConversationBusy,
    EntryDraft,
    HarnessRuntime,
    Input,
    Settings,
    Submission,
    SubmissionRejected,
    ToolApi,
    ToolControl,
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
    GatedTool,
    HarnessKit,
    entry_text,
    spin,
    within,
    write_note,
)

# -- helpers --


class NoArgs(BaseModel):
    """No arguments."""


async def hold_busy(
    kit: HarnessKit, *then: FauxResponse
) -> tuple[Conversation, GatedTool, Submission]:
    """Start a run whose first tool call waits at a gate; ``then`` answers afterwards."""
    gated = GatedTool()
    kit.install(gated.extension())
    kit.script(faux_response(faux_tool_call("gate", {"label": "first"})), *then)
    root = await kit.root()
    first = await root.submit(Input("go"))
    await gated.gate.wait_reached()
    return root, gated, first


async def dialogue(kit: HarnessKit, conversation: Conversation) -> list[str]:
    """The transcript without system entries, as ``kind: text`` lines."""
    short = {"pi.user": "user", "pi.assistant": "assistant", "pi.tool-result": "result"}
    lines = []
    for entry in await kit.transcript(conversation):
        if entry.kind == "pi.system":
            continue
        kind = short.get(entry.kind, entry.kind)
        if entry.kind == "pi.assistant" and not entry_text(entry):
            lines.append(f"{kind}: <tool call>")
        else:
            lines.append(f"{kind}: {entry_text(entry)}")
    return lines


async def settled(*submissions: Submission) -> list[SubmissionRecord]:
    return [await within(s.wait()) for s in submissions]


async def last_seq(kit: HarnessKit) -> int:
    seq: int = kit.harness.session.storage.last_seq
    return seq


# -- R59 (a): request IDs --


async def test_r59_a_known_request_id_returns_the_existing_submission_and_writes_nothing(
    kit: HarnessKit,
) -> None:
    kit.script(faux_response("answer"))
    root = await kit.root()
    first = await root.submit(Input("hi", request_id="r1"))
    await within(first.wait())
    seq = await last_seq(kit)

    again = await root.submit(Input("something else", request_id="r1"))

    assert again.id == first.id
    assert await last_seq(kit) == seq
    assert kit.faux.call_count == 1


async def test_r59_the_request_id_check_comes_before_the_busy_check(kit: HarnessKit) -> None:
    root, _gated, _first = await hold_busy(kit)
    follow = await root.submit(Input("later", request_id="f"))

    again = await root.submit(Input("later", request_id="f", when_busy="reject"))

    assert again.id == follow.id


async def test_r59_a_request_id_of_another_type_is_refused_naming_the_type(
    kit: HarnessKit,
) -> None:
    root = await kit.root()
    await root.submit(Write(EntryDraft("app.note"), request_id="r1"))
    seq = await last_seq(kit)

    with pytest.raises(
        SubmissionRejected, match="Request r1 already identifies a submission of type write"
    ):
        await root.submit(Input("hi", request_id="r1"))
    assert await last_seq(kit) == seq


async def test_r59_request_ids_are_per_conversation(kit: HarnessKit) -> None:
    root = await kit.root()
    other = await kit.harness.create_conversation()

    first = await root.submit(Write(EntryDraft("app.note"), request_id="same"))
    second = await other.submit(Write(EntryDraft("app.note"), request_id="same"))

    assert first.id != second.id
    assert (first.conversation_id, second.conversation_id) == (root.id, other.id)


async def test_r59_a_request_id_resubmitted_after_a_reopen_creates_no_duplicate(
    sqlite_kit: HarnessKit,
) -> None:
    kit = sqlite_kit
    root, _gated, _first = await hold_busy(kit)
    follow = await root.submit(Input("later", request_id="follow"))
    harness = await kit.reopen()
    root = harness.conversation(root.id)

    again = await root.submit(Input("later", request_id="follow"))

    assert again.id == follow.id
    assert await kit.inbox_ids(root) == [follow.id]


# -- R59 (b), (c), (d), (e), R60: admission --


async def test_r59_a_reject_input_while_busy_raises_conversation_busy_and_writes_nothing(
    kit: HarnessKit,
) -> None:
    root, _gated, first = await hold_busy(kit)
    seq = await last_seq(kit)

    with pytest.raises(ConversationBusy, match="is busy"):
        await root.submit(Input("now", when_busy="reject", request_id="x"))

    assert await last_seq(kit) == seq
    assert (await kit.harness.inspect())["submissions"] == [first.record.to_json()]


async def test_r59_r60_an_idle_input_is_placed_at_once_and_starts_a_run(kit: HarnessKit) -> None:
    kit.model_gate = Gate()
    kit.script(faux_response("hello"))
    root = await kit.root()
    kit.clock.advance(1234)

    submission = await root.submit("hi")
    await kit.model_gate.wait_reached()

    record = submission.record
    assert record.status == "placed"
    [user] = await kit.transcript(root)
    assert (user.id, user.kind) == (record.entry, "pi.user")
    assert user.model == [{"role": "user", "content": "hi", "timestamp": int(kit.clock.now())}]
    run = (await kit.live(root))["run"]
    assert run["inputs"] == [submission.id]
    assert kit.harness.task_graph()["tasks"][str(run["task_id"])]["kind"] == "pi.generation"
    kit.model_gate.open()
    done = await within(submission.wait())
    assert done.status == "done"
    assert await kit.live(root) == {}


async def test_r59_r60_an_idle_write_is_appended_and_done_and_starts_no_run(
    kit: HarnessKit,
) -> None:
    root = await kit.root()

    submission = await root.submit(Write(EntryDraft("app.note", data={"n": 1})))

    assert submission.record.status == "done"
    [entry] = await kit.transcript(root)
    assert (entry.id, entry.kind, entry.data) == (submission.record.entry, "app.note", {"n": 1})
    await spin()
    assert kit.harness.task_graph() == {"tasks": {}}
    assert await kit.live(root) == {}


async def test_r59_r60_busy_submissions_queue_as_follow_ups_by_default_steers_or_writes(
    kit: HarnessKit,
) -> None:
    root, _gated, _first = await hold_busy(kit)

    follow = await root.submit("later")
    steer = await root.submit(Input("now", when_busy="steer"))
    write = await root.submit(Write(EntryDraft("app.note", data={"n": 1})))

    assert [s.record.status for s in (follow, steer, write)] == ["queued"] * 3
    inbox = await root.snapshot(INBOX_DOC)
    assert inbox == {
        "items": [
            {"id": follow.id, "mode": "follow_up", "content": "later"},
            {"id": steer.id, "mode": "steer", "content": "now"},
            {"id": write.id, "mode": "write", "entry": {"kind": "app.note", "data": {"n": 1}}},
        ]
    }


# -- R61, R62, R64: boundaries and placement --


async def test_r61_r64_a_steer_is_placed_after_the_current_tool_round_and_joins_the_run(
    kit: HarnessKit,
) -> None:
    root, gated, first = await hold_busy(kit, faux_response("answer"))
    steer = await root.submit(Input("also this", when_busy="steer"))

    gated.gate.open()
    done_first, done_steer = await settled(first, steer)

    assert await dialogue(kit, root) == [
        "user: go",
        "assistant: <tool call>",
        "result: gate first done",
        "user: also this",
        "assistant: answer",
    ]
    assert done_first.answer == done_steer.answer
    assert done_first.status == done_steer.status == "done"
    assert kit.faux.call_count == 2


async def test_r61_r64_a_follow_up_waits_for_the_answer_and_starts_a_successor_run(
    kit: HarnessKit,
) -> None:
    root, gated, first = await hold_busy(kit, faux_response("answer one"), faux_response("two"))
    follow = await root.submit("and then")

    gated.gate.open()
    done_first, done_follow = await settled(first, follow)

    assert await dialogue(kit, root) == [
        "user: go",
        "assistant: <tool call>",
        "result: gate first done",
        "assistant: answer one",
        "user: and then",
        "assistant: two",
    ]
    assert done_first.answer != done_follow.answer
    assert await kit.live(root) == {}


@pytest.mark.parametrize("mode", ["one-at-a-time", "all"])
async def test_r61_steering_mode_places_the_first_steer_or_every_steer_at_a_boundary(
    kit: HarnessKit, mode: Any
) -> None:
    kit.settings = Settings(steering_mode=mode)
    root, gated, first = await hold_busy(kit, faux_response("a2"), faux_response("a3"))
    one = await root.submit(Input("s1", when_busy="steer"))
    two = await root.submit(Input("s2", when_busy="steer"))

    gated.gate.open()
    records = await settled(first, one, two)
    await within(root.wait_for_idle())

    head = ["user: go", "assistant: <tool call>", "result: gate first done"]
    if mode == "all":
        assert await dialogue(kit, root) == [*head, "user: s1", "user: s2", "assistant: a2"]
        assert len({r.answer for r in records}) == 1
    else:
        assert await dialogue(kit, root) == [
            *head,
            "user: s1",
            "assistant: a2",
            "user: s2",
            "assistant: a3",
        ]
        assert records[0].answer == records[1].answer != records[2].answer


async def test_r61_follow_up_mode_all_places_every_follow_up_in_one_successor_run(
    kit: HarnessKit,
) -> None:
    kit.settings = Settings(follow_up_mode="all")
    root, gated, first = await hold_busy(kit, faux_response("a1"), faux_response("a2"))
    one = await root.submit("f1")
    two = await root.submit("f2")

    gated.gate.open()
    _, done_one, done_two = await settled(first, one, two)

    assert (await dialogue(kit, root))[-4:] == [
        "assistant: a1",
        "user: f1",
        "user: f2",
        "assistant: a2",
    ]
    assert done_one.answer == done_two.answer


async def test_r61_post_tools_places_no_follow_up_even_when_a_steer_is_placed(
    kit: HarnessKit,
) -> None:
    root, gated, first = await hold_busy(kit, faux_response("a1"), faux_response("a2"))
    follow = await root.submit("f1")
    steer = await root.submit(Input("s1", when_busy="steer"))

    gated.gate.open()
    await settled(first, steer, follow)

    assert (await dialogue(kit, root))[2:] == [
        "result: gate first done",
        "user: s1",
        "assistant: a1",
        "user: f1",
        "assistant: a2",
    ]


async def test_r62_writes_are_placed_before_user_items_and_user_items_in_id_order(
    kit: HarnessKit,
) -> None:
    kit.settings = Settings(steering_mode="all")
    root, gated, first = await hold_busy(kit, faux_response("a1"))
    steer_one = await root.submit(Input("s1", when_busy="steer"))
    note = await root.submit(Write(EntryDraft("app.note", model=None, data={"n": 1})))
    steer_two = await root.submit(Input("s2", when_busy="steer"))
    kit.clock.advance(500)

    gated.gate.open()
    await settled(first, steer_one, note, steer_two)

    entries = await kit.transcript(root)
    tail = [(e.kind, entry_text(e)) for e in entries if e.kind != "pi.system"][3:]
    assert tail == [
        ("app.note", ""),
        ("pi.user", "s1"),
        ("pi.user", "s2"),
        ("pi.assistant", "a1"),
    ]
    user = next(e for e in entries if entry_text(e) == "s1")
    assert user.model == [{"role": "user", "content": "s1", "timestamp": int(kit.clock.now())}]
    assert (await within(note.wait())).status == "done"


# -- R63: stale head writes --


async def test_r63_an_immediate_head_write_older_than_the_active_range_settles_stale(
    kit: HarnessKit,
) -> None:
    root = await kit.root()
    first = await write_note(root)
    second = await write_note(root)
    await root.submit(Write(EntryDraft("app.marker", head=second)))
    seq = await last_seq(kit)

    stale = await root.submit(Write(EntryDraft("app.marker", head=first)))
    fresh = await root.submit(Write(EntryDraft("app.marker", head=second)))
    reset = await root.submit(Write(EntryDraft(RESET, head="self")))

    assert (stale.record.status, stale.record.reason, stale.record.entry) == (
        "unanswered",
        "stale",
        None,
    )
    assert await last_seq(kit) == seq + 3  # the stale record is written, without an entry
    assert fresh.record.status == "done"
    assert reset.record.status == "done"  # head "self" is never stale


async def test_r63_queued_head_writes_count_heads_placed_earlier_in_the_same_boundary(
    kit: HarnessKit,
) -> None:
    root, gated, first = await hold_busy(kit, faux_response("a1"))
    entries = await kit.transcript(root)
    user, assistant = entries[0].id, entries[-1].id
    newer = await root.submit(Write(EntryDraft("app.marker", head=assistant)))
    older = await root.submit(Write(EntryDraft("app.marker", head=user)))
    steer = await root.submit(Input("steer", when_busy="steer"))

    gated.gate.open()
    records = await settled(first, newer, older, steer)

    assert [(r.status, r.reason) for r in records] == [
        ("done", None),
        ("done", None),
        ("unanswered", "stale"),
        ("done", None),
    ]
    assert await kit.inbox_ids(root) == []


async def test_r63_a_head_write_queued_before_a_handoff_reset_in_the_same_commit_is_stale(
    kit: HarnessKit,
) -> None:
    gate = Gate()

    async def hand_off(args: NoArgs, api: ToolApi) -> ToolResult:
        await gate.passage()
        return ToolResult(content="handing off", control=ToolControl(handoff="the summary"))

    handoff = define_tool("handoff", description="Hands off.", parameters=NoArgs, execute=hand_off)
    kit.install(define_extension("handoff-tools", tools=[handoff]))
    kit.script(faux_response(faux_tool_call("handoff")))
    root = await kit.root()
    first = await root.submit("go")
    await gate.wait_reached()
    user = (await kit.transcript(root))[0].id
    write = await root.submit(Write(EntryDraft("app.marker", head=user)))

    gate.open()
    done, stale = await settled(first, write)

    assert done.status == "done"
    assert (stale.status, stale.reason) == ("unanswered", "stale")
    view = await root.context()
    assert view.entries[0].kind == RESET


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


# -- R69: reset --


async def test_r69_reset_appends_a_self_head_marker_holding_the_handoff(kit: HarnessKit) -> None:
    root = await kit.root()
    await write_note(root)

    submission = await root.reset("carry on from here")

    assert submission.record.status == "done"
    reset = (await kit.transcript(root))[-1]
    assert (reset.kind, reset.head, reset.id) == (RESET, reset.id, submission.record.entry)
    assert reset.model == [
        {"role": "user", "content": "carry on from here", "timestamp": int(kit.clock.now())}
    ]
    view = await root.context()
    assert [m["content"] for m in view.messages] == ["carry on from here"]


async def test_r61_r64_r69_a_reset_queued_while_busy_is_a_final_boundary_ending_the_run(
    kit: HarnessKit,
) -> None:
    root, gated, first = await hold_busy(kit, faux_response("after reset"))
    reset = await root.reset()
    follow = await root.submit("fresh start")  # a follow-up: placed only because it is final

    gated.gate.open()
    records = await settled(first, reset, follow)

    assert [(r.status, r.reason) for r in records] == [
        ("unanswered", "reset"),
        ("done", None),
        ("done", None),
    ]
    view = await root.context()
    assert [entry.kind for entry in view.entries][:2] == [RESET, "pi.user"]
    assert (await dialogue(kit, root))[-2:] == ["user: fresh start", "assistant: after reset"]


# -- R70: raw submissions --


async def test_r70_a_raw_create_submission_follows_no_admission_rules(kit: HarnessKit) -> None:
    root, gated, first = await hold_busy(kit, faux_response("a1"))

    record = await root.commit(
        lambda tx: tx.create_submission(root.id, "input", status="queued", request_id="raw")
    )

    assert record.status == "queued"
    assert await kit.inbox_ids(root) == []
    gated.gate.open()
    await within(first.wait())
    handle = await kit.harness.submission(record.id)
    assert handle is not None
    assert (await handle.status()).status == "queued"
