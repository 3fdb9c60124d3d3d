"""Closing a Session: the seal, admitted commits, observers, storage (R27).

Runs on ``ControlledStorage`` (support.py), which can hold commits in storage so a
test can close while a batch is in flight. Nothing sleeps for real.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pi_durable_tui.kernel import (
    SessionClosed,
    Tx,
)
from pi_durable_tui.storage import StorageClosed
from pi_durable_tui.storage.writes import PutEntry
from tests.kernel.support import (
    NOTES,
    controlled,
    new_conversation,
    settle,
)

# -- R27: close --


async def test_r27_close_seals_admission_and_lets_admitted_commits_settle() -> None:
    storage, session = await controlled()
    conversation = await new_conversation(session)
    release = asyncio.Event()

    async def slow(tx: Tx) -> str:
        await release.wait()
        tx.append(conversation, "admitted first")
        return "first"

    first = asyncio.ensure_future(session.commit(slow))
    await settle()
    second = asyncio.ensure_future(
        session.commit(lambda tx: tx.append(conversation, "admitted second"))
    )
    await settle()
    closing = asyncio.ensure_future(session.close())
    await settle()

    with pytest.raises(SessionClosed):
        await session.commit(lambda tx: tx.append(conversation, "too late"))
    assert not closing.done()
    release.set()
    assert await first == "first"
    assert (await second).kind == "admitted second"
    await closing

    assert storage.closes == 1
    with pytest.raises(StorageClosed):
        await storage.inner.conversation(conversation)
    kinds = [b[0].record.kind for b in storage.batches if isinstance(b[0], PutEntry)]
    assert kinds == ["admitted first", "admitted second"]
    assert (await session.closed).reason == "closed"


async def test_r27_close_ends_states_and_watches_at_the_seal() -> None:
    storage, session = await controlled()
    conversation = await new_conversation(session)
    await session.commit(lambda tx: tx.doc(NOTES, conversation))
    state = await session.document_state(NOTES, conversation)
    seen: list[Any] = []
    state.subscribe(lambda value, ops: seen.append(value))
    watch = await session.watch_doc(NOTES, conversation)
    assert watch is not None
    storage.hold_commits()

    async def in_storage_at_close(tx: Tx) -> None:
        (await tx.doc(NOTES, conversation))["text"] = "settled during close"

    admitted = asyncio.ensure_future(session.commit(in_storage_at_close))
    await storage.commit_started.wait()
    closing = asyncio.ensure_future(session.close())
    storage.release_commits()  # the batch lands just after close() sealed the Session
    await admitted
    await closing

    assert "committed 3" in storage.calls  # the admitted commit did land
    assert await watch.ended == "session_closed"
    assert state.value == {"text": "", "items": []}  # the last value before the seal
    assert seen == []
    assert watch.value == {"text": "", "items": []}
    assert watch.pending == 0


async def test_r27_later_close_calls_await_the_same_shutdown_even_if_one_is_cancelled() -> None:
    storage, session = await controlled()
    conversation = await new_conversation(session)
    release = asyncio.Event()

    async def slow(tx: Tx) -> None:
        await release.wait()
        tx.append(conversation, "note")

    busy = asyncio.ensure_future(session.commit(slow))
    await settle()
    first = asyncio.ensure_future(session.close())
    second = asyncio.ensure_future(session.close())
    await settle()
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert not second.done()

    release.set()
    await busy
    await second
    await session.close()

    assert storage.closes == 1
    assert (await session.closed).reason == "closed"


async def test_r27_document_reads_work_while_closing_and_raise_session_closed_after() -> None:
    _, session = await controlled()
    conversation = await new_conversation(session)
    await session.commit(lambda tx: tx.doc(NOTES, conversation))
    release = asyncio.Event()

    async def slow(tx: Tx) -> None:
        await release.wait()

    busy = asyncio.ensure_future(session.commit(slow))
    await settle()
    closing = asyncio.ensure_future(session.close())
    await settle()

    assert await session.snapshot(NOTES, conversation) == {"text": "", "items": []}
    release.set()
    await busy
    await closing
    for read in (
        lambda: session.snapshot(NOTES, conversation),
        lambda: session.document_state(NOTES, conversation),
        lambda: session.watch_doc(NOTES, conversation),
    ):
        with pytest.raises(SessionClosed):
            await read()
