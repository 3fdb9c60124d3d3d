"""Conversation views and watches (R123, R124): a screen's state, from commits only."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_durable_tui.ai import ToolCall, faux_response, faux_tool_call
from pi_durable_tui.harness import (
    LIVE_DOC,
    USER,
    CompactionSettings,
    HarnessClosed,
    Input,
    Settings,
    UnknownConversation,
    ViewWatch,
)
from pi_durable_tui.kernel import Tx
from pi_durable_tui.storage import JsonObject
from pi_durable_tui.storage.json_ops import apply_ops
from tests.harness.view_support import (
    Replica,
    RigFactory,
    ViewRig,
    collect,
    entry_ids,
    open_view_rig,
    text_of,
    until,
    within,
)

TAILS = (None, 3, 0)


def bash(command: str) -> ToolCall:
    return faux_tool_call("bash", {"command": command})


def running_tools(view: JsonObject) -> list[str]:
    slots = view["docs"]["pi.live"].get("tools") or []
    return [slot["name"] for slot in slots if slot["status"] == "running"]


async def check_replicas(rig: ViewRig, replicas: dict[int | None, Replica]) -> None:
    """Every replica equals a fresh mount with its tail, and no frame ever disagreed."""
    for tail, replica in replicas.items():
        assert replica.mismatches == []
        assert replica.value == await rig.fresh(tail)


async def test_every_frame_applied_to_the_first_value_gives_a_fresh_mount_through_a_session_R123(
    view_rig: RigFactory,
) -> None:
    rig = await view_rig(
        faux_response("let me look", bash("echo one; sleep 0.3; echo two")),
        faux_response("steered " * 12),
        faux_response("the summary of the work"),
        faux_response("after the summary"),
        tokens_per_second=200,
        settings=Settings(compaction=CompactionSettings(keep_recent_tokens=5)),
    )
    views = {tail: await within(rig.root.view_state(tail)) for tail in TAILS}
    replicas = {tail: Replica.of(view) for tail, view in views.items()}

    first = await within(rig.root.submit(Input("run echo")))
    await until(lambda: running_tools(views[None].value) == ["bash"])
    steer = await within(rig.root.submit(Input("and steer", when_busy="steer")))
    await within(first.wait())
    assert (await within(steer.wait())).status == "done"
    await check_replicas(rig, replicas)

    await within(rig.root.compact())
    await within(rig.root.wait_for_idle())
    assert views[None].value["entries"][0]["kind"] == "pi.compaction"
    await check_replicas(rig, replicas)

    await within((await within(rig.root.submit(Input("go on")))).wait())
    await within(rig.root.reset("handoff"))
    await check_replicas(rig, replicas)
    assert [entry["kind"] for entry in views[None].value["entries"]] == ["pi.reset"]
    assert all(replica.frames > 10 for replica in replicas.values())


async def test_a_view_holds_the_active_entries_and_the_builtin_documents_R123_R71(
    view_rig: RigFactory,
) -> None:
    rig = await view_rig(faux_response("hello there"))
    await within((await within(rig.root.submit(Input("hi")))).wait())
    view = await within(rig.root.view_state())
    context = await within(rig.root.context())
    assert view.value["conversation"] == {"id": 1}
    assert view.value["entries"] == [entry.to_json() for entry in context.entries]
    assert set(view.value["docs"]) == {"pi.agent", "pi.provider", "pi.live", "pi.inbox", "pi.usage"}
    assert view.value["docs"]["pi.live"] == {}
    assert view.value["docs"]["pi.agent"]["model"] == {"provider": "faux", "model_id": "faux-1"}


async def test_a_fork_view_holds_the_parent_entries_through_the_fork_entry_R123_R17(
    view_rig: RigFactory,
) -> None:
    rig = await view_rig(faux_response("one"), faux_response("two"))
    await within((await within(rig.root.submit(Input("first")))).wait())
    at = entry_ids(await rig.fresh())[-1]
    await within((await within(rig.root.submit(Input("second")))).wait())
    fork = await within(rig.root.fork(at))
    view = await within(fork.view_state())
    replica = Replica.of(view)
    assert entry_ids(view.value)[-1] == at
    assert set(view.value["docs"]) == {"pi.agent", "pi.provider", "pi.live", "pi.inbox", "pi.usage"}
    await within(rig.harness.session.commit(lambda tx: tx.append(1, USER)))
    assert replica.frames == 0
    await within(rig.harness.session.commit(lambda tx: tx.append(fork.id, USER)))
    assert replica.value == await rig.fresh(conversation_id=fork.id)
    assert replica.frames == 1


async def test_a_tail_view_keeps_the_head_marker_and_the_newest_n_entries_and_pages_older_ones_R123(
    view_rig: RigFactory,
) -> None:
    rig = await view_rig()
    full, tail = await within(rig.root.view_state()), await within(rig.root.view_state(2))
    sizes: list[int] = []
    tail.subscribe(lambda value, _ops: sizes.append(len(value["entries"])))

    def append(count: int, head: int | None = None) -> Awaitable[None]:
        def write(tx: Tx) -> None:
            for index in range(count):
                tx.append(1, USER, model=[{"role": "user", "content": f"m{index}"}])
            if head is not None:
                tx.append(1, "pi.compaction", head=head, model=[{"role": "user", "content": "s"}])

        return rig.harness.session.commit(write)

    await within(append(6))
    ids = entry_ids(full.value)
    await within(append(0, head=ids[2]))
    assert entry_ids(tail.value)[0] == entry_ids(full.value)[0]  # the marker stays first
    assert entry_ids(tail.value)[1:] == ids[-2:]
    await within(append(3))
    assert max(sizes) <= 3
    assert tail.value == await rig.fresh(2)

    older = await within(tail.older(before=entry_ids(tail.value)[1], limit=10))
    kept = entry_ids(full.value)[1:]
    assert [entry["id"] for entry in reversed(older)] + entry_ids(tail.value)[1:] == kept
    assert await within(tail.older(before=kept[0])) == []


async def test_a_late_joiner_gets_the_current_view_and_nothing_is_replayed_R123(
    view_rig: RigFactory,
) -> None:
    rig = await view_rig(faux_response("one"), faux_response("two"))
    await within((await within(rig.root.submit(Input("first")))).wait())
    early = await within(rig.root.view_state())
    await within((await within(rig.root.submit(Input("second")))).wait())
    late = await within(rig.root.view_state())
    frames: list[object] = []
    late.subscribe(lambda _value, ops: frames.append(ops))
    assert late.value == early.value
    assert [text_of(entry["model"][0]) for entry in late.value["entries"][-2:]] == ["second", "two"]
    assert frames == []


async def test_a_commit_touching_nothing_mounted_makes_no_frame_R123(view_rig: RigFactory) -> None:
    rig = await view_rig()
    other = await within(rig.harness.create_conversation())
    view = await within(rig.root.view_state())
    frames: list[object] = []
    view.subscribe(lambda _value, ops: frames.append(ops))
    await within(other.submit(Input("elsewhere", when_busy="reject")))
    await within(rig.harness.session.commit(lambda tx: tx.append(other.id, USER)))
    assert frames == []
    await within(rig.harness.session.commit(lambda tx: tx.append(1, USER)))
    assert len(frames) == 1


async def test_a_document_op_becomes_a_view_op_under_docs_and_its_kind_R123(
    view_rig: RigFactory,
) -> None:
    rig = await view_rig()
    view = await within(rig.root.view_state())
    frames: list[list[JsonObject]] = []
    view.subscribe(lambda _value, ops: frames.append(ops))

    async def note(tx: Tx) -> None:
        live = await tx.doc(LIVE_DOC, 1)
        live["note"] = "hi"

    await within(rig.harness.session.commit(note))
    assert frames == [[{"op": "set", "path": ["docs", "pi.live", "note"], "value": "hi"}]]


async def test_a_marker_reaching_before_the_range_makes_one_root_replacement_R123_R71(
    view_rig: RigFactory,
) -> None:
    rig = await view_rig()

    def entries(tx: Tx) -> None:
        for index in range(4):
            tx.append(1, USER, model=[{"role": "user", "content": str(index)}])

    await within(rig.harness.session.commit(entries))
    old = entry_ids(await rig.fresh())
    await within(rig.harness.session.commit(lambda tx: tx.append(1, "pi.reset", head="self")))
    view = await within(rig.root.view_state())
    replica = Replica.of(view)
    await within(rig.harness.session.commit(lambda tx: tx.append(1, "pi.reset", head=old[1])))
    await until(lambda: replica.frames == 1)
    assert replica.mismatches == []
    assert replica.value == await rig.fresh()
    assert entry_ids(replica.value)[1:] == old[1:]


@settings(max_examples=25, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["entry", "marker", "self", "doc", "pair"]), st.integers(0, 99)),
        min_size=1,
        max_size=12,
    )
)
def test_random_commits_keep_every_replica_equal_to_a_fresh_mount_and_tails_bounded_R123(
    steps: list[tuple[str, int]],
) -> None:
    async def write(tx: Tx, kind: str, pick: int, history: list[int]) -> None:
        if kind == "entry":
            tx.append(1, USER, model=[{"role": "user", "content": f"e{pick}"}])
        elif kind == "marker" and history:  # a head anywhere: inside the range or before it
            tx.append(1, "pi.compaction", head=history[pick % len(history)])
        elif kind == "self":
            tx.append(1, "pi.reset", head="self")
        elif kind == "doc":
            live = await tx.doc(LIVE_DOC, 1)
            live.setdefault("log", []).append(pick)
        else:
            tx.append(1, USER)
            tx.append(1, USER, model=[{"role": "user", "content": "x"}])

    async def run() -> None:
        with tempfile.TemporaryDirectory() as workdir:
            rig = await open_view_rig(Path(workdir))
            async with contextlib.aclosing(rig):
                views = {tail: await within(rig.root.view_state(tail)) for tail in (None, 2, 0)}
                replicas = {tail: Replica.of(view) for tail, view in views.items()}
                for kind, pick in steps:
                    page = await within(rig.harness.session.storage.scan_entries(1, limit=500))
                    history = [stored.entry.id for stored in page.items]
                    await within(
                        rig.harness.session.commit(
                            partial(write, kind=kind, pick=pick, history=history)
                        )
                    )
                    for tail, replica in replicas.items():
                        fresh = await rig.fresh(tail)
                        await until(partial(_same, replica, fresh), timeout=2)
                        assert replica.mismatches == []
                        assert tail is None or len(replica.value["entries"]) <= tail + 1

    asyncio.run(run())


async def test_a_watch_delivers_one_frame_per_commit_and_its_value_advances_before_each_R124(
    view_rig: RigFactory,
) -> None:
    rig = await view_rig(faux_response("streamed " * 20), tokens_per_second=300)
    watch = await within(rig.root.watch())
    start = watch.value
    seen: list[tuple[int, JsonObject]] = []

    async def consume() -> None:
        replica = start
        async for frame in watch:
            assert watch.value is frame.value
            replica = apply_ops(replica, frame.ops)  # type: ignore[assignment]
            assert replica == frame.value
            seen.append((frame.seq, frame.value))

    consumer = asyncio.ensure_future(consume())
    await within((await within(rig.root.submit(Input("go")))).wait())
    await until(lambda: watch.pending == 0 and bool(seen) and seen[-1][1] == watch.value)
    assert [seq for seq, _ in seen] == sorted({seq for seq, _ in seen})
    assert seen[-1][1] == await rig.fresh()
    assert await within(watch.stop()) == "stopped"
    await within(consumer)


async def test_more_than_100_undelivered_frames_collapse_into_one_root_replacement_R124(
    view_rig: RigFactory,
) -> None:
    rig = await view_rig()
    watch = await within(rig.root.watch())
    start = watch.value
    for index in range(130):
        await within(rig.harness.session.commit(_append_user(index)))
    assert watch.pending == 30
    frames = []

    async def consume(watch: ViewWatch) -> None:
        async for frame in watch:
            frames.append(frame)
            if watch.pending == 0:
                return

    await within(consume(watch))
    assert frames[0].ops == [{"op": "set", "path": [], "value": frames[0].value}]
    replica = start
    for frame in frames:
        replica = apply_ops(replica, frame.ops)  # type: ignore[assignment]
    assert replica == await rig.fresh()


async def test_views_and_watches_end_when_the_harness_closes_and_keep_their_last_value_R27_R123(
    view_rig: RigFactory,
) -> None:
    rig = await view_rig()
    view = await within(rig.root.view_state())
    watch = await within(rig.root.watch())
    seen: list[object] = []
    view.subscribe(lambda _value, ops: seen.append(ops))
    await within(rig.harness.session.commit(lambda tx: tx.append(1, USER)))
    last = view.value

    closing = asyncio.ensure_future(rig.harness.close())
    await asyncio.sleep(0)
    frames = await collect(watch)  # queued before the seal, then the end
    await within(closing)
    assert len(frames) == 1
    assert watch.reason == "session_closed"
    assert view.closed
    assert view.value is last
    assert len(seen) == 1
    with pytest.raises(HarnessClosed):
        await within(rig.root.view_state())


async def test_a_stopped_watch_discards_pending_frames_unless_drained_R124(
    view_rig: RigFactory,
) -> None:
    rig = await view_rig()
    dropped, drained = await within(rig.root.watch()), await within(rig.root.watch())
    await within(rig.harness.session.commit(lambda tx: tx.append(1, USER)))
    assert await within(dropped.stop()) == "stopped"
    assert await within(drained.stop(drain=True)) == "stopped"
    assert await collect(dropped) == []
    assert len(await collect(drained)) == 1
    await within(rig.harness.session.commit(lambda tx: tx.append(1, USER)))
    assert dropped.pending == drained.pending == 0


async def test_views_never_start_scheduling_R23(view_rig: RigFactory) -> None:
    rig = await view_rig()
    await within(rig.harness.session.commit(lambda tx: tx.append(1, USER, model=[])))
    await within(rig.root.view_state())
    await within(rig.root.watch())
    assert (await within(rig.harness.inspect()))["scheduling"] == "paused"


async def test_a_view_of_a_missing_conversation_or_with_a_bad_tail_is_refused(
    view_rig: RigFactory,
) -> None:
    rig = await view_rig()
    with pytest.raises(UnknownConversation, match="Conversation 999 does not exist"):
        await within(rig.harness.conversation(999).view_state())
    with pytest.raises(ValueError, match=r"tail must be None .* got -1"):
        await within(rig.root.watch(tail=-1))


def _append_user(index: int) -> Callable[[Tx], object]:
    return lambda tx: tx.append(1, USER, data=index)


def _same(replica: Replica, fresh: JsonObject) -> bool:
    return replica.value == fresh
