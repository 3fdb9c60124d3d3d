"""The commit line: one line of atomic commits, and what a storage failure does (R1-R3, R8).

Every test runs on ``MemoryStorage`` through ``ControlledStorage`` (support.py),
which records batches and can hold or fail commits, so "while the batch is in
storage" is a state a test can stop in. Nothing sleeps for real.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.kernel import (
    ConversationOwned,
    Ownerless,
    Session,
    SessionFailed,
    Tx,
    define_doc,
)
from pi_durable_tui.storage import SqliteStorage, StorageRejected
from tests.kernel.support import (
    JOB,
    NOTES,
    append,
    collect_published,
    controlled,
    new_conversation,
    open_session,
    settle,
    stored,
)

# -- R1-R3: one line --


async def test_r1_concurrent_commits_run_their_callbacks_one_at_a_time() -> None:
    storage, session = await controlled()
    conversation = await new_conversation(session)
    log: list[str] = []
    session.subscribe(lambda info: log.append(f"published {info.seq}"))

    def commit(index: int) -> Any:
        async def fn(tx: Tx) -> int:
            log.append(f"start {index}")
            for _ in range(3):
                await asyncio.sleep(0)  # give every other commit a chance to barge in
            tx.append(conversation, "note", data=index)
            log.append(f"end {index}")
            return index

        return session.commit(fn)

    results = await asyncio.gather(*(commit(i) for i in range(8)))

    assert results == list(range(8))
    # Each callback starts only after the previous commit was stored and published.
    for index in range(8):
        seq = 2 + index
        position = log.index(f"start {index}")
        assert log[position : position + 3] == [
            f"start {index}",
            f"end {index}",
            f"published {seq}",
        ]
    assert [c for c in storage.calls if c.startswith("committed")] == [
        f"committed {s}" for s in range(1, 10)
    ]


async def test_r3_the_line_is_held_until_storage_settles_and_the_commit_ispublished() -> None:
    storage, session = await controlled()
    conversation = await new_conversation(session)
    log: list[str] = []
    session.subscribe(lambda info: log.append(f"published {info.seq}"))
    storage.hold_commits()
    first = asyncio.ensure_future(append(session, conversation))
    await storage.commit_started.wait()

    async def second_fn(tx: Tx) -> None:
        log.append("second callback")

    second = asyncio.ensure_future(session.commit(second_fn))
    await settle()
    assert log == []  # the second callback waits while the first batch is in storage

    storage.release_commits()
    await asyncio.gather(first, second)
    assert log == ["published 2", "second callback"]


@pytest.fixture
async def sqlite_session(tmp_path: Path) -> AsyncIterator[Session]:
    """A Session on a real SQLite store, closed after the test."""
    session = await open_session(await SqliteStorage.open(tmp_path / "session.sqlite"))
    yield session
    await session.close()


async def test_the_published_seq_moves_with_the_publication_though_sqlite_settles_first(
    sqlite_session: Session,
) -> None:
    session = sqlite_session
    conversation = await new_conversation(session)
    published = collect_published(session)
    start = session.published_seq
    store_ahead: list[int] = []
    published_ahead: list[int] = []
    watching = True

    async def watch() -> None:
        while watching:
            newest = published[-1].seq if published else start
            if session.storage.last_seq > newest:
                store_ahead.append(session.storage.last_seq)
            if session.published_seq != newest:
                published_ahead.append(session.published_seq)
            await asyncio.sleep(0)

    watcher = asyncio.ensure_future(watch())
    for _ in range(10):
        await append(session, conversation)
    watching = False
    await watcher

    assert store_ahead  # why it exists: the store's seq moves before the line takes it in
    assert published_ahead == []
    assert session.published_seq == session.storage.last_seq == start + 10


async def test_r1_one_commit_stores_entries_tasks_and_documents_together() -> None:
    storage, session = await controlled()

    async def fn(tx: Tx) -> tuple[int, int, int]:
        conversation = tx.create_conversation(Ownerless())
        entry = tx.append(conversation.id, "note", data={"n": 1})
        task = tx.create_task(
            JOB, {"x": 1}, ownership=ConversationOwned(), conversation_id=conversation.id
        )
        (await tx.doc(NOTES, conversation.id))["text"] = "hello"
        return conversation.id, entry.id, task.id

    conversation, entry, task = await session.commit(fn)

    assert len(storage.batches) == 1
    seq = storage.last_seq
    assert (await storage.entry(entry)).commit_seq == seq
    assert (await storage.task(task)) is not None
    document = await stored(storage, NOTES, conversation)
    assert document is not None
    assert document.record.created_at == seq
    assert document.value == {"text": "hello", "items": []}


async def test_r1_a_rejected_batch_stores_none_of_its_entries_tasks_or_documents() -> None:
    storage, session = await controlled()
    conversation = await new_conversation(session)
    before = storage.last_seq
    ids: dict[str, int] = {}

    async def fn(tx: Tx) -> None:
        ids["entry"] = tx.append(conversation, "note").id
        ids["task"] = tx.create_task(
            JOB, None, ownership=ConversationOwned(), conversation_id=conversation
        ).id
        (await tx.doc(NOTES, conversation))["text"] = "lost"
        tx.append(999_999, "note")  # no such conversation: storage refuses the batch

    with pytest.raises(StorageRejected, match="Conversation 999999 does not exist"):
        await session.commit(fn)

    assert storage.last_seq == before
    assert await storage.entry(ids["entry"]) is None
    assert await storage.task(ids["task"]) is None
    assert await stored(storage, NOTES, conversation) is None
    assert await session.snapshot(NOTES, conversation) is None


async def test_r2_nothing_is_published_before_storage_confirms_the_commit() -> None:
    storage, session = await controlled()
    conversation = await new_conversation(session)
    await session.commit(lambda tx: tx.doc(NOTES, conversation))
    published = collect_published(session)
    state = await session.document_state(NOTES, conversation)
    watch = await session.watch_doc(NOTES, conversation)
    assert watch is not None
    storage.hold_commits()

    async def fn(tx: Tx) -> None:
        (await tx.doc(NOTES, conversation))["text"] = "stored?"

    pending = asyncio.ensure_future(session.commit(fn))
    await storage.commit_started.wait()
    await settle()

    assert published == []
    assert state.value == {"text": "", "items": []}
    assert watch.pending == 0
    assert await session.snapshot(NOTES, conversation) == {"text": "", "items": []}

    storage.release_commits()
    await pending
    assert [info.seq for info in published] == [storage.last_seq]
    assert state.value == {"text": "stored?", "items": []}
    assert watch.pending == 1


async def test_r7_a_callback_that_raises_persists_and_publishes_nothing() -> None:
    storage, session = await controlled()
    conversation = await new_conversation(session)
    before = storage.last_seq
    published = collect_published(session)

    async def fn(tx: Tx) -> None:
        tx.append(conversation, "note")
        tx.create_conversation(Ownerless())
        (await tx.doc(NOTES, conversation))["text"] = "never"
        raise LookupError("callback failed")

    with pytest.raises(LookupError, match="callback failed"):
        await session.commit(fn)

    assert storage.last_seq == before
    assert len(storage.batches) == 1  # only the conversation's own commit
    assert published == []
    assert await session.snapshot(NOTES, conversation) is None
    assert await append(session, conversation) > 0  # the line was released


async def test_r14_a_commit_that_stages_nothing_goes_neither_to_storage_nor_to_listeners() -> None:
    storage, session = await controlled()
    published = collect_published(session)

    assert await session.commit(lambda tx: "result") == "result"

    assert storage.batches == []
    assert published == []


# -- R8: storage failures --


async def test_r8_storage_rejected_rolls_back_and_the_session_stays_usable() -> None:
    storage, session = await controlled()
    conversation = await new_conversation(session)
    published = collect_published(session)
    storage.fail_next.append(StorageRejected("refused"))

    with pytest.raises(StorageRejected, match="refused"):
        await session.commit(lambda tx: tx.append(conversation, "note"))

    assert published == []
    assert session.failed is None
    assert not session.closed.done()
    entry = await append(session, conversation)
    assert (await storage.entry(entry)) is not None
    assert len(published) == 1


async def test_r8_an_uncertain_storage_failure_poisons_the_session() -> None:
    storage, session = await controlled()
    conversation = await new_conversation(session)
    task = await session.commit(
        lambda tx: tx.create_task(
            JOB, None, ownership=ConversationOwned(), conversation_id=conversation
        )
    )
    published = collect_published(session)
    watch = await session.watch_doc(NOTES, conversation)
    assert watch is None
    await session.commit(lambda tx: tx.doc(NOTES, conversation))
    watch = await session.watch_doc(NOTES, conversation)
    assert watch is not None
    published.clear()
    waiting = asyncio.ensure_future(session.wait_for_task(task.id))  # JOB is not registered
    disk = OSError("disk vanished")
    storage.fail_next.append(disk)
    storage.hold_commits()

    failing = asyncio.ensure_future(session.commit(lambda tx: tx.append(conversation, "note")))
    await storage.commit_started.wait()
    queued = asyncio.ensure_future(session.commit(lambda tx: tx.append(conversation, "note")))
    await settle()
    storage.release_commits()

    with pytest.raises(SessionFailed) as failed:
        await failing
    assert failed.value.__cause__ is disk
    for pending in (queued, waiting):
        with pytest.raises(SessionFailed) as later:
            await pending
        assert later.value.__cause__ is disk
    with pytest.raises(SessionFailed) as after:
        await session.commit(lambda tx: None)
    assert after.value.__cause__ is disk
    with pytest.raises(SessionFailed):
        await session.snapshot(NOTES, conversation)
    assert published == []
    reason = await session.closed
    assert reason.reason == "failed"
    assert reason.error is not None
    assert reason.error.__cause__ is disk
    assert await watch.ended == "session_closed"
    await session.close()


async def test_r8_a_failure_while_preparing_rolls_back_without_poisoning() -> None:
    _, session = await controlled()
    conversation = await new_conversation(session)
    failing = define_doc(
        "failing", initial=dict, checkpoint_when=lambda value, ops, deltas: 1 / 0 > 0
    )
    await session.commit(lambda tx: tx.doc(failing, conversation))

    async def fn(tx: Tx) -> None:
        (await tx.doc(failing, conversation))["x"] = 1

    with pytest.raises(ZeroDivisionError):
        await session.commit(fn)
    assert session.failed is None
    assert await append(session, conversation) > 0


async def test_r8_a_caller_cancelled_while_its_commit_is_in_storage_gets_cancelled_error_but_the_commit_lands() -> (  # noqa: E501
    None
):
    storage, session = await controlled()
    conversation = await new_conversation(session)
    published = collect_published(session)
    storage.hold_commits()
    caller = asyncio.ensure_future(session.commit(lambda tx: tx.append(conversation, "kept")))
    await storage.commit_started.wait()

    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert published == []

    storage.release_commits()
    entry = await append(session, conversation)  # the line is released after the landing
    page = await storage.scan_entries(conversation, order="asc")
    assert [stored.entry.kind for stored in page.items] == ["kept", "note"]
    assert [info.entries[0].kind for info in published] == ["kept", "note"]
    assert page.items[-1].entry.id == entry
    assert session.failed is None


async def test_r8_a_caller_cancelled_inside_its_callback_stores_nothing_and_releases_the_line() -> (
    None
):
    storage, session = await controlled()
    conversation = await new_conversation(session)
    before = storage.last_seq
    entered = asyncio.Event()

    async def fn(tx: Tx) -> None:
        tx.append(conversation, "never")
        entered.set()
        await asyncio.Event().wait()

    caller = asyncio.ensure_future(session.commit(fn))
    await entered.wait()
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller

    assert storage.last_seq == before
    assert await append(session, conversation) > 0
