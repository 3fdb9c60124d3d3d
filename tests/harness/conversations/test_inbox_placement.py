"""Boundaries and placement of queued submissions, stale head writes and reset (R61-R64, R69).

Steers are placed after the current tool round and join the run, follow-ups wait
for the answer and start a successor run, one at a time or all (R61, R64);
writes are placed before user items, user items in ID order (R62); a head write
older than the active range settles ``unanswered``/``stale`` (R63); a reset
appends a self-head marker and, queued while busy, is a final boundary (R69).
Tests hold a run inside a tool round with ``hold_busy``, queue submissions, then
open the gate and read the transcript and the settled records.
"""

from __future__ import annotations

from typing import Any

import pytest

from pi_durable_tui.ai import faux_response, faux_tool_call
from pi_durable_tui.harness import (
    RESET,
    EntryDraft,
    Input,
    Settings,
    ToolApi,
    ToolControl,
    ToolResult,
    Write,
    define_extension,
    define_tool,
)
from tests.harness.harness_support import (
    Gate,
    HarnessKit,
    NoArgs,
    dialogue,
    entry_text,
    hold_busy,
    last_seq,
    settled,
    within,
    write_note,
)

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
