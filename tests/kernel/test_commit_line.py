"""The commit line, transactions and the Session's life (R1-R8, R27).

Every test runs on ``MemoryStorage`` through ``ControlledStorage`` (support.py),
which records batches and can hold or fail commits, so "while the batch is in
storage" is a state a test can stop in. Nothing sleeps for real.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pi_durable_tui.kernel import (
    CommitInfo,
    Completed,
    ConversationOwned,
    KernelError,
    Ownerless,
    ReadAfterWrite,
    Session,
    SessionClosed,
    SessionFailed,
    SessionHooks,
    TransactionClosed,
    Tx,
    define_doc,
    define_task,
)
from pi_durable_tui.storage import ROOT_CONVERSATION_ID, StorageClosed, StorageRejected
from pi_durable_tui.storage.records import ConversationRecord
from pi_durable_tui.storage.writes import PutEntry
from tests.kernel.support import (
    ControlledStorage,
    append,
    new_conversation,
    open_session,
    settle,
    stored,
)

NOTES = define_doc("notes", initial=lambda: {"text": "", "items": []})


async def _noop_phase(task: Any, runtime: Any) -> None:
    await runtime.commit(lambda tx: Completed())


JOB = define_task(
    "job", initial=lambda _input: {"phase": "run"}, phases={"run": _noop_phase}, abort=_noop_phase
)


async def _controlled() -> tuple[ControlledStorage, Session]:
    storage = ControlledStorage()
    return storage, await open_session(storage)


def _published(session: Session) -> list[CommitInfo]:
    seen: list[CommitInfo] = []
    session.subscribe(seen.append)
    return seen


# -- R1-R3: one line --


async def test_r1_concurrent_commits_run_their_callbacks_one_at_a_time() -> None:
    storage, session = await _controlled()
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


async def test_r3_the_line_is_held_until_storage_settles_and_the_commit_is_published() -> None:
    storage, session = await _controlled()
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


async def test_r1_one_commit_stores_entries_tasks_and_documents_together() -> None:
    storage, session = await _controlled()

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
    storage, session = await _controlled()
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
    storage, session = await _controlled()
    conversation = await new_conversation(session)
    await session.commit(lambda tx: tx.doc(NOTES, conversation))
    published = _published(session)
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
    storage, session = await _controlled()
    conversation = await new_conversation(session)
    before = storage.last_seq
    published = _published(session)

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
    storage, session = await _controlled()
    published = _published(session)

    assert await session.commit(lambda tx: "result") == "result"

    assert storage.batches == []
    assert published == []


# -- R5: reads, writes and records --


async def test_r5_table_reads_after_the_first_table_write_raise_read_after_write() -> None:
    storage, session = await _controlled()
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
    _, session = await _controlled()
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
    _, session = await _controlled()
    conversation = await new_conversation(session)

    async def fn(tx: Tx) -> bool:
        with pytest.raises(TypeError, match=r"entry\.data: bytes is not JSON"):
            tx.append(conversation, "note", data=b"raw")  # type: ignore[arg-type]
        return await tx.conversation(conversation) is not None

    assert await session.commit(fn) is True


async def test_r5_creation_methods_return_the_records_they_create() -> None:
    storage, session = await _controlled()
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
    storage, session = await _controlled()
    root = await session.commit(lambda tx: tx.create_root_conversation())
    assert root == ConversationRecord(ROOT_CONVERSATION_ID)
    assert await storage.conversation(ROOT_CONVERSATION_ID) == root
    with pytest.raises(StorageRejected):
        await session.commit(lambda tx: tx.create_root_conversation())
    assert session.failed is None


# -- R6, R7: the transaction's lifetime --


async def test_r6_a_transaction_used_after_its_callback_settled_raises_transaction_closed() -> None:
    _, session = await _controlled()
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
    storage, session = await _controlled()
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


# -- R8: storage failures --


async def test_r8_storage_rejected_rolls_back_and_the_session_stays_usable() -> None:
    storage, session = await _controlled()
    conversation = await new_conversation(session)
    published = _published(session)
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
    storage, session = await _controlled()
    conversation = await new_conversation(session)
    task = await session.commit(
        lambda tx: tx.create_task(
            JOB, None, ownership=ConversationOwned(), conversation_id=conversation
        )
    )
    published = _published(session)
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
    _, session = await _controlled()
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
    storage, session = await _controlled()
    conversation = await new_conversation(session)
    published = _published(session)
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
    storage, session = await _controlled()
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


# -- R27: close --


async def test_r27_close_seals_admission_and_lets_admitted_commits_settle() -> None:
    storage, session = await _controlled()
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
    storage, session = await _controlled()
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
    storage, session = await _controlled()
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
    _, session = await _controlled()
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
