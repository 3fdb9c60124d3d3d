"""Conformance tests of documents: lifetimes, bases and deltas, history, reclamation.

Rules covered (protocol, Documents and the document checks of Commit): a
document is alive at ``s`` when ``created_at <= s < retired_at``;
``find_document`` and ``document`` at points before, at and after creation and
retirement (R20); re-creation is a new incarnation with a new ID (R9); one live
incarnation per address; creation stores a base (R13); bases and deltas with all
four operations, ``deltas_since_base``; a version change needs a base (R15);
historical reads of rewindable documents at every seq; a historical read of a
current-only document rejects at every seq (R20), and such a document loses what
precedes its newest base or its retirement (R16, R129; seen through copies)
while rewindable ones keep everything; create+retire and change+retire in one
commit; the change and retire rejections. Copies are in ``copies``.
"""

from __future__ import annotations

from typing import Any

import pytest

from pi_durable_tui.storage._conformance.base import (
    ConformanceBase,
    base,
    conversation,
    create,
    delta,
    entry,
    latest,
    rejects,
    rewindable,
    set_op,
    task,
)
from pi_durable_tui.storage._conformance.snapshot import document_read_json
from pi_durable_tui.storage.errors import StorageRejected
from pi_durable_tui.storage.json_ops import Json, JsonObject
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.records import (
    ConversationScope,
    DocAddress,
    DocScope,
    DocumentRecord,
    ScopeRef,
    SessionScope,
    TaskScope,
)
from pi_durable_tui.storage.writes import (
    ChangeDocument,
    CopyDocument,
    CreateDocument,
    RetireDocument,
)

NO_HISTORY = "Document 10 (notes) does not retain historical content"
NO_HISTORY_PATTERN = r"Document 10 \(notes\) does not retain historical content"

HISTORY: list[tuple[Json, int, int] | None] = [
    None,
    ({"text": "", "items": []}, 1, 0),
    ({"text": "he", "items": []}, 1, 1),
    ({"text": "he", "items": []}, 1, 1),
    ({"text": "hello", "items": [1, 2]}, 1, 2),
    ({"text": "reset", "items": [9]}, 1, 0),
    ({"text": "reset", "items": [9], "n": 1}, 1, 1),
    ({"text": "reset", "items": [], "n": 1}, 1, 2),
]
"""``(value, version, deltas_since_base)`` of document 10 at seqs 0..7 of ``write_history``."""


async def write_history(storage: Storage, scope: DocScope) -> None:
    """Give document 10 the history of ``HISTORY`` (seq 3 does not touch it)."""
    await storage.commit(
        [conversation(1), task(2, 1), create(10, scope, {"text": "", "items": []})]
    )
    await storage.commit([delta(10, {"op": "append", "path": ["text"], "text": "he"})])
    await storage.commit([entry(3, 1)])
    await storage.commit(
        [
            delta(
                10,
                {"op": "append", "path": ["text"], "text": "llo"},
                {"op": "splice", "path": ["items"], "index": 0, "remove": 0, "insert": [1, 2]},
            )
        ]
    )
    await storage.commit([base(10, {"text": "reset", "items": [9]})])
    await storage.commit([delta(10, set_op(["n"], 1))])
    await storage.commit([delta(10, {"op": "delete", "path": ["items", 0]})])


async def read_at(storage: Storage, document_id: int, at: int | None) -> Any:
    """Return ``(value, version, deltas_since_base)`` at ``at``, or ``None``."""
    read = await storage.document(document_id, at)
    return None if read is None else (read.value, read.version, read.deltas_since_base)


CURRENT_ONLY: dict[str, DocScope] = {
    "session": SessionScope(),
    "latest-conversation": latest(1),
    "task": TaskScope(2),
}


class DocumentLifetimeRules(ConformanceBase):
    """Incarnations and their lifetimes (R9, R13, R20)."""

    async def test_creating_a_document_stores_a_complete_base_and_its_record(
        self, storage: Storage, phase: str
    ) -> None:
        """R13: creation stores a base; the record carries scope, key and ``created_at``."""
        await storage.commit([conversation(1), entry(2, 1)])
        value: JsonObject = {"a": [1, {"b": None}], "s": "é", "f": 0.5, "t": True}
        seq = await storage.commit(
            [create(10, rewindable(1), value, kind="k", key="fam", version=3)]
        )
        storage = await self.checkpoint(storage)
        read = await storage.document(10)
        assert read is not None
        assert read.record == DocumentRecord(10, "k", rewindable(1), seq, key="fam")
        assert (read.value, read.version, read.deltas_since_base) == (value, 3, 0)
        assert await storage.document(10, at=seq) == read

    async def test_find_document_answers_before_at_and_after_creation_and_retirement(
        self, storage: Storage, phase: str
    ) -> None:
        """R20: alive when ``created_at <= at < retired_at``; now, a retired one is ``None``."""
        await storage.commit([conversation(1)])
        created = await storage.commit([create(10, rewindable(1), {"v": 1}, kind="k")])
        changed = await storage.commit([delta(10, set_op(["v"], 2))])
        retired = await storage.commit([RetireDocument(10)])
        storage = await self.checkpoint(storage)
        address = DocAddress("k", ScopeRef("conversation", 1))
        expected = DocumentRecord(10, "k", rewindable(1), created, retired_at=retired)
        assert await storage.find_document(address, created - 1) is None
        assert await storage.find_document(address, created) == expected
        assert await storage.find_document(address, changed) == expected
        assert await storage.find_document(address, retired) is None
        assert await storage.find_document(address) is None
        assert await read_at(storage, 10, created) == ({"v": 1}, 1, 0)
        assert await read_at(storage, 10, changed) == ({"v": 2}, 1, 1)
        assert await storage.document(10, retired) is None
        assert await storage.document(10) is None

    async def test_recreating_a_retired_address_makes_a_new_incarnation(
        self, storage: Storage, phase: str
    ) -> None:
        """R9, R-1.5: retiring and re-creating an address makes a new ID; the old one stays."""
        await storage.commit([conversation(1)])
        first = await storage.commit([create(10, rewindable(1), {"n": 1}, key="x")])
        second = await storage.commit([RetireDocument(10)])
        third = await storage.commit([create(11, rewindable(1), {"n": 2}, key="x")])
        fourth = await storage.commit([RetireDocument(11), create(12, rewindable(1), key="x")])
        storage = await self.checkpoint(storage)
        address = DocAddress("notes", ScopeRef("conversation", 1), "x")
        found = [await storage.find_document(address, at) for at in (first, second, third, fourth)]
        assert [None if f is None else f.id for f in found] == [10, None, 11, 12]
        assert (await storage.find_document(address)).id == 12  # type: ignore[union-attr]
        assert await read_at(storage, 10, first) == ({"n": 1}, 1, 0)
        assert await read_at(storage, 11, third) == ({"n": 2}, 1, 0)
        assert await storage.document(11) is None

    async def test_an_address_has_at_most_one_current_incarnation(self, storage: Storage) -> None:
        """Protocol, Commit (R18 list): no creation where a current incarnation exists."""
        await storage.commit([conversation(1), create(10, latest(1), kind="k")])
        occupied = "already has a current incarnation"
        await rejects(storage, [create(11, latest(1), kind="k")], occupied)
        await rejects(
            storage,
            [create(11, latest(1), kind="j"), create(12, rewindable(1), kind="j")],
            occupied,
        )

    async def test_an_address_is_its_kind_scope_and_key(self, storage: Storage) -> None:
        """R-1.5: the same kind lives once per scope and per family key."""
        await storage.commit([conversation(1), conversation(2), task(3, 1)])
        await storage.commit(
            [
                create(10, SessionScope(), kind="k"),
                create(11, latest(1), kind="k"),
                create(12, latest(2), kind="k"),
                create(13, TaskScope(3), kind="k"),
                create(14, latest(1), kind="k", key="a"),
                create(15, latest(1), kind="k", key="b"),
            ]
        )
        expected = {
            DocAddress("k", ScopeRef("session")): 10,
            DocAddress("k", ScopeRef("conversation", 1)): 11,
            DocAddress("k", ScopeRef("conversation", 2)): 12,
            DocAddress("k", ScopeRef("task", 3)): 13,
            DocAddress("k", ScopeRef("conversation", 1), "a"): 14,
            DocAddress("k", ScopeRef("conversation", 1), "b"): 15,
            DocAddress("k", ScopeRef("conversation", 1), "c"): None,
            DocAddress("j", ScopeRef("conversation", 1)): None,
        }
        for address, document_id in expected.items():
            found = await storage.find_document(address)
            assert (None if found is None else found.id) == document_id, address

    async def test_create_and_retire_in_one_commit_is_never_alive(
        self, storage: Storage, phase: str
    ) -> None:
        """R9: the incarnation's interval is empty; its address is free again."""
        await storage.commit([conversation(1)])
        seq = await storage.commit([create(10, latest(1), {"a": 1}), RetireDocument(10)])
        storage = await self.checkpoint(storage)
        address = DocAddress("notes", ScopeRef("conversation", 1))
        assert await storage.find_document(address, seq) is None
        with pytest.raises(StorageRejected, match=NO_HISTORY_PATTERN):
            await storage.document(10, seq)
        assert await storage.document(10) is None
        assert (await storage.scan_documents(ScopeRef("conversation", 1), at=seq)).items == []
        await storage.commit([create(11, latest(1))])
        await rejects(storage, [delta(10, set_op(["a"], 2))], "Document 10")

    async def test_change_and_retire_in_one_commit_is_accepted(
        self, storage: Storage, phase: str
    ) -> None:
        """R9: ``retire_doc`` persists the final content then retires, in one commit."""
        await storage.commit([conversation(1)])
        created = await storage.commit([create(10, rewindable(1), {"a": 1})])
        retired = await storage.commit([delta(10, set_op(["a"], 2)), RetireDocument(10)])
        storage = await self.checkpoint(storage)
        assert await read_at(storage, 10, created) == ({"a": 1}, 1, 0)
        assert await storage.document(10, retired) is None
        assert await storage.document(10) is None

    async def test_change_and_retire_rejections(self, storage: Storage) -> None:
        """Protocol, Commit (R18 list): unknown, retired, twice, created or copied in-batch."""
        await storage.commit(
            [conversation(1), create(10, latest(1)), create(11, latest(1), kind="r")]
        )
        await storage.commit([RetireDocument(11)])
        cases: list[tuple[list[Any], str]] = [
            ([delta(99, set_op(["a"], 1))], "Document 99 does not exist"),
            ([RetireDocument(99)], "Document 99 does not exist"),
            ([delta(11, set_op(["a"], 1))], "Document 11 is retired"),
            ([RetireDocument(11)], "Document 11 is retired"),
            ([delta(10, set_op(["a"], 1)), delta(10, set_op(["b"], 1))], "changed twice"),
            ([delta(10, set_op(["a"], 1)), base(10, {})], "changed twice"),
            ([RetireDocument(10), RetireDocument(10)], "Document 10 is retired"),
            ([RetireDocument(10), delta(10, set_op(["a"], 1))], "Document 10 is retired"),
            ([create(12, latest(1), kind="n"), delta(12, set_op(["a"], 1))], "creates it"),
            ([ChangeDocument(10, 1)], "exactly one of base or ops"),
            ([ChangeDocument(10, 1, base={}, ops=[])], "exactly one of base or ops"),
            ([base(10, [1])], "must be a JSON object"),  # type: ignore[arg-type]
            ([base(10, {}, version=0)], "version must be a positive integer"),
            ([create(12, latest(1), kind="n", version=0)], "version must be a positive integer"),
            ([CreateDocument(12, "n", latest(1), 1, [])], "must be a JSON object"),  # type: ignore[arg-type]
            ([CreateDocument(12, "n", latest(1), 1, {}, 5)], "key must be a string"),  # type: ignore[arg-type]
        ]
        for batch, message in cases:
            await rejects(storage, batch, message)

    @pytest.mark.parametrize(
        "ops",
        [
            "not a list",
            [{"op": "move", "path": ["a"]}],
            [{"op": "set", "path": "a", "value": 1}],
            [{"op": "set", "path": ["a"]}],
            [{"op": "append", "path": ["a"], "text": 5}],
            [{"op": "splice", "path": ["a"], "index": -1}],
            [{"op": "set", "path": [], "value": [1]}],
            [{"op": "append", "path": [], "text": "x"}],
            [{"op": "set", "path": [True], "value": 1}],
            [5],
        ],
    )
    async def test_a_malformed_delta_is_rejected(self, storage: Storage, ops: Any) -> None:
        """Protocol, Commit: a delta is a list of operations that could apply to an object."""
        await storage.commit([conversation(1), create(10, latest(1), {"a": "x"})])
        await rejects(storage, [ChangeDocument(10, 1, ops=ops)], "Document 10 delta is malformed")


class DocumentContentRules(ConformanceBase):
    """Bases, deltas, versions, history and reclamation (R13, R15, R16, R129)."""

    async def test_deltas_apply_all_four_operations_in_order(
        self, storage: Storage, phase: str
    ) -> None:
        """DESIGN 4: ``set``, ``delete``, ``splice`` and string ``append``."""
        await storage.commit([conversation(1), create(10, latest(1), {"out": "a", "l": [1, 2, 3]})])
        await storage.commit(
            [
                delta(
                    10,
                    {"op": "append", "path": ["out"], "text": "bc"},
                    {"op": "splice", "path": ["l"], "index": 1, "remove": 1, "insert": ["x", "y"]},
                    set_op(["m"], {"k": [None]}),
                    set_op(["m", "k", 0], "é"),
                    set_op(["l", 4], 4),
                    {"op": "delete", "path": ["l", 0]},
                    {"op": "append", "path": ["m", "k", 0], "text": "!"},
                )
            ]
        )
        storage = await self.checkpoint(storage)
        expected = {"out": "abc", "l": ["x", "y", 3, 4], "m": {"k": ["é!"]}}
        assert await read_at(storage, 10, None) == (expected, 1, 1)
        await storage.commit([delta(10, set_op([], {"root": True}))])
        assert await read_at(storage, 10, None) == ({"root": True}, 1, 2)

    async def test_historical_reads_of_a_rewindable_document_at_every_seq(
        self, storage: Storage, phase: str
    ) -> None:
        """R19, R20: the newest base at or before ``at`` plus the deltas after it."""
        await write_history(storage, rewindable(1))
        retired = await storage.commit([RetireDocument(10)])
        storage = await self.checkpoint(storage)
        for at, expected in enumerate(HISTORY):
            assert await read_at(storage, 10, at) == expected, at
        assert await storage.document(10, retired) is None
        assert await storage.document(10, retired + 5) is None
        assert await storage.document(10) is None

    async def test_a_version_change_needs_a_base(self, storage: Storage, phase: str) -> None:
        """R15: a delta must keep the stored version; a base may change it."""
        await storage.commit([conversation(1), create(10, rewindable(1), {"v": 1})])
        needs_base = "Document 10 version transition requires a base"
        await rejects(storage, [delta(10, set_op(["v"], 2), version=2)], needs_base)
        upgraded = await storage.commit([base(10, {"v": 2}, version=2)])
        await rejects(storage, [delta(10, set_op(["v"], 3), version=1)], needs_base)
        await storage.commit([delta(10, set_op(["v"], 3), version=2)])
        storage = await self.checkpoint(storage)
        assert await read_at(storage, 10, upgraded - 1) == ({"v": 1}, 1, 0)
        assert await read_at(storage, 10, upgraded) == ({"v": 2}, 2, 0)
        assert await read_at(storage, 10, None) == ({"v": 3}, 2, 1)

    @pytest.mark.parametrize("scope", list(CURRENT_ONLY))
    async def test_r20_a_historical_read_of_a_current_only_document_rejects_at_every_seq(
        self, storage: Storage, phase: str, scope: str
    ) -> None:
        """R20: ``does not retain historical content`` at every seq, the current one too.

        Whether reclamation kept a revision or not, the answer is the same refusal
        (a caller's mistake), never ``StorageCorrupted`` (which is for damage).
        """
        await write_history(storage, CURRENT_ONLY[scope])
        storage = await self.checkpoint(storage)
        for at in range(0, storage.last_seq + 3):
            with pytest.raises(StorageRejected) as caught:
                await storage.document(10, at)
            assert type(caught.value) is StorageRejected, at
            assert NO_HISTORY in str(caught.value), at
        assert await read_at(storage, 10, None) == HISTORY[7]

    @pytest.mark.parametrize("scope", list(CURRENT_ONLY))
    async def test_r20_a_retired_current_only_document_reads_none_now_and_rejects_at_a_seq(
        self, storage: Storage, phase: str, scope: str
    ) -> None:
        """R16, R20: a retirement lets every revision go; now it reads ``None``."""
        await write_history(storage, CURRENT_ONLY[scope])
        await storage.commit([RetireDocument(10)])
        storage = await self.checkpoint(storage)
        assert await storage.document(10) is None
        for at in range(0, storage.last_seq + 2):
            with pytest.raises(StorageRejected, match=NO_HISTORY_PATTERN):
                await storage.document(10, at)

    async def test_a_document_that_never_existed_reads_none_at_any_seq(
        self, storage: Storage
    ) -> None:
        """Protocol, Reads: an unknown document ID has no kind to refuse by; it is ``None``."""
        await storage.commit([conversation(1)])
        assert await storage.document(99) is None
        assert await storage.document(99, 1) is None

    async def test_current_only_documents_lose_revisions_before_their_newest_base(
        self, storage: Storage, phase: str
    ) -> None:
        """R16, R129: after a base, a copy as of an older point finds nothing to copy."""
        await write_history(storage, latest(1))
        await storage.commit([conversation(5, parent=1, at=3)])
        storage = await self.checkpoint(storage)
        for at in range(1, 5):
            copy = CopyDocument(20, "notes", latest(5), 10, at)
            await rejects(storage, [copy], "Copy source document 10 has no content at")
        await storage.commit([CopyDocument(20, "notes", latest(5), 10, 5)])
        assert await read_at(storage, 20, None) == HISTORY[5]

    async def test_a_root_replacing_delta_is_still_a_delta_and_reclaims_nothing(
        self, storage: Storage, phase: str
    ) -> None:
        """R129: only a base (or a retirement) authorizes reclamation; seen through a copy."""
        await storage.commit([conversation(1), entry(2, 1), create(10, latest(1), {"a": 1})])
        await storage.commit([delta(10, set_op([], {"b": 2})), conversation(5, parent=1, at=2)])
        storage = await self.checkpoint(storage)
        await storage.commit([CopyDocument(20, "notes", latest(5), 10, 1)])
        assert await read_at(storage, 20, None) == ({"a": 1}, 1, 0)
        assert await read_at(storage, 10, None) == ({"b": 2}, 1, 1)

    async def test_rewindable_documents_keep_every_revision(
        self, storage: Storage, phase: str
    ) -> None:
        """R16, R129: bases on rewindable documents bound replay and remove nothing."""
        await write_history(storage, rewindable(1))
        for _ in range(3):
            await storage.commit([base(10, {"text": "again", "items": []})])
        storage = await self.checkpoint(storage)
        for at, expected in enumerate(HISTORY):
            assert await read_at(storage, 10, at) == expected, at

    async def test_a_document_read_is_the_same_through_find_scan_and_document(
        self, storage: Storage
    ) -> None:
        """Protocol, Documents: one record answers ``find_document``, scans and reads."""
        await storage.commit(
            [conversation(1), create(10, rewindable(1), {"x": 1}, kind="k", key="q")]
        )
        read = await storage.document(10)
        found = await storage.find_document(DocAddress("k", ScopeRef("conversation", 1), "q"))
        page = await storage.scan_documents(ScopeRef("conversation", 1), kind="k")
        assert read is not None
        assert found == read.record
        assert page.items == [read.record]
        assert document_read_json(read) == document_read_json(await storage.document(10, 1))
        assert isinstance(read.record.scope, ConversationScope)
