"""Admission of submissions: request IDs, the busy check, idle placement, queueing (R59, R60, R70).

A known request ID returns the existing submission and writes nothing, per
conversation and across a reopen (R59 a); an idle input is placed and starts a
run, an idle write is appended and done, a busy submission queues as a follow-up,
a steer or a write, or is refused with ``ConversationBusy`` (R59 b-e, R60); a raw
``create_submission`` follows none of these rules (R70). Busy tests hold a run
inside a tool round with ``hold_busy`` (a ``GatedTool`` whose gate is closed).
"""

from __future__ import annotations

import pytest

from pi_durable_tui.ai import faux_response
from pi_durable_tui.harness import (
    INBOX_DOC,
    ConversationBusy,
    EntryDraft,
    Input,
    SubmissionRejected,
    Write,
)
from tests.harness.harness_support import (
    Gate,
    HarnessKit,
    hold_busy,
    last_seq,
    spin,
    within,
)

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
