"""Forks: visible history and document copies (R17-R19, R26).

A fork's child sees its parent's entries through the fork entry and gets each
parent conversation document by the policy stored with it: ``asOf`` (the value as
of the fork entry's commit), ``current`` (the committed value at fork time) or
``initial`` (nothing; created fresh on first access).
"""

from __future__ import annotations

from typing import Any

import pytest

from pi_durable_tui.kernel import (
    ConversationOwned,
    KernelError,
    Ownerless,
    Session,
    Tx,
    define_doc,
    define_task,
)
from pi_durable_tui.storage import StorageRejected
from pi_durable_tui.storage.records import DocAddress, ScopeRef
from tests.kernel.support import (
    ControlledStorage,
    append,
    new_conversation,
    open_session,
    stored,
)

AS_OF = define_doc("as-of", initial=lambda: {"v": []}, history="rewindable", fork="asOf")
CURRENT = define_doc("current", initial=lambda: {"v": []}, fork="current")
REWIND_CURRENT = define_doc(
    "rewind-current", initial=lambda: {"v": []}, history="rewindable", fork="current"
)
INITIAL = define_doc("initial", initial=lambda: {"v": ["fresh"]})
SHARED = define_doc("shared", initial=lambda: {"v": []}, scope="session")
SCRATCH = define_doc("scratch", initial=lambda: {"v": []}, scope="task")
CONVERSATION_DOCS = (AS_OF, CURRENT, REWIND_CURRENT, INITIAL)


async def _phase(task: Any, runtime: Any) -> None:
    return None


JOB = define_task("job", initial=lambda _: {"phase": "run"}, phases={"run": _phase}, abort=_phase)


async def _add(session: Session, conversation: int, item: str) -> None:
    """One commit that appends ``item`` to every conversation document's ``v``."""

    async def fn(tx: Tx) -> None:
        for definition in CONVERSATION_DOCS:
            (await tx.doc(definition, conversation))["v"].append(item)

    await session.commit(fn)


async def _fork(session: Session, parent: int, at: int) -> int:
    record = await session.commit(lambda tx: tx.fork_conversation(parent, at, Ownerless()))
    return record.id


async def _entry_kinds(storage: Any, conversation: int) -> list[str]:
    page = await storage.scan_entries(conversation, order="asc", limit=1000)
    return [item.entry.kind for item in page.items]


async def _setup() -> tuple[ControlledStorage, Session, int]:
    storage = ControlledStorage()
    session = await open_session(storage)
    return storage, session, await new_conversation(session)


async def test_r17_a_fork_sees_parent_entries_through_the_fork_entry_even_if_its_commit_appended_more() -> (  # noqa: E501
    None
):
    storage, session, parent = await _setup()
    await append(session, parent, "before")

    def three(tx: Tx) -> int:
        tx.append(parent, "same commit 1")
        at = tx.append(parent, "fork here").id
        tx.append(parent, "same commit 2")
        return at

    at = await session.commit(three)
    await append(session, parent, "later")
    child = await _fork(session, parent, at)
    await append(session, child, "child's own")

    assert await _entry_kinds(storage, child) == [
        "before",
        "same commit 1",
        "fork here",
        "child's own",
    ]
    assert await _entry_kinds(storage, parent) == [
        "before",
        "same commit 1",
        "fork here",
        "same commit 2",
        "later",
    ]


async def test_r17_each_policy_copies_what_it_says() -> None:
    storage, session, parent = await _setup()
    await _add(session, parent, "a")

    async def entry_and_change(tx: Tx) -> int:
        at = tx.append(parent, "fork here").id
        for definition in CONVERSATION_DOCS:
            (await tx.doc(definition, parent))["v"].append("same commit")
        return at

    at = await session.commit(entry_and_change)
    await _add(session, parent, "after the entry")
    child = await _fork(session, parent, at)
    await _add(session, parent, "after the fork")

    # asOf: the final state of the commit that holds the fork entry.
    assert await session.snapshot(AS_OF, child) == {"v": ["a", "same commit"]}
    # current: the committed value when the fork commits.
    expected_current = {"v": ["a", "same commit", "after the entry"]}
    assert await session.snapshot(CURRENT, child) == expected_current
    assert await session.snapshot(REWIND_CURRENT, child) == expected_current
    # initial: nothing copied; the first tx.doc creates it fresh.
    assert await session.snapshot(INITIAL, child) is None
    assert await stored(storage, INITIAL, child) is None
    assert await session.commit(lambda tx: tx.doc(INITIAL, child)) == {"v": ["fresh"]}


async def test_r17_copies_are_new_independent_incarnations() -> None:
    storage, session, parent = await _setup()
    await _add(session, parent, "a")
    at = await append(session, parent)
    child = await _fork(session, parent, at)
    await _add(session, child, "child only")

    for definition in (AS_OF, CURRENT):
        in_parent = await stored(storage, definition, parent)
        in_child = await stored(storage, definition, child)
        assert in_parent is not None
        assert in_child is not None
        assert in_child.record.id != in_parent.record.id
        assert in_child.record.created_at > in_parent.record.created_at
        assert in_parent.value == {"v": ["a"]}
        assert in_child.value == {"v": ["a", "child only"]}


async def test_r17_copies_keep_unknown_kinds_and_their_stored_versions() -> None:
    storage, session, parent = await _setup()
    plugin = define_doc(
        "plugin.state", version=3, initial=lambda: {"x": 1}, history="rewindable", fork="asOf"
    )
    await session.commit(lambda tx: tx.doc(plugin, parent))
    at = await append(session, parent)

    # A Session that has never heard of "plugin.state" forks the conversation.
    other = await open_session(storage)
    child = (await other.commit(lambda tx: tx.fork_conversation(parent, at, Ownerless()))).id

    copy = await storage.find_document(DocAddress("plugin.state", ScopeRef("conversation", child)))
    assert copy is not None
    read = await storage.document(copy.id)
    assert read is not None
    assert (read.version, read.value) == (3, {"x": 1})
    assert copy.scope.history == "rewindable"
    assert copy.scope.fork == "asOf"


async def test_r17_task_documents_are_never_copied_and_session_documents_stay_shared() -> None:
    storage, session, parent = await _setup()

    async def fn(tx: Tx) -> int:
        task = tx.create_task(JOB, None, ownership=ConversationOwned(), conversation_id=parent)
        (await tx.doc(SCRATCH, task.id))["v"].append("task")
        (await tx.doc(SHARED))["v"].append("session")
        return task.id

    task = await session.commit(fn)
    at = await append(session, parent)
    before = await session.snapshot(SHARED)
    child = await _fork(session, parent, at)

    page = await storage.scan_documents(ScopeRef("conversation", child))
    assert page.items == []
    page = await storage.scan_documents(ScopeRef("task", task))
    assert [r.kind for r in page.items] == ["scratch"]
    assert await session.snapshot(SHARED) == before
    page = await storage.scan_documents(ScopeRef("session"))
    assert len(page.items) == 1


async def test_r18_a_fork_commit_that_also_changes_a_parents_current_document_rejects() -> None:
    storage, session, parent = await _setup()
    await _add(session, parent, "a")
    at = await append(session, parent)
    before = storage.last_seq

    async def fn(tx: Tx) -> None:
        tx.fork_conversation(parent, at, Ownerless())
        (await tx.doc(CURRENT, parent))["v"].append("ambiguous")

    with pytest.raises(KernelError, match=r"cannot also change its fork: current document current"):
        await session.commit(fn)

    assert storage.last_seq == before
    assert await session.snapshot(CURRENT, parent) == {"v": ["a"]}
    assert await _fork(session, parent, at) > 0  # the Session is still usable


async def test_r18_a_fork_commit_that_changes_a_parents_as_of_document_is_refused_by_storage() -> (
    None
):
    storage, session, parent = await _setup()
    await _add(session, parent, "a")
    at = await append(session, parent)
    before = storage.last_seq

    async def fn(tx: Tx) -> None:
        tx.fork_conversation(parent, at, Ownerless())
        (await tx.doc(AS_OF, parent))["v"].append("copied and written")

    with pytest.raises(StorageRejected, match="copied and written in the same commit"):
        await session.commit(fn)

    assert storage.last_seq == before
    assert session.failed is None


async def test_r17_a_child_document_acquired_in_the_forking_commit_starts_from_the_copy() -> None:
    storage, session, parent = await _setup()
    await _add(session, parent, "a")
    at = await append(session, parent)
    await _add(session, parent, "b")

    async def fn(tx: Tx) -> dict[str, Any]:
        child = tx.fork_conversation(parent, at, Ownerless())
        seen: dict[str, Any] = {}
        for definition in CONVERSATION_DOCS:
            draft = await tx.doc(definition, child.id)
            seen[definition.kind] = list(draft["v"])
            draft["v"].append("edited")
        seen["child"] = child.id
        return seen

    seen = await session.commit(fn)
    child = seen.pop("child")

    assert seen == {
        "as-of": ["a"],
        "current": ["a", "b"],
        "rewind-current": ["a", "b"],
        "initial": ["fresh"],
    }
    for definition in CONVERSATION_DOCS:
        value = await session.snapshot(definition, child)
        assert value == {"v": [*seen[definition.kind], "edited"]}
        read = await stored(storage, definition, child)
        assert read is not None
        assert read.value == value
    parent_ids = {(await stored(storage, d, parent)).record.id for d in CONVERSATION_DOCS}  # type: ignore[union-attr]
    child_ids = {(await stored(storage, d, child)).record.id for d in CONVERSATION_DOCS}  # type: ignore[union-attr]
    assert not parent_ids & child_ids


async def test_r19_snapshot_as_of_on_a_fork_reads_the_parents_history_for_inherited_entries() -> (
    None
):
    _, session, parent = await _setup()
    await _add(session, parent, "p1")
    inherited = await append(session, parent)
    await _add(session, parent, "p2")
    at = await append(session, parent)
    await _add(session, parent, "p3 after the fork entry")
    child = await _fork(session, parent, at)
    await _add(session, child, "c1")
    own = await append(session, child)

    assert await session.snapshot_as_of(AS_OF, child, inherited) == {"v": ["p1"]}
    assert await session.snapshot_as_of(AS_OF, child, at) == {"v": ["p1", "p2"]}
    assert await session.snapshot_as_of(AS_OF, child, own) == {"v": ["p1", "p2", "c1"]}
    assert await session.snapshot_as_of(AS_OF, parent, at) == {"v": ["p1", "p2"]}


async def test_r19_snapshot_as_of_rejects_an_entry_not_visible_from_the_conversation() -> None:
    _, session, parent = await _setup()
    await _add(session, parent, "p1")
    at = await append(session, parent)
    after = await append(session, parent)
    child = await _fork(session, parent, at)

    for entry in (after, 999_999):
        with pytest.raises(KernelError, match=f"Entry {entry} is not visible from conversation"):
            await session.snapshot_as_of(AS_OF, child, entry)


async def test_r26_forking_at_an_entry_not_visible_from_the_parent_rejects() -> None:
    storage, session, parent = await _setup()
    other = await new_conversation(session)
    elsewhere = await append(session, other)
    at = await append(session, parent)
    beyond = await append(session, parent)
    child = await _fork(session, parent, at)
    before = storage.last_seq

    for conversation, entry in ((parent, elsewhere), (parent, 999_999), (child, beyond)):
        with pytest.raises(KernelError, match=f"at entry {entry}: the entry is not visible there"):
            await _fork(session, conversation, entry)

    def same_commit(tx: Tx) -> None:
        entry = tx.append(parent, "not committed yet")
        tx.fork_conversation(parent, entry.id, Ownerless())

    with pytest.raises(KernelError, match="the entry is not visible there"):
        await session.commit(same_commit)
    assert storage.last_seq == before


async def test_r17_forks_of_forks_see_and_copy_through_every_level() -> None:
    storage, session, grand = await _setup()
    await _add(session, grand, "g1")
    g_entry = await append(session, grand, "g entry")
    await _add(session, grand, "g2")
    g_fork = await append(session, grand, "g fork point")
    await _add(session, grand, "g3 after the fork entry")
    parent = await _fork(session, grand, g_fork)
    await _add(session, parent, "p1")
    p_entry = await append(session, parent, "p entry")
    await _add(session, parent, "p2")

    at_own = await _fork(session, parent, p_entry)
    at_inherited = await _fork(session, parent, g_entry)

    assert await _entry_kinds(storage, at_own) == ["g entry", "g fork point", "p entry"]
    assert await _entry_kinds(storage, at_inherited) == ["g entry"]
    assert await session.snapshot(AS_OF, at_own) == {"v": ["g1", "g2", "p1"]}
    # Forking at an inherited entry copies what the parent saw there: the grandparent's value.
    assert await session.snapshot(AS_OF, at_inherited) == {"v": ["g1"]}
    assert await session.snapshot_as_of(AS_OF, at_inherited, g_entry) == {"v": ["g1"]}
    # current: the parent's value at fork time, which began as the grandparent's at its fork.
    current = {"v": ["g1", "g2", "g3 after the fork entry", "p1", "p2"]}
    assert await session.snapshot(CURRENT, at_own) == current
    assert await session.snapshot(CURRENT, at_inherited) == current
    grandchild = await _fork(session, at_own, p_entry)
    assert await session.snapshot(AS_OF, grandchild) == {"v": ["g1", "g2", "p1"]}
    assert await session.snapshot_as_of(AS_OF, grandchild, g_entry) == {"v": ["g1"]}
