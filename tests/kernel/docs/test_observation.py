"""Document states and watches: committed values for observers (R2, R124).

States follow an address and see only committed values, with the operations of
each commit. Watches follow one incarnation as a bounded, ordered stream of
frames that commits never wait for.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pi_durable_tui.kernel import DocumentWatch, Report, Session, Tx, WatchFrame, define_doc
from pi_durable_tui.kernel.docs import MAX_PENDING_FRAMES
from pi_durable_tui.storage.json_ops import JsonObject, Op, apply_ops, copy_json
from tests.kernel.support import (
    ControlledStorage,
    edit,
    new_conversation,
    open_session,
    settle,
)

NOTES = define_doc("notes", initial=lambda: {"text": "", "items": []})


async def _setup(**options: Any) -> tuple[ControlledStorage, Any, int]:
    storage = ControlledStorage()
    session = await open_session(storage, **options)
    conversation = await new_conversation(session)
    await session.commit(lambda tx: tx.doc(NOTES, conversation))
    return storage, session, conversation


async def _watch(session: Session, conversation: int) -> DocumentWatch:
    watch = await session.watch_doc(NOTES, conversation)
    assert watch is not None
    return watch


def _grow(text: str) -> Any:
    def change(draft: JsonObject) -> None:
        draft["text"] += text

    return change


# -- states --


async def test_r124_a_state_sees_committed_values_only_with_the_operations_of_each_commit() -> None:
    _, session, conversation = await _setup()
    state = await session.document_state(NOTES, conversation)
    received: list[tuple[Any, list[Op]]] = []
    state.subscribe(lambda value, ops: received.append((value, ops)))

    await edit(session, NOTES, conversation, _grow("a"))

    async def rejected(tx: Tx) -> None:
        (await tx.doc(NOTES, conversation))["text"] = "rejected"
        tx.append(999_999, "note")

    with pytest.raises(Exception, match="does not exist"):
        await session.commit(rejected)
    await edit(session, NOTES, conversation, lambda d: d["items"].append(1))

    assert received == [
        ({"text": "a", "items": []}, [{"op": "append", "path": ["text"], "text": "a"}]),
        (
            {"text": "a", "items": [1]},
            [{"op": "splice", "path": ["items"], "index": 0, "remove": 0, "insert": [1]}],
        ),
    ]
    assert state.value == {"text": "a", "items": [1]}


async def test_r124_a_late_joiner_starts_from_the_current_value() -> None:
    _, session, conversation = await _setup()
    for text in ("a", "b", "c"):
        await edit(session, NOTES, conversation, _grow(text))

    state = await session.document_state(NOTES, conversation)
    received: list[Any] = []
    state.subscribe(lambda value, ops: received.append(value))
    watch = await _watch(session, conversation)

    assert state.value == {"text": "abc", "items": []}
    assert received == []
    assert watch.value == {"text": "abc", "items": []}
    assert watch.pending == 0


async def test_r124_a_state_follows_its_address_across_retirement_and_recreation() -> None:
    _, session, conversation = await _setup()
    state = await session.document_state(NOTES, conversation)
    values: list[Any] = []
    state.subscribe(lambda value, ops: values.append(value))

    async def retire(tx: Tx) -> None:
        await tx.retire_doc(NOTES, conversation)

    await session.commit(retire)
    await edit(session, NOTES, conversation, _grow("again"))

    assert values == [None, {"text": "again", "items": []}]


async def test_r124_a_state_stays_current_after_its_last_subscriber_leaves() -> None:
    _, session, conversation = await _setup()
    state = await session.document_state(NOTES, conversation)
    unsubscribe = state.subscribe(lambda value, ops: None)
    await edit(session, NOTES, conversation, _grow("a"))
    unsubscribe()
    unsubscribe()  # idempotent

    await edit(session, NOTES, conversation, _grow("b"))

    assert state.value == {"text": "ab", "items": []}


async def test_r124_a_raising_state_subscriber_is_dropped_and_breaks_no_other_observer() -> None:
    reports: list[Report] = []
    _, session, conversation = await _setup(on_report=reports.append)
    state = await session.document_state(NOTES, conversation)
    calls: list[str] = []

    def broken(value: Any, ops: list[Op]) -> None:
        calls.append("broken")
        raise RuntimeError("subscriber broke")

    state.subscribe(broken)
    state.subscribe(lambda value, ops: calls.append("healthy"))
    watch = await _watch(session, conversation)

    await edit(session, NOTES, conversation, _grow("a"))
    await edit(session, NOTES, conversation, _grow("b"))

    assert calls == ["broken", "healthy", "healthy"]
    assert state.value == {"text": "ab", "items": []}
    assert watch.pending == 2
    assert [r.code for r in reports] == ["listener_error"]
    assert isinstance(reports[0].error, RuntimeError)


# -- watches --


async def test_r124_a_watch_delivers_each_commits_operations_in_order() -> None:
    _, session, conversation = await _setup()
    await edit(session, NOTES, conversation, _grow("start"))
    watch = await _watch(session, conversation)
    acquired = watch.value
    frames: list[WatchFrame] = []
    watch.start(frames.append)

    await edit(session, NOTES, conversation, _grow(" one"))
    await edit(session, NOTES, conversation, lambda d: d["items"].append({"n": 1}))
    await edit(session, NOTES, conversation, lambda d: d.update(text="reset", extra=True))
    await edit(session, NOTES, conversation, lambda d: d["items"][0].update(n=2))
    await settle()

    assert [len(f.ops) for f in frames] == [1, 1, 2, 1]
    assert [f.seq for f in frames] == sorted({f.seq for f in frames})
    value: Any = acquired
    for frame in frames:
        value = apply_ops(copy_json(value), frame.ops)
        assert value == frame.value
    newest = await session.snapshot(NOTES, conversation)
    assert value == newest
    assert watch.value == newest
    assert await watch.stop() == "stopped"


async def test_r124_watch_value_is_the_acquisition_value_until_frames_are_delivered() -> None:
    _, session, conversation = await _setup()
    watch = await _watch(session, conversation)
    await edit(session, NOTES, conversation, _grow("a"))
    await edit(session, NOTES, conversation, _grow("b"))

    assert watch.value == {"text": "", "items": []}
    assert watch.pending == 2
    values: list[Any] = []
    watch.start(lambda frame: values.append(watch.value))
    await settle()

    assert values == [{"text": "a", "items": []}, {"text": "ab", "items": []}]


async def test_r124_commits_never_wait_for_a_slow_watcher() -> None:
    _, session, conversation = await _setup()
    watch = await _watch(session, conversation)
    never = asyncio.Event()

    async def stuck(frame: WatchFrame) -> None:
        await never.wait()

    watch.start(stuck)
    for _ in range(10):
        await edit(session, NOTES, conversation, _grow("x"))

    assert await session.snapshot(NOTES, conversation) == {"text": "x" * 10, "items": []}
    await watch.stop()


async def test_r124_a_slow_watcher_keeps_at_most_100_frames_then_one_with_the_newest_value() -> (
    None
):
    _, session, conversation = await _setup()
    watch = await _watch(session, conversation)
    release = asyncio.Event()
    frames: list[WatchFrame] = []

    async def slow(frame: WatchFrame) -> None:
        frames.append(frame)
        await release.wait()

    watch.start(slow)
    await edit(session, NOTES, conversation, _grow("0,"))
    await settle()
    assert len(frames) == 1  # being delivered: not counted as undelivered
    for n in range(1, MAX_PENDING_FRAMES + 1):
        await edit(session, NOTES, conversation, _grow(f"{n},"))
    assert watch.pending == MAX_PENDING_FRAMES

    await edit(session, NOTES, conversation, _grow("collapsed,"))
    assert watch.pending == 1
    await edit(session, NOTES, conversation, _grow("after"))
    assert watch.pending == 2
    release.set()
    await settle(50)

    newest = await session.snapshot(NOTES, conversation)
    assert len(frames) == 3
    collapsed = frames[1]
    assert collapsed.ops == [{"op": "set", "path": [], "value": collapsed.value}]
    assert collapsed.value is not None
    assert str(collapsed.value["text"]).endswith("100,collapsed,")
    assert frames[2].ops == [{"op": "append", "path": ["text"], "text": "after"}]
    assert frames[2].value == newest
    assert watch.value == newest
    await watch.stop()


async def test_r124_stop_is_idempotent_unregisters_and_discards_pending_frames() -> None:
    _, session, conversation = await _setup()
    watch = await _watch(session, conversation)
    release = asyncio.Event()
    delivered: list[WatchFrame] = []
    finished: list[WatchFrame] = []

    async def slow(frame: WatchFrame) -> None:
        delivered.append(frame)
        await release.wait()
        finished.append(frame)

    watch.start(slow)
    await edit(session, NOTES, conversation, _grow("a"))
    await settle()
    await edit(session, NOTES, conversation, _grow("b"))
    assert watch.pending == 1

    assert await watch.stop() == "stopped"
    assert watch.pending == 0
    await edit(session, NOTES, conversation, _grow("c"))
    assert watch.pending == 0
    release.set()
    await settle()

    assert len(delivered) == 1
    assert finished == delivered  # the running callback was not aborted
    assert await watch.stop() == "stopped"
    assert watch.value == {"text": "a", "items": []}


async def test_r124_a_retired_document_ends_its_watch_after_a_final_none_frame() -> None:
    _, session, conversation = await _setup()
    watch = await _watch(session, conversation)
    frames: list[WatchFrame] = []

    async def listener(frame: WatchFrame) -> None:
        await asyncio.sleep(0)
        frames.append(frame)

    watch.start(listener)

    async def retire(tx: Tx) -> None:
        (await tx.doc(NOTES, conversation))["text"] = "last words"
        await tx.retire_doc(NOTES, conversation)

    await session.commit(retire)

    assert await watch.ended == "retired"
    assert [f.value for f in frames] == [{"text": "last words", "items": []}, None]
    assert frames[-1].ops == [{"op": "set", "path": [], "value": None}]
    assert watch.value is None
    assert await watch.stop() == "retired"


async def test_r124_a_watch_never_follows_a_recreated_incarnation() -> None:
    _, session, conversation = await _setup()
    watch = await _watch(session, conversation)

    async def retire(tx: Tx) -> None:
        await tx.retire_doc(NOTES, conversation)

    await session.commit(retire)
    await edit(session, NOTES, conversation, _grow("new incarnation"))
    frames = [frame async for frame in watch]

    assert [f.value for f in frames] == [None]
    assert await watch.ended == "retired"
    fresh = await _watch(session, conversation)
    assert fresh.record.id != watch.record.id
    assert fresh.value == {"text": "new incarnation", "items": []}


async def test_r124_a_raising_listener_ends_the_watch_with_listener_error() -> None:
    _, session, conversation = await _setup()
    watch = await _watch(session, conversation)
    seen: list[WatchFrame] = []

    def listener(frame: WatchFrame) -> None:
        seen.append(frame)
        raise ValueError("listener broke")

    await edit(session, NOTES, conversation, _grow("a"))
    await edit(session, NOTES, conversation, _grow("b"))
    watch.start(listener)

    assert await watch.ended == "listener_error"
    assert isinstance(watch.error, ValueError)
    assert len(seen) == 1
    assert watch.pending == 0  # pending work was discarded
    await edit(session, NOTES, conversation, _grow("c"))
    assert watch.pending == 0
    assert await watch.stop() == "listener_error"


async def test_r124_a_watch_cannot_be_started_twice() -> None:
    _, session, conversation = await _setup()
    watch = await _watch(session, conversation)
    watch.start(lambda frame: None)
    with pytest.raises(RuntimeError, match="already started"):
        watch.start(lambda frame: None)
    await watch.stop()
