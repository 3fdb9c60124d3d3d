r"""Conformance tests of strings: every string is kept losslessly, lone surrogates included.

Rules covered (protocol, Strings; R128, R129): Python makes lone surrogates when
it decodes bytes that are not UTF-8 (``os.fsdecode(b"file-\xff.txt")`` is
``"file-\udcff.txt"``), so a file name a tool read can hold one. Such strings
round-trip in every field (entry, task and document kinds, family keys, request
IDs, and JSON values in entries, tasks, submissions, documents and deltas), and
lookups and filters by them (request IDs, task kinds, document addresses)
answer like ``MemoryStorage``: found exactly, never confused with a similar
string (another surrogate, the replacement character, or the text of the escape
itself). A surrogate pair split into two characters, which JSON cannot carry, is
rejected like any other value that is not JSON, and the store stays usable.
"""

from __future__ import annotations

import pytest

from pi_durable_tui.storage._conformance.base import (
    ConformanceBase,
    conversation,
    create,
    delta,
    entry,
    rejects,
    rewindable,
    submission,
    task,
)
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.records import DocAddress, ScopeRef, SessionScope
from pi_durable_tui.storage.writes import Write

ODD = "file-\udcff.txt"
"""What ``os.fsdecode`` makes of the file name ``b"file-\\xff.txt"``."""
LOOKALIKES = ["file-\udcfe.txt", "file-\ufffd.txt", "file-\\udcff.txt", "file-.txt", "file-ÿ.txt"]
"""Strings a lookup by ``ODD`` must never find: another surrogate, the replacement
character, the escape's own text, nothing, and the character the byte means in Latin-1."""


async def odd_store(storage: Storage) -> int:
    """Store ``ODD`` in every field that holds a string; return the seq of the first commit."""
    first = await storage.commit(
        [
            conversation(1),
            entry(2, 1, kind=ODD, data={ODD: [ODD, {"path": ODD}]}),
            task(3, 1, kind=ODD, input={"path": ODD}),
            submission(4, 1, request_id=ODD, detail={ODD: ODD}),
            create(5, SessionScope(), {ODD: ODD}, kind=ODD, key=ODD),
            create(6, rewindable(1), {"log": ""}, kind=ODD),
        ]
    )
    await storage.commit([delta(6, {"op": "append", "path": ["log"], "text": ODD})])
    return first


class StringRules(ConformanceBase):
    """Lossless strings (protocol, Strings)."""

    async def test_strings_with_lone_surrogates_round_trip_in_every_field(
        self, storage: Storage, phase: str
    ) -> None:
        """Protocol, Strings: kinds, keys, request IDs and JSON values come back unchanged."""
        first = await odd_store(storage)
        storage = await self.checkpoint(storage)
        stored = await storage.entry(2, 1)
        assert stored is not None
        assert (stored.entry.kind, stored.entry.data) == (ODD, {ODD: [ODD, {"path": ODD}]})
        job = await storage.task(3)
        assert job is not None
        assert (job.kind, job.input) == (ODD, {"path": ODD})
        handed = await storage.submission(4)
        assert handed is not None
        assert (handed.request_id, handed.detail) == (ODD, {ODD: ODD})
        family = await storage.document(5)
        assert family is not None
        assert (family.record.kind, family.record.key, family.value) == (ODD, ODD, {ODD: ODD})
        log = await storage.document(6)
        assert log is not None
        assert log.value == {"log": ODD}
        before = await storage.document(6, first)
        assert before is not None
        assert before.value == {"log": ""}

    async def test_lookups_by_strings_with_lone_surrogates_find_exactly_them(
        self, storage: Storage, phase: str
    ) -> None:
        """Protocol, Strings: request IDs, task kinds and addresses match only themselves."""
        await odd_store(storage)
        storage = await self.checkpoint(storage)
        found = await storage.submission_by_request(1, ODD)
        assert found is not None
        assert found.id == 4
        assert [t.id for t in (await storage.scan_tasks(kind=ODD)).items] == [3]
        address = DocAddress(ODD, ScopeRef("session"), ODD)
        assert (await storage.find_document(address)).id == 5  # type: ignore[union-attr]
        session = ScopeRef("session")
        assert [d.id for d in (await storage.scan_documents(session, kind=ODD)).items] == [5]
        odd_scope = ScopeRef(ODD)  # type: ignore[arg-type]  # a caller's mistake, answered
        assert (await storage.scan_documents(odd_scope)).items == []
        assert await storage.find_document(DocAddress(ODD, odd_scope, ODD)) is None
        for other in LOOKALIKES:
            assert await storage.submission_by_request(1, other) is None, other
            assert (await storage.scan_tasks(kind=other)).items == [], other
            assert await storage.find_document(DocAddress(ODD, ScopeRef("session"), other)) is None
            assert await storage.find_document(DocAddress(other, ScopeRef("session"), ODD)) is None
            assert (await storage.scan_documents(ScopeRef("session"), kind=other)).items == []

    async def test_strings_with_lone_surrogates_claim_and_free_like_any_other(
        self, storage: Storage, phase: str
    ) -> None:
        """Protocol, Commit: request IDs and addresses of them conflict only with themselves."""
        await odd_store(storage)
        storage = await self.checkpoint(storage)
        await rejects(
            storage,
            [submission(7, 1, request_id=ODD)],
            "Request file-\\udcff.txt already identifies submission 4",
            exact=True,
        )
        await rejects(
            storage,
            [create(7, SessionScope(), kind=ODD, key=ODD)],
            "already has a current incarnation",
        )
        lookalikes: list[Write] = []
        for offset, other in enumerate(LOOKALIKES):
            lookalikes.append(submission(10 + offset, 1, request_id=other))
            lookalikes.append(create(20 + offset, SessionScope(), kind=ODD, key=other))
        await storage.commit(lookalikes)
        storage = await self.checkpoint(storage)
        for offset, other in enumerate(LOOKALIKES):
            found = await storage.submission_by_request(1, other)
            assert found is not None
            assert found.id == 10 + offset
            document = await storage.find_document(DocAddress(ODD, ScopeRef("session"), other))
            assert document is not None
            assert document.id == 20 + offset
        still = await storage.submission_by_request(1, ODD)
        assert still is not None
        assert still.id == 4

    @pytest.mark.parametrize("where", ["entry", "task", "submission", "document", "request"])
    async def test_a_split_surrogate_pair_is_not_json_and_the_store_stays_usable(
        self, storage: Storage, where: str
    ) -> None:
        """R129, R8: a high surrogate then a low one would read back as one character."""
        await storage.commit([conversation(1)])
        split = "smile \ud83d\ude00"
        bad: dict[str, Write] = {
            "entry": entry(10, 1, data={"text": split}),
            "task": task(10, 1, kind=split),
            "submission": submission(10, 1, detail=[split]),
            "document": create(10, SessionScope(), {split: 1}),
            "request": submission(10, 1, request_id=split),
        }
        await rejects(storage, [bad[where]], "is not JSON")
        assert await storage.commit([entry(10, 1, data={"text": "smile \U0001f600"})]) == 2
