"""Document drafts: JSON only, and no effect once their callback ended (R6).

Where the Python design deliberately differs from the reference, the test pins the
documented behavior: a non-JSON value fails the commit (naming its path) when it
prepares, instead of failing the assignment.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pi_durable_tui.kernel import (
    ConversationOwned,
    DocumentAccessError,
    Ownerless,
    SessionHooks,
    Tx,
    define_doc,
    define_task,
)
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.records import ConversationRecord
from tests.kernel.support import (
    ControlledStorage,
    edit,
    new_conversation,
    open_session,
    stored,
)

NOTES = define_doc("notes", initial=lambda: {"text": "", "items": []})
SETTINGS = define_doc("settings", initial=lambda: {"theme": "dark"}, scope="session")
SCRATCH = define_doc("scratch", initial=dict, scope="task")
LIVE = define_doc("pi.live", initial=dict)


async def _phase(task: Any, runtime: Any) -> None:
    return None


JOB = define_task("job", initial=lambda _: {"phase": "run"}, phases={"run": _phase}, abort=_phase)


async def _setup() -> tuple[ControlledStorage, Any, int]:
    storage = ControlledStorage()
    session = await open_session(storage)
    return storage, session, await new_conversation(session)


# -- R6: JSON only, drafts end with their callback --


async def test_r6_a_non_json_value_in_an_existing_document_fails_the_commit_naming_its_path() -> (
    None
):
    storage, session, conversation = await _setup()
    await edit(session, LIVE, conversation, lambda d: d.update(tools=[{"output": "x"}]))
    before = storage.last_seq

    async def fn(tx: Tx) -> None:
        tx.append(conversation, "note")
        (await tx.doc(LIVE, conversation))["tools"][0]["output"] = b"x"

    with pytest.raises(
        TypeError, match=r'^docs\["pi\.live"\]\.tools\[0\]\.output: bytes is not JSON$'
    ):
        await session.commit(fn)

    assert storage.last_seq == before
    assert await session.snapshot(LIVE, conversation) == {"tools": [{"output": "x"}]}


async def test_r6_a_non_json_value_in_a_new_document_fails_the_commit_naming_its_path() -> None:
    storage, session, conversation = await _setup()
    before = storage.last_seq

    async def fn(tx: Tx) -> None:
        (await tx.doc(LIVE, conversation))["tools"] = [{"output": b"x"}]

    with pytest.raises(
        TypeError, match=r'^docs\["pi\.live"\]\.tools\[0\]\.output: bytes is not JSON$'
    ):
        await session.commit(fn)

    assert storage.last_seq == before
    assert await session.snapshot(LIVE, conversation) is None


async def test_r6_mutating_a_draft_after_its_commit_returned_has_no_effect() -> None:
    storage, session, conversation = await _setup()
    kept: list[JsonObject] = []

    async def fn(tx: Tx) -> None:
        draft = await tx.doc(NOTES, conversation)
        draft["text"] = "committed"
        kept.append(draft)

    await session.commit(fn)
    kept[0]["text"] = "mutated later"
    kept[0]["items"].append("ghost")

    assert await session.snapshot(NOTES, conversation) == {"text": "committed", "items": []}
    await edit(session, NOTES, conversation, lambda d: d["items"].append("real"))
    assert await session.snapshot(NOTES, conversation) == {"text": "committed", "items": ["real"]}
    read = await stored(storage, NOTES, conversation)
    assert read is not None
    assert read.value == {"text": "committed", "items": ["real"]}


class _YieldingHooks(SessionHooks):
    async def conversation_created(self, tx: Tx, record: ConversationRecord) -> None:
        for _ in range(5):
            await asyncio.sleep(0)


async def test_r6_mutating_a_draft_while_the_commit_prepares_has_no_effect() -> None:
    storage = ControlledStorage()
    session = await open_session(storage, hooks=_YieldingHooks())
    conversation = await new_conversation(session)

    async def late(draft: JsonObject) -> None:
        await asyncio.sleep(0)  # runs while the creation hook yields
        draft["text"] = "sneaked in"

    spawned: list[asyncio.Future[None]] = []

    async def fn(tx: Tx) -> None:
        tx.create_conversation(Ownerless())
        draft = await tx.doc(NOTES, conversation)
        draft["text"] = "committed"
        spawned.append(asyncio.ensure_future(late(draft)))

    await session.commit(fn)
    await asyncio.gather(*spawned)

    assert await session.snapshot(NOTES, conversation) == {"text": "committed", "items": []}
    read = await stored(storage, NOTES, conversation)
    assert read is not None
    assert read.value == {"text": "committed", "items": []}


async def test_r10_values_handed_to_readers_are_copies() -> None:
    _, session, conversation = await _setup()
    await edit(session, NOTES, conversation, lambda d: d.update(text="t", items=[{"k": 1}]))
    state = await session.document_state(NOTES, conversation)
    received: list[Any] = []
    state.subscribe(lambda value, ops: received.append((value, ops)))
    watch = await session.watch_doc(NOTES, conversation)
    assert watch is not None

    snapshot = await session.snapshot(NOTES, conversation)
    assert snapshot is not None
    snapshot["items"][0]["k"] = "changed"
    state_value = state.value
    assert state_value is not None
    state_value["items"].append("changed")
    watch_value = watch.value
    assert watch_value is not None
    watch_value["text"] = "changed"
    await edit(session, NOTES, conversation, lambda d: d["items"].append({"k": 2}))
    value, ops = received[0]
    value["items"].clear()
    ops[0]["insert"][0]["k"] = "changed"
    async for frame in watch:
        assert frame.value is not None
        frame.value["text"] = "changed"
        frame.ops.clear()
        break

    expected = {"text": "t", "items": [{"k": 1}, {"k": 2}]}
    assert await session.snapshot(NOTES, conversation) == expected
    assert state.value == expected
    assert watch.value == expected
    fresh = await session.watch_doc(NOTES, conversation)
    assert fresh is not None
    assert fresh.value == expected


async def test_r9_task_documents_need_a_task_and_belong_to_it() -> None:
    _, session, conversation = await _setup()

    async def fn(tx: Tx) -> int:
        task = tx.create_task(
            JOB, None, ownership=ConversationOwned(), conversation_id=conversation
        )
        (await tx.doc(SCRATCH, task.id))["n"] = 1
        return task.id

    task = await session.commit(fn)

    assert await session.snapshot(SCRATCH, task) == {"n": 1}
    with pytest.raises(DocumentAccessError, match="task-scoped; give an ID"):
        await session.snapshot(SCRATCH)
    with pytest.raises(DocumentAccessError, match="session-scoped; give no ID"):
        await session.snapshot(SETTINGS, conversation)
