"""Transactions: reads before writes, created records, the handle's lifetime (R5-R7, R24).

``Tx`` is the author's handle on one commit: table reads are refused after a table
write, creation methods return their records, and the handle (with its drafts) is
revoked when the callback settles. Runs on ``ControlledStorage`` (support.py).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pi_durable_tui.kernel import (
    ConversationOwned,
    KernelError,
    Ownerless,
    ReadAfterWrite,
    SessionHooks,
    TransactionClosed,
    Tx,
)
from pi_durable_tui.storage import ROOT_CONVERSATION_ID, StorageRejected
from pi_durable_tui.storage.records import ConversationRecord
from tests.kernel.support import (
    JOB,
    NOTES,
    ControlledStorage,
    append,
    controlled,
    new_conversation,
    open_session,
)

# -- R5: reads, writes and records --


async def test_r5_table_reads_after_the_first_table_write_raise_read_after_write() -> None:
    storage, session = await controlled()
    conversation = await new_conversation(session)
    entry = await append(session, conversation)
    reads = {
        "conversation": lambda tx: tx.conversation(conversation),
        "entry": lambda tx: tx.entry(entry),
        "task": lambda tx: tx.task(entry),
        "submission": lambda tx: tx.submission(entry),
        "submission_by_request": lambda tx: tx.submission_by_request(conversation, "r"),
        "scan_entries": lambda tx: tx.scan_entries(conversation),
        "scan_tasks": lambda tx: tx.scan_tasks(),
        "scan_conversations": lambda tx: tx.scan_conversations(),
        "scan_submissions": lambda tx: tx.scan_submissions(),
    }
    for name, read in reads.items():

        async def fn(tx: Tx, read: Any = read) -> None:
            await read(tx)  # allowed before any table write
            tx.append(conversation, "note")
            await read(tx)

        with pytest.raises(ReadAfterWrite):
            await session.commit(fn)
        assert storage.last_seq == 2, name


async def test_r5_document_reads_and_writes_stay_allowed_after_table_writes() -> None:
    _, session = await controlled()
    conversation = await new_conversation(session)

    async def fn(tx: Tx) -> JsonCopy:
        tx.append(conversation, "note")
        draft = await tx.doc(NOTES, conversation)
        draft["text"] = "after a table write"
        again = await tx.doc(NOTES, conversation)
        return {"same": again is draft, "text": again["text"]}

    assert await session.commit(fn) == {"same": True, "text": "after a table write"}
    assert await session.snapshot(NOTES, conversation) == {
        "text": "after a table write",
        "items": [],
    }


JsonCopy = dict[str, Any]


async def test_r5_a_refused_table_write_does_not_count_as_a_table_write() -> None:
    _, session = await controlled()
    conversation = await new_conversation(session)

    async def fn(tx: Tx) -> bool:
        with pytest.raises(TypeError, match=r"entry\.data: bytes is not JSON"):
            tx.append(conversation, "note", data=b"raw")  # type: ignore[arg-type]
        return await tx.conversation(conversation) is not None

    assert await session.commit(fn) is True


async def test_r5_creation_methods_return_the_records_they_create() -> None:
    storage, session = await controlled()
    root = await new_conversation(session)
    at = await append(session, root)

    def fn(tx: Tx) -> dict[str, Any]:
        conversation = tx.create_conversation(Ownerless())
        return {
            "conversation": conversation,
            "fork": tx.fork_conversation(root, at, Ownerless()),
            "entry": tx.append(conversation.id, "note", data=[1], head="self"),
            "task": tx.create_task(
                JOB, {"i": 1}, ownership=ConversationOwned(), conversation_id=conversation.id
            ),
            "submission": tx.create_submission(conversation.id, "input", request_id="r1"),
        }

    made = await session.commit(fn)

    assert made["conversation"] == await storage.conversation(made["conversation"].id)
    assert made["fork"] == await storage.conversation(made["fork"].id)
    assert made["fork"].parent.at == at
    entry = made["entry"]
    assert entry.head == entry.id  # "self" resolved to the new entry's own ID
    assert (await storage.entry(entry.id)).entry == entry
    assert made["task"] == await storage.task(made["task"].id)
    assert made["task"].state == {"status": "pending", "checkpoint": {"phase": "run"}}
    assert made["submission"] == await storage.submission(made["submission"].id)
    ids = [made[k].id for k in ("conversation", "fork", "entry", "task", "submission")]
    assert len(set(ids)) == len(ids)


async def test_r24_the_root_conversation_is_id_1_ownerless_and_created_once() -> None:
    storage, session = await controlled()
    root = await session.commit(lambda tx: tx.create_root_conversation())
    assert root == ConversationRecord(ROOT_CONVERSATION_ID)
    assert await storage.conversation(ROOT_CONVERSATION_ID) == root
    with pytest.raises(StorageRejected):
        await session.commit(lambda tx: tx.create_root_conversation())
    assert session.failed is None


# -- R6, R7: the transaction's lifetime --


async def test_r6_a_transaction_used_after_its_callback_settled_raises_transaction_closed() -> None:
    _, session = await controlled()
    conversation = await new_conversation(session)
    leaked: list[Tx] = []

    def keep(tx: Tx) -> None:
        leaked.append(tx)
        tx.append(conversation, "note")

    def keep_and_fail(tx: Tx) -> None:
        leaked.append(tx)
        raise ValueError("no")

    await session.commit(keep)
    with pytest.raises(ValueError, match="no"):
        await session.commit(keep_and_fail)
    await session.commit(leaked.append)  # a commit that writes nothing

    for tx in leaked:
        with pytest.raises(TransactionClosed):
            tx.append(conversation, "note")
        with pytest.raises(TransactionClosed):
            tx.create_conversation(Ownerless())
        with pytest.raises(TransactionClosed):
            await tx.conversation(conversation)
        with pytest.raises(TransactionClosed):
            await tx.doc(NOTES, conversation)
        with pytest.raises(TransactionClosed):
            await tx.retire_doc(NOTES, conversation)


class _YieldingHooks(SessionHooks):
    """A creation hook that yields to the loop, as one reading real storage would."""

    async def conversation_created(self, tx: Tx, record: ConversationRecord) -> None:
        for _ in range(5):
            await asyncio.sleep(0)


async def test_r6_a_transaction_leaked_to_another_task_is_revoked_when_the_callback_returns() -> (
    None
):
    storage = ControlledStorage()
    session = await open_session(storage, hooks=_YieldingHooks())
    outcome: list[BaseException | None] = []

    async def late(tx: Tx, conversation: int) -> None:
        await asyncio.sleep(0)  # runs while the commit prepares
        try:
            tx.append(conversation, "sneaked in")
            outcome.append(None)
        except BaseException as error:
            outcome.append(error)

    spawned: list[asyncio.Future[None]] = []

    def fn(tx: Tx) -> int:
        conversation = tx.create_conversation(Ownerless())
        spawned.append(asyncio.ensure_future(late(tx, conversation.id)))
        return conversation.id

    conversation = await session.commit(fn)
    await asyncio.gather(*spawned)

    assert len(outcome) == 1
    assert isinstance(outcome[0], TransactionClosed)
    page = await storage.scan_entries(conversation)
    assert page.items == []


async def test_r7_a_document_acquisition_pending_when_the_callback_returns_rejects_the_commit() -> (
    None
):
    storage, session = await controlled()
    conversation = await new_conversation(session)
    before = storage.last_seq
    acquisitions: list[asyncio.Future[Any]] = []

    async def fn(tx: Tx) -> None:
        tx.append(conversation, "note")
        acquisitions.append(asyncio.ensure_future(tx.doc(NOTES, conversation)))
        await asyncio.sleep(0)  # the acquisition starts and waits for storage

    storage.hold_reads()
    with pytest.raises(KernelError, match="acquisition was still pending"):
        await session.commit(fn)
    storage.release_reads()
    await asyncio.gather(*acquisitions, return_exceptions=True)

    assert storage.last_seq == before
    assert await session.snapshot(NOTES, conversation) is None
    assert await append(session, conversation) > 0  # the line was released
