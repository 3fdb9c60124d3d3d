"""Conformance tests of ``document.copy`` (forks' documents).

Rules covered: R17 (a copy is an independent incarnation with a new ID holding
the source's value and stored version as of ``source_at``; a rewindable source
can be copied as of any point of its life, a current-only one as of now) and
every rejection of R18 and of the protocol's Commit list: unknown source, source
not alive at ``source_at``, source created, changed or retired in the same
batch, kind/key/history/fork mismatch, a non-conversation source, an occupied
target address, a missing target conversation, and (deterministically) a
current-only source as of a point its reclaimed revisions no longer cover.
"""

from __future__ import annotations

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
)
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.records import (
    ConversationScope,
    DocumentRecord,
    SessionScope,
)
from pi_durable_tui.storage.writes import CopyDocument, RetireDocument, Write


def copy(
    document_id: int,
    source_id: int,
    source_at: int,
    conversation_id: int = 5,
    *,
    scope: ConversationScope | None = None,
    kind: str = "notes",
    key: str | None = None,
) -> CopyDocument:
    """A copy of ``source_id`` into ``conversation_id`` (rewindable/asOf unless ``scope``)."""
    target = rewindable(conversation_id) if scope is None else scope
    return CopyDocument(document_id, kind, target, source_id, source_at, key)


async def source_store(storage: Storage) -> None:
    """Conversation 1 with rewindable doc 10 (``{"v": 1..3}`` at seqs 1..3), latest doc 11.

    Conversation 5 forks 1 at entry 2 in seq 3; session doc 12 exists from seq 1.
    """
    await storage.commit(
        [
            conversation(1),
            entry(2, 1),
            create(10, rewindable(1), {"v": 1}),
            create(11, latest(1), {"w": 1}, kind="live"),
            create(12, SessionScope(), {"s": 1}),
        ]
    )
    await storage.commit([delta(10, set_op(["v"], 2)), base(11, {"w": 2})])
    await storage.commit([delta(10, set_op(["v"], 3)), conversation(5, parent=1, at=2)])


class CopyRules(ConformanceBase):
    """Document copies (R17, R18)."""

    async def test_a_rewindable_document_is_copied_as_of_an_old_seq(
        self, storage: Storage, phase: str
    ) -> None:
        """R17: the copy holds the source's value at ``source_at``, with a new ID."""
        await source_store(storage)
        seq = await storage.commit([copy(20, 10, 1)])
        storage = await self.checkpoint(storage)
        read = await storage.document(20)
        assert read is not None
        assert read.record == DocumentRecord(20, "notes", rewindable(5), seq)
        assert (read.value, read.version, read.deltas_since_base) == ({"v": 1}, 1, 0)
        assert (await storage.document(10)).value == {"v": 3}  # type: ignore[union-attr]

    async def test_a_latest_document_is_copied_as_of_the_current_seq(
        self, storage: Storage, phase: str
    ) -> None:
        """R17: ``fork: current`` copies the committed value when the fork commits."""
        await source_store(storage)
        scope = ConversationScope(5, "latest", "current")
        await storage.commit([copy(20, 11, storage.last_seq, scope=scope, kind="live")])
        storage = await self.checkpoint(storage)
        assert (await storage.document(20)).value == {"w": 2}  # type: ignore[union-attr]

    async def test_a_copy_can_be_made_by_the_commit_that_creates_the_fork(
        self, storage: Storage
    ) -> None:
        """R17: a fork commit creates the conversation and copies its documents at once."""
        await source_store(storage)
        await storage.commit([conversation(30, parent=1, at=2), copy(31, 10, 2, 30)])
        assert (await storage.document(31)).value == {"v": 2}  # type: ignore[union-attr]

    async def test_a_copy_and_its_source_change_independently(
        self, storage: Storage, phase: str
    ) -> None:
        """R17: copies are independent incarnations."""
        await source_store(storage)
        await storage.commit([copy(20, 10, 3)])
        await storage.commit([delta(20, set_op(["c"], True)), delta(10, set_op(["s"], True))])
        storage = await self.checkpoint(storage)
        assert (await storage.document(20)).value == {"v": 3, "c": True}  # type: ignore[union-attr]
        assert (await storage.document(10)).value == {"v": 3, "s": True}  # type: ignore[union-attr]

    async def test_a_copy_keeps_the_stored_version_of_its_source(self, storage: Storage) -> None:
        """R17: copies keep unknown kinds and their stored versions."""
        await source_store(storage)
        upgraded = await storage.commit([base(10, {"v": 9}, version=4)])
        await storage.commit(
            [conversation(6, parent=1, at=2), copy(20, 10, upgraded), copy(21, 10, 1, 6)]
        )
        assert (await storage.document(20)).version == 4  # type: ignore[union-attr]
        assert (await storage.document(21)).version == 1  # type: ignore[union-attr]

    async def test_copying_a_current_only_document_as_of_a_reclaimed_point_is_rejected(
        self, storage: Storage
    ) -> None:
        """R16, R8: a deterministic refusal (``StorageRejected``), not an uncertain failure."""
        await source_store(storage)
        scope = ConversationScope(5, "latest", "current")
        await rejects(
            storage, [copy(20, 11, 1, scope=scope, kind="live")], "Copy source document 11"
        )

    @pytest.mark.parametrize(
        "case",
        [
            "unknown source",
            "before creation",
            "after retirement",
            "in the future",
            "source created in batch",
            "source changed in batch",
            "source retired in batch",
            "kind differs",
            "key differs",
            "history differs",
            "fork differs",
            "session source",
            "target occupied",
            "target conversation missing",
        ],
    )
    async def test_a_copy_that_breaks_r18_is_rejected(self, storage: Storage, case: str) -> None:
        """R18: every rejection of ``document.copy`` is ``StorageRejected``, changing nothing."""
        await source_store(storage)
        created = await storage.commit([create(13, rewindable(1), kind="gone"), entry(3, 1)])
        await storage.commit([RetireDocument(13)])
        now = storage.last_seq
        batches: dict[str, tuple[list[Write], str]] = {
            "unknown source": ([copy(20, 99, 1)], "99"),
            "before creation": ([copy(20, 13, created - 1, kind="gone")], "13"),
            "after retirement": ([copy(20, 13, now, kind="gone")], "13"),
            "in the future": ([copy(20, 10, now + 1)], "10"),
            "source created in batch": (
                [create(21, rewindable(1), kind="new"), copy(20, 21, now, kind="new")],
                "21",
            ),
            "source changed in batch": ([delta(10, set_op(["v"], 0)), copy(20, 10, 1)], "10"),
            "source retired in batch": ([copy(20, 10, 1), RetireDocument(10)], "10"),
            "kind differs": ([copy(20, 10, 1, kind="other")], "10"),
            "key differs": ([copy(20, 10, 1, key="k")], "10"),
            "history differs": (
                [copy(20, 10, 1, scope=ConversationScope(5, "latest", "asOf"))],
                "10",
            ),
            "fork differs": (
                [copy(20, 10, 1, scope=ConversationScope(5, "rewindable", "current"))],
                "10",
            ),
            "session source": ([copy(20, 12, 1, scope=ConversationScope(5))], ""),
            "target occupied": ([copy(20, 10, 1, 1)], "already has a current incarnation"),
            "target conversation missing": (
                [copy(20, 10, 1, 99)],
                "Conversation 99 does not exist",
            ),
        }
        batch, message = batches[case]
        await rejects(storage, batch, message)
        assert await storage.document(20) is None
