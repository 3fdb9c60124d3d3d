"""Conformance tests of what survives a close and reopen (persistent backends only).

Rules covered (R129 and the protocol's "after a reopen" clauses): every read
answers the same after a reopen (records, histories, documents at every point,
request IDs); seqs continue from ``last_seq``; the mint floor is above every
committed ID; ID kinds, request IDs and live addresses still refuse conflicts;
cursors taken before a reopen continue the scan after it; a rejected commit
leaves no trace on disk. Many tests in the other groups also run a second time
with a reopen in the middle (their ``phase`` parameter).
"""

from __future__ import annotations

import json

from pi_durable_tui.storage._conformance.base import (
    ConformanceBase,
    base,
    conversation,
    create,
    delta,
    entry,
    latest,
    rejects,
    reopens,
    rewindable,
    set_op,
    submission,
    task,
)
from pi_durable_tui.storage._conformance.history import fork_tree
from pi_durable_tui.storage._conformance.scans import SCANS, item_id, pages, populate
from pi_durable_tui.storage._conformance.snapshot import canonical, snapshot
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.records import SessionScope, TaskScope
from pi_durable_tui.storage.writes import CopyDocument, RetireDocument


async def mixed_store(storage: Storage) -> None:
    """A store with every kind of record, forks, and documents of every scope."""
    await fork_tree(storage)
    await storage.commit(
        [
            task(20, 1, "running", input={"x": [1, 2.5, None]}),
            task(21, 5, "waiting", owner=None, background=True),
            submission(22, 1, request_id="r1"),
            submission(23, 5, type="write", status="done", entry=6, request_id="r1"),
            conversation(24, owner=(1, 20)),
            create(30, rewindable(1), {"t": ""}),
            create(31, latest(1), {"n": 0}, kind="live"),
            create(32, SessionScope(), {"s": True}, key="k"),
            create(33, TaskScope(20), {"m": {}}),
        ]
    )
    for n in range(3):
        await storage.commit(
            [
                delta(30, {"op": "append", "path": ["t"], "text": f"{n}é"}),
                delta(31, set_op(["n"], n)) if n != 1 else base(31, {"n": 1, "b": True}),
            ]
        )
    await storage.commit(
        [
            CopyDocument(34, "notes", rewindable(5), 30, 7),
            RetireDocument(33),
            task(20, 1, "terminal"),
            submission(22, 1, status="placed", entry=10, request_id="r1"),
        ]
    )


class PersistenceRules(ConformanceBase):
    """What survives a reopen (R129)."""

    @reopens
    async def test_every_read_answers_the_same_after_a_reopen(self, storage: Storage) -> None:
        """R129: records, histories and documents at every point survive a reopen."""
        await mixed_store(storage)
        before = canonical(await snapshot(storage))
        storage = await self.reopen(storage)
        assert canonical(await snapshot(storage)) == before
        storage = await self.reopen(storage)
        assert canonical(await snapshot(storage)) == before

    @reopens
    async def test_seqs_continue_after_a_reopen(self, storage: Storage) -> None:
        """R129: sequences persist; the next commit is ``last_seq + 1``."""
        await storage.commit([conversation(1)])
        await storage.commit([])
        storage = await self.reopen(storage)
        assert storage.last_seq == 2
        assert await storage.commit([entry(2, 1)]) == 3
        storage = await self.reopen(storage)
        assert storage.last_seq == 3

    @reopens
    async def test_a_fresh_reopened_store_is_empty_and_mints_from_2(self, storage: Storage) -> None:
        """R-1.2: reopening a store that holds nothing starts over at seq 0 and ID 2."""
        storage = await self.reopen(storage)
        assert storage.last_seq == 0
        assert storage.mint_id() == 2
        assert await storage.commit([conversation(1)]) == 1

    @reopens
    async def test_the_mint_floor_survives_a_reopen(self, storage: Storage) -> None:
        """R-1.2, R129: after explicit entry 100 and a reopen, the next mint is 101."""
        await storage.commit([conversation(1), entry(100, 1)])
        storage = await self.reopen(storage)
        assert storage.mint_id() == 101
        await storage.commit([create(500, SessionScope())])
        storage = await self.reopen(storage)
        assert storage.mint_id() == 501

    @reopens
    async def test_conflicts_are_still_refused_after_a_reopen(self, storage: Storage) -> None:
        """R-1.2, R4, R18: ID kinds, written-once records, request IDs, live addresses."""
        await mixed_store(storage)
        storage = await self.reopen(storage)
        await rejects(storage, [task(2, 1)], "ID 2 already belongs to entry", exact=True)
        await rejects(storage, [entry(2, 1)], "Entry 2 already exists", exact=True)
        await rejects(storage, [conversation(5)], "Conversation 5 already exists", exact=True)
        await rejects(
            storage,
            [submission(40, 1, request_id="r1")],
            "Request r1 already identifies submission 22",
            exact=True,
        )
        occupied = "already has a current incarnation"
        await rejects(storage, [create(40, latest(1), kind="live")], occupied)
        await rejects(storage, [task(21, 1, "waiting")], "cannot move to another conversation")
        await rejects(storage, [delta(33, set_op(["m"], 1))], "Document 33 is retired")
        needs_base = "version transition requires a base"
        await rejects(storage, [delta(30, set_op(["t"], ""), version=2)], needs_base)
        await storage.commit([create(40, TaskScope(20))])

    @reopens
    async def test_a_cursor_taken_before_a_reopen_continues_after_it(
        self, storage: Storage
    ) -> None:
        """Protocol, Scans: cursors survive a JSON round trip and a reopen."""
        await populate(storage)
        for name, (make, expected) in SCANS.items():
            first = await make(storage)(1, None)
            assert first.cursor is not None
            text = json.dumps(first.cursor)
            storage = await self.reopen(storage)
            cursor: JsonObject = json.loads(text)
            rest = await make(storage)(100, cursor)
            got = [item_id(i) for i in [*first.items, *rest.items]]
            assert got == expected, name
            assert [i for page in await pages(make(storage), 3) for i in page] == expected

    @reopens
    async def test_a_rejected_commit_leaves_nothing_behind_after_a_reopen(
        self, storage: Storage
    ) -> None:
        """R8: nothing of a rejected batch is durable; its seq and IDs are still free."""
        await storage.commit([conversation(1)])
        await rejects(storage, [entry(50, 1), create(51, SessionScope()), entry(52, 99)], "99")
        storage = await self.reopen(storage)
        assert storage.last_seq == 1
        assert await storage.entry(50) is None
        assert await storage.document(51) is None
        assert storage.mint_id() == 2
        assert await storage.commit([entry(50, 1)]) == 2
