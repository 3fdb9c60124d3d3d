"""Documents: creation, memoized acquisition, retirement, checkpoints, versions, history.

Rules R9, R10, R13-R16 and R20. Where the Python design deliberately differs from
the reference, the test pins the documented behavior: drafts are diffed when the
callback returns, so an assignment of an equal value writes nothing (R14).
Drafts themselves (JSON only, detached when their callback ends, R6) are in
``test_drafts``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pi_durable_tui.kernel import (
    DocumentAccessError,
    Tx,
    WatchFrame,
    define_doc,
)
from pi_durable_tui.storage.json_ops import JsonObject, Op
from pi_durable_tui.storage.writes import ChangeDocument, RetireDocument
from tests.kernel.support import (
    ControlledStorage,
    append,
    edit,
    new_conversation,
    open_session,
    settle,
    stored,
)

NOTES = define_doc("notes", initial=lambda: {"text": "", "items": []})
HISTORY = define_doc("history", initial=lambda: {"n": 0}, history="rewindable", fork="asOf")
SETTINGS = define_doc("settings", initial=lambda: {"theme": "dark"}, scope="session")
SCRATCH = define_doc("scratch", initial=dict, scope="task")


async def _setup() -> tuple[ControlledStorage, Any, int]:
    storage = ControlledStorage()
    session = await open_session(storage)
    return storage, session, await new_conversation(session)


# -- R9: creation and acquisition --


async def test_r9_reads_of_an_absent_document_return_none_and_create_nothing() -> None:
    storage, session, conversation = await _setup()
    before = storage.last_seq

    assert await session.snapshot(NOTES, conversation) is None
    state = await session.document_state(NOTES, conversation)
    assert state.value is None
    assert await session.watch_doc(NOTES, conversation) is None
    assert await session.snapshot(SETTINGS) is None

    assert storage.last_seq == before
    assert await stored(storage, NOTES, conversation) is None
    assert await stored(storage, SETTINGS, None) is None


async def test_r9_only_tx_doc_creates_a_missing_document_from_its_initial_value() -> None:
    storage, session, conversation = await _setup()
    state = await session.document_state(NOTES, conversation)

    value = await session.commit(lambda tx: tx.doc(NOTES, conversation))

    assert value == {"text": "", "items": []}
    document = await stored(storage, NOTES, conversation)
    assert document is not None
    assert document.record.created_at == storage.last_seq
    assert document.value == {"text": "", "items": []}
    assert document.deltas_since_base == 0
    assert state.value == {"text": "", "items": []}


async def test_r9_the_first_acquisition_of_an_address_is_memoized_in_a_commit() -> None:
    _, session, conversation = await _setup()
    await session.commit(lambda tx: tx.doc(NOTES, conversation))

    async def fn(tx: Tx) -> bool:
        first = await tx.doc(NOTES, conversation)
        first["text"] = "one"
        second = await tx.doc(NOTES, conversation)
        second["text"] += " two"
        return first is second

    assert await session.commit(fn) is True
    assert await session.snapshot(NOTES, conversation) == {"text": "one two", "items": []}


async def test_r9_concurrent_acquisitions_of_one_address_share_one_draft_and_one_read() -> None:
    storage, session, conversation = await _setup()
    await session.commit(lambda tx: tx.doc(NOTES, conversation))

    async def fn(tx: Tx) -> bool:
        storage.hold_reads()
        both = asyncio.gather(tx.doc(NOTES, conversation), tx.doc(NOTES, conversation))
        await settle()
        storage.release_reads()
        first, second = await both
        return first is second

    # A fresh Session has nothing cached, so the acquisition really reads storage.
    fresh = await open_session(storage)
    reads_before = storage.calls.count("find_document")
    assert await fresh.commit(fn) is True
    assert storage.calls.count("find_document") - reads_before == 1


async def test_a_cached_document_is_drafted_without_a_read_or_a_task_issue_14() -> None:
    storage, session, conversation = await _setup()
    await session.commit(lambda tx: tx.doc(NOTES, conversation))  # now cached
    loop = asyncio.get_running_loop()
    created: list[Any] = []

    def counting(loop_: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> Any:
        created.append(getattr(coro, "__qualname__", coro))
        return asyncio.Task(coro, loop=loop_, **kwargs)

    async def fn(tx: Tx) -> None:
        loop.set_task_factory(counting)
        try:
            (await tx.doc(NOTES, conversation))["text"] = "cached"
        finally:
            loop.set_task_factory(None)

    calls_before = len(storage.calls)
    await session.commit(fn)

    assert created == []  # no load task to share: nothing was awaited
    reads = [c for c in storage.calls[calls_before:] if not c.startswith("commit")]
    assert reads == []
    assert await session.snapshot(NOTES, conversation) == {"text": "cached", "items": []}


async def test_r9_the_first_seed_wins_for_a_missing_family_member() -> None:
    storage, session, conversation = await _setup()
    seeds: list[Any] = []

    def initial(seed: Any) -> JsonObject:
        seeds.append(seed)
        return {"seed": seed}

    files = define_doc("files", initial=initial, family=True)

    async def fn(tx: Tx) -> list[JsonObject]:
        storage.hold_reads()
        both = asyncio.gather(
            tx.doc(files, conversation, "a.py", seed="first"),
            tx.doc(files, conversation, "a.py", seed="second"),
        )
        await settle()
        storage.release_reads()
        drafts = await both
        later = await tx.doc(files, conversation, "a.py", seed="third")
        return [*drafts, later]

    drafts = await session.commit(fn)

    assert drafts == [{"seed": "first"}] * 3
    assert seeds == ["first"]
    assert await session.snapshot(files, conversation, "a.py") == {"seed": "first"}
    with pytest.raises(DocumentAccessError, match="is a family; give a key"):
        await session.snapshot(files, conversation)


async def test_r9_retire_persists_the_final_content_then_retires() -> None:
    storage, session, conversation = await _setup()
    await edit(session, NOTES, conversation, lambda d: d.update(text="draft"))
    watch = await session.watch_doc(NOTES, conversation)
    assert watch is not None
    frames: list[WatchFrame] = []
    watch.start(frames.append)

    async def fn(tx: Tx) -> bool:
        (await tx.doc(NOTES, conversation))["text"] = "final"
        return await tx.retire_doc(NOTES, conversation)

    assert await session.commit(fn) is True
    assert await watch.ended == "retired"

    batch = storage.batches[-1]
    assert [type(w) for w in batch] == [ChangeDocument, RetireDocument]
    assert [(f.value, f.ops) for f in frames] == [
        ({"text": "final", "items": []}, [{"op": "set", "path": ["text"], "value": "final"}]),
        (None, [{"op": "set", "path": [], "value": None}]),
    ]
    assert await session.snapshot(NOTES, conversation) is None
    assert await stored(storage, NOTES, conversation) is None


async def test_r9_retiring_an_absent_document_does_nothing() -> None:
    storage, session, conversation = await _setup()
    before = storage.last_seq

    async def fn(tx: Tx) -> bool:
        return await tx.retire_doc(NOTES, conversation)

    assert await session.commit(fn) is False
    assert storage.last_seq == before


async def test_r9_a_tx_doc_after_retire_in_the_same_commit_creates_a_new_incarnation() -> None:
    storage, session, conversation = await _setup()
    await edit(session, NOTES, conversation, lambda d: d.update(text="old"))
    old = await stored(storage, NOTES, conversation)
    assert old is not None

    async def fn(tx: Tx) -> JsonObject:
        await tx.retire_doc(NOTES, conversation)
        fresh = await tx.doc(NOTES, conversation)
        fresh["items"].append("new")
        return fresh

    assert await session.commit(fn) == {"text": "", "items": ["new"]}

    seq = storage.last_seq
    new = await stored(storage, NOTES, conversation)
    assert new is not None
    assert new.record.id != old.record.id
    assert new.record.created_at == seq
    assert new.value == {"text": "", "items": ["new"]}
    assert (await storage.find_document(old.record.address, seq - 1)).id == old.record.id
    assert await session.snapshot(NOTES, conversation) == {"text": "", "items": ["new"]}


async def test_r9_retiring_twice_in_one_commit_retires_only_the_live_incarnation() -> None:
    storage, session, conversation = await _setup()
    await session.commit(lambda tx: tx.doc(NOTES, conversation))

    async def fn(tx: Tx) -> list[bool]:
        return [await tx.retire_doc(NOTES, conversation), await tx.retire_doc(NOTES, conversation)]

    assert await session.commit(fn) == [True, False]
    assert [type(w) for w in storage.batches[-1]] == [RetireDocument]


# -- R13: base or delta --


async def test_r13_checkpoint_when_is_called_once_per_change_with_the_deltas_since_the_base() -> (
    None
):
    storage, session, conversation = await _setup()
    calls: list[tuple[JsonObject, list[Op], int]] = []

    def every_third(value: JsonObject, ops: list[Op], deltas_since_base: int) -> bool:
        calls.append((value, ops, deltas_since_base))
        return deltas_since_base == 2

    counter = define_doc("counter", initial=lambda: {"n": 0}, checkpoint_when=every_third)
    await session.commit(lambda tx: tx.doc(counter, conversation))
    assert calls == []  # a creation always stores a base

    reads = []
    for n in range(1, 6):
        await edit(session, counter, conversation, lambda d, n=n: d.update(n=n))  # type: ignore[misc]
        read = await stored(storage, counter, conversation)
        assert read is not None
        reads.append(read.deltas_since_base)
    await session.commit(lambda tx: tx.doc(counter, conversation))  # no change: no call

    assert [c[2] for c in calls] == [0, 1, 2, 0, 1]
    assert [c[0] for c in calls] == [{"n": n} for n in range(1, 6)]
    assert all(c[1] == [{"op": "set", "path": ["n"], "value": c[0]["n"]}] for c in calls)
    assert reads == [1, 2, 0, 1, 2]  # the third change was stored as a base
    kinds = [
        "base" if w.base is not None else "delta"
        for batch in storage.batches
        for w in batch
        if isinstance(w, ChangeDocument)
    ]
    assert kinds == ["delta", "delta", "base", "delta", "delta"]
    assert await session.snapshot(counter, conversation) == {"n": 5}


async def test_r13_a_throwing_checkpoint_when_aborts_the_commit_before_storage() -> None:
    storage, session, conversation = await _setup()

    def broken(value: JsonObject, ops: list[Op], deltas: int) -> bool:
        raise RuntimeError("predicate broke")

    doc = define_doc("fragile", initial=lambda: {"n": 0}, checkpoint_when=broken)
    await session.commit(lambda tx: tx.doc(doc, conversation))
    commits = len(storage.batches)

    async def fn(tx: Tx) -> None:
        tx.append(conversation, "note")
        (await tx.doc(doc, conversation))["n"] = 1

    with pytest.raises(RuntimeError, match="predicate broke"):
        await session.commit(fn)

    assert len(storage.batches) == commits
    assert await session.snapshot(doc, conversation) == {"n": 0}
    assert session.failed is None


async def test_r14_an_acquisition_without_changes_writes_and_publishes_nothing() -> None:
    storage, session, conversation = await _setup()
    await session.commit(lambda tx: tx.doc(NOTES, conversation))
    before = storage.last_seq
    published: list[Any] = []
    session.subscribe(published.append)

    await session.commit(lambda tx: tx.doc(NOTES, conversation))

    assert storage.last_seq == before
    assert published == []


async def test_r14_assigning_an_equal_value_writes_nothing_because_drafts_are_diffed() -> None:
    storage, session, conversation = await _setup()
    await edit(session, NOTES, conversation, lambda d: d.update(text="same"))
    before = storage.last_seq

    await edit(session, NOTES, conversation, lambda d: d.update(text="same", items=[]))

    assert storage.last_seq == before


# -- R15: versions and migration --


async def _stored_at_version_1(value: JsonObject) -> tuple[ControlledStorage, Any, int]:
    storage, session, conversation = await _setup()
    v1 = define_doc("versioned", initial=lambda: dict(value))
    await session.commit(lambda tx: tx.doc(v1, conversation))
    return storage, session, conversation


async def test_r15_reads_migrate_an_older_version_in_memory_only() -> None:
    storage, session, conversation = await _stored_at_version_1({"name": "x"})
    migrations: list[int] = []

    def migrate(value: JsonObject, from_version: int) -> JsonObject:
        migrations.append(from_version)
        return {"names": [value["name"]]}

    v2 = define_doc("versioned", version=2, initial=lambda: {"names": []}, migrate=migrate)

    assert await session.snapshot(v2, conversation) == {"names": ["x"]}
    assert (await session.document_state(v2, conversation)).value == {"names": ["x"]}
    watch = await session.watch_doc(v2, conversation)
    assert watch is not None
    assert watch.value == {"names": ["x"]}

    assert migrations == [1, 1, 1]
    read = await stored(storage, v2, conversation)
    assert read is not None
    assert (read.version, read.value) == (1, {"name": "x"})


async def test_r15_the_next_tx_doc_writes_a_current_version_base_even_for_an_identical_value() -> (
    None
):
    storage, session, conversation = await _stored_at_version_1({"same": True})
    v2 = define_doc("versioned", version=2, initial=dict, migrate=lambda value, from_version: value)
    published: list[Any] = []
    session.subscribe(published.append)

    await session.commit(lambda tx: tx.doc(v2, conversation))

    change = storage.batches[-1][0]
    assert isinstance(change, ChangeDocument)
    assert (change.version, change.base, change.ops) == (2, {"same": True}, None)
    read = await stored(storage, v2, conversation)
    assert read is not None
    assert (read.version, read.value, read.deltas_since_base) == (2, {"same": True}, 0)
    assert [c.ops for c in published[0].documents] == [
        [{"op": "set", "path": [], "value": {"same": True}}]
    ]
    before = storage.last_seq
    await session.commit(lambda tx: tx.doc(v2, conversation))
    assert storage.last_seq == before  # once migrated, an acquisition writes nothing again


async def test_r15_a_newer_stored_version_rejects_every_typed_access() -> None:
    _, session, conversation = await _setup()
    v3 = define_doc("versioned", version=3, initial=dict)
    await session.commit(lambda tx: tx.doc(v3, conversation))
    v2 = define_doc("versioned", version=2, initial=dict, migrate=lambda value, v: value)

    for access in _typed_accesses(session, v2, conversation):
        with pytest.raises(DocumentAccessError, match="version 3, newer than"):
            await access()


async def test_r15_an_older_stored_version_without_migrate_rejects_every_typed_access() -> None:
    _, session, conversation = await _stored_at_version_1({"a": 1})
    v2 = define_doc("versioned", version=2, initial=dict)

    for access in _typed_accesses(session, v2, conversation):
        with pytest.raises(DocumentAccessError, match="has no migrate"):
            await access()


@pytest.mark.parametrize(
    ("history", "fork"), [("rewindable", "initial"), ("latest", "current"), ("rewindable", "asOf")]
)
async def test_r15_a_scope_history_or_fork_mismatch_rejects_every_typed_access(
    history: Any, fork: Any
) -> None:
    _, session, conversation = await _setup()
    await session.commit(lambda tx: tx.doc(NOTES, conversation))  # latest / initial
    other = define_doc("notes", initial=dict, history=history, fork=fork)

    for access in _typed_accesses(session, other, conversation):
        with pytest.raises(DocumentAccessError, match="stored with history latest and fork"):
            await access()


def _typed_accesses(session: Any, definition: Any, conversation: int) -> list[Any]:
    async def in_commit() -> None:
        await session.commit(lambda tx: tx.doc(definition, conversation))

    return [
        in_commit,
        lambda: session.snapshot(definition, conversation),
        lambda: session.document_state(definition, conversation),
        lambda: session.watch_doc(definition, conversation),
    ]


async def test_r15_history_is_never_rewritten_and_migration_applies_after_replay() -> None:
    storage, session, conversation = await _setup()
    h1 = define_doc("h", initial=lambda: {"v": 1}, history="rewindable", fork="asOf")
    await session.commit(lambda tx: tx.doc(h1, conversation))
    first = await append(session, conversation)
    await edit(session, h1, conversation, lambda d: d.update(v=2))
    h2 = define_doc(
        "h",
        version=2,
        initial=dict,
        history="rewindable",
        fork="asOf",
        migrate=lambda value, _: {"value": value["v"]},
    )
    await session.commit(lambda tx: tx.doc(h2, conversation))  # writes a version-2 base

    assert await session.snapshot_as_of(h2, conversation, first) == {"value": 1}
    record = await storage.find_document(
        (await stored(storage, h2, conversation)).record.address  # type: ignore[union-attr]
    )
    assert record is not None
    old = await storage.document(record.id, (await storage.entry(first)).commit_seq)
    assert old is not None
    assert (old.version, old.value) == (1, {"v": 1})


# -- R20: historical reads --


async def test_r20_historical_reads_of_current_only_documents_reject() -> None:
    _, session, conversation = await _setup()
    entry = await append(session, conversation)
    for definition in (NOTES, SETTINGS, SCRATCH):
        with pytest.raises(DocumentAccessError, match="does not retain historical content"):
            await session.snapshot_as_of(definition, conversation, entry)


async def test_r20_a_rewindable_document_outside_its_lifetime_reads_none() -> None:
    _, session, conversation = await _setup()
    before = await append(session, conversation)
    await edit(session, HISTORY, conversation, lambda d: d.update(n=1))
    during = await append(session, conversation)

    async def retire(tx: Tx) -> None:
        await tx.retire_doc(HISTORY, conversation)

    await session.commit(retire)
    after = await append(session, conversation)

    assert await session.snapshot_as_of(HISTORY, conversation, before) is None
    assert await session.snapshot_as_of(HISTORY, conversation, during) == {"n": 1}
    assert await session.snapshot_as_of(HISTORY, conversation, after) is None
    assert await session.snapshot(HISTORY, conversation) is None
