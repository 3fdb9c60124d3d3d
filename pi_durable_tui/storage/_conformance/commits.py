"""Conformance tests of commits: sequence numbers, atomicity, IDs, references, JSON.

Rules covered (``pi_durable_tui.storage.protocol``): the Commit section (R1, R8,
R10, R129: seqs from 1 by one, rejection leaves the store as it was and consumes
no seq, every listed check with its message), the IDs section (R-1.2: one ID
space, root ID 1, minting from 2 and above every committed ID, exhaustion past
``MAX_ID``), and the Reads section (R10, R128: detached copies, ``None`` for what
does not exist, whatever the kind of the ID).
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from pi_durable_tui.storage._conformance.base import (
    ConformanceBase,
    conversation,
    create,
    delta,
    entry,
    rejects,
    rewindable,
    set_op,
    submission,
    task,
)
from pi_durable_tui.storage._conformance.snapshot import snapshot
from pi_durable_tui.storage.errors import StorageClosed, StorageRejected
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.records import (
    MAX_ID,
    ConversationScope,
    EntryRecord,
    SessionScope,
    SubmissionRecord,
    TaskRecord,
    TaskScope,
)
from pi_durable_tui.storage.writes import CopyDocument, PutEntry, PutSubmission, PutTask, Write

KINDS = ["conversation", "entry", "task", "submission", "document"]


def write_of_kind(kind: str, record_id: int, conversation_id: int = 1) -> Write:
    """A valid write of ``kind`` with ``record_id``, attached to ``conversation_id``."""
    if kind == "conversation":
        return conversation(record_id)
    if kind == "entry":
        return entry(record_id, conversation_id)
    if kind == "task":
        return task(record_id, conversation_id)
    if kind == "submission":
        return submission(record_id, conversation_id)
    return create(record_id, ConversationScope(conversation_id), kind=f"doc-{record_id}")


class CommitRules(ConformanceBase):
    """Sequence numbers, atomicity and rejection without effect (R1, R8, R129)."""

    async def test_a_fresh_store_has_seq_0_and_commits_count_1_2_3(self, storage: Storage) -> None:
        """R129: the first commit returns 1 and each later one the previous plus one."""
        assert storage.last_seq == 0
        assert await storage.commit([conversation(1)]) == 1
        assert await storage.commit([entry(2, 1)]) == 2
        assert await storage.commit([]) == 3
        assert storage.last_seq == 3

    async def test_an_empty_batch_is_stored_and_consumes_a_seq(self, storage: Storage) -> None:
        """Protocol, Commit: an empty batch is allowed and consumes a sequence number."""
        assert await storage.commit([]) == 1
        assert await storage.commit([]) == 2
        assert (await snapshot(storage))["conversations"] == []

    async def test_a_batch_stores_every_kind_of_record_at_one_seq(self, storage: Storage) -> None:
        """R1: one commit is atomic across conversations, entries, tasks, submissions, docs."""
        seq = await storage.commit(
            [
                conversation(1),
                entry(2, 1),
                task(3, 1),
                submission(4, 1, entry=2),
                create(5, ConversationScope(1), {"a": 1}),
            ]
        )
        assert await storage.conversation(1) is not None
        stored = await storage.entry(2)
        assert stored is not None
        assert stored.commit_seq == seq
        assert await storage.task(3) is not None
        assert await storage.submission(4) is not None
        read = await storage.document(5)
        assert read is not None
        assert read.record.created_at == seq

    async def test_a_rejected_batch_stores_none_of_its_valid_writes_and_no_seq(
        self, storage: Storage
    ) -> None:
        """R1, R8: a violation anywhere in a batch rejects all of it; the seq is not used."""
        await storage.commit([conversation(1)])
        await rejects(
            storage,
            [entry(2, 1), task(3, 1), create(4, SessionScope()), entry(5, 99)],
            "Conversation 99 does not exist",
            exact=True,
        )
        assert await storage.entry(2) is None
        assert await storage.task(3) is None
        assert await storage.document(4) is None
        assert await storage.commit([entry(2, 1)]) == 2

    async def test_a_rejected_batch_does_not_raise_the_mint_floor(self, storage: Storage) -> None:
        """R8, R-1.2: explicit IDs of a rejected batch are not counted as committed."""
        await storage.commit([conversation(1)])
        await rejects(storage, [entry(500, 1), entry(501, 99)], "does not exist")
        assert storage.mint_id() < 500

    async def test_a_closed_store_refuses_every_call_and_closing_again_is_harmless(
        self, storage: Storage
    ) -> None:
        """Protocol, close: idempotent; later calls raise ``StorageClosed``."""
        await storage.commit([conversation(1)])
        await storage.close()
        await storage.close()
        with pytest.raises(StorageClosed):
            await storage.commit([])
        with pytest.raises(StorageClosed):
            storage.mint_id()
        with pytest.raises(StorageClosed):
            await storage.conversation(1)
        with pytest.raises(StorageClosed):
            await storage.scan_tasks()


class IdRules(ConformanceBase):
    """One ID space shared by every kind (R-1.2, R4)."""

    # Pairs of one kind are covered by the immutability and replacement tests.
    @pytest.mark.parametrize("same_batch", [False, True], ids=["committed", "same-batch"])
    @pytest.mark.parametrize(
        ("first", "second"),
        [(a, b) for a in KINDS for b in KINDS if a != b],
        ids=lambda kind: str(kind),
    )
    async def test_an_id_used_by_one_kind_is_refused_to_another_with_its_kind_named(
        self, storage: Storage, first: str, second: str, same_batch: bool
    ) -> None:
        """R-1.2: ``ID <n> already belongs to <kind>``, exactly, within a batch or across."""
        await storage.commit([conversation(1)])
        if same_batch:
            batch = [write_of_kind(first, 7), write_of_kind(second, 7)]
        else:
            await storage.commit([write_of_kind(first, 7)])
            batch = [write_of_kind(second, 7)]
        await rejects(storage, batch, f"ID 7 already belongs to {first}", exact=True)

    async def test_a_copied_document_takes_its_id_from_the_one_space(
        self, storage: Storage
    ) -> None:
        """R-1.2: a ``document.copy`` may not reuse an entry's ID."""
        await storage.commit([conversation(1), entry(2, 1), create(3, rewindable(1))])
        await storage.commit([conversation(4, parent=1, at=2)])
        copy = CopyDocument(2, "notes", rewindable(4), source_id=3, source_at=1)
        await rejects(storage, [copy], "ID 2 already belongs to entry", exact=True)

    @pytest.mark.parametrize("root_stored", [False, True], ids=["root-absent", "root-stored"])
    @pytest.mark.parametrize("kind", ["entry", "task", "submission", "document"])
    async def test_id_1_already_belongs_to_the_root_conversation_stored_or_not(
        self, storage: Storage, kind: str, root_stored: bool
    ) -> None:
        """R-1.2: ``ROOT_CONVERSATION_ID = 1`` is the root's even before it is stored."""
        await storage.commit([conversation(2), *([conversation(1)] if root_stored else [])])
        await rejects(
            storage,
            [write_of_kind(kind, 1, conversation_id=2)],
            "ID 1 already belongs to conversation",
            exact=True,
        )
        if not root_stored:
            assert await storage.commit([conversation(1)]) == 2

    @pytest.mark.parametrize("bad_id", [0, -5, MAX_ID + 1, True, "7"])
    async def test_ids_outside_1_to_max_id_are_refused(self, storage: Storage, bad_id: Any) -> None:
        """Protocol, Commit: IDs lie in ``1..MAX_ID`` and are integers."""
        await storage.commit([conversation(1)])
        await rejects(storage, [PutEntry(EntryRecord(bad_id, 1, "note"))], "ID")

    async def test_max_id_itself_is_a_valid_id(self, storage: Storage) -> None:
        """Protocol, Commit: ``MAX_ID`` is inside the space."""
        await storage.commit([conversation(1), entry(MAX_ID, 1)])
        assert await storage.entry(MAX_ID) is not None

    async def test_minting_starts_at_2_and_counts_up_without_io(self, storage: Storage) -> None:
        """R-1.2: the first minted ID is 2; minting consumes no seq."""
        assert [storage.mint_id() for _ in range(3)] == [2, 3, 4]
        assert storage.last_seq == 0

    async def test_after_explicit_entry_100_the_next_mint_is_101(self, storage: Storage) -> None:
        """R-1.2: ``mint_id`` returns a number above every committed ID."""
        await storage.commit([conversation(1), entry(100, 1)])
        assert storage.mint_id() == 101

    @pytest.mark.parametrize("kind", KINDS)
    async def test_minting_goes_above_an_explicit_id_of_every_kind(
        self, storage: Storage, kind: str
    ) -> None:
        """R-1.2: committed IDs of every kind raise the mint floor."""
        await storage.commit([conversation(1)])
        await storage.commit([write_of_kind(kind, 40)])
        assert storage.mint_id() == 41

    async def test_minted_ids_are_never_reissued_even_if_unused_or_below_commits(
        self, storage: Storage
    ) -> None:
        """R-1.2, R4: above every ID committed or returned before."""
        first = storage.mint_id()
        second = storage.mint_id()
        await storage.commit([conversation(1), entry(first, 1)])
        third = storage.mint_id()
        assert first < second < third
        await storage.commit([entry(third + 10, 1)])
        fourth = storage.mint_id()
        assert fourth > third + 10
        await storage.commit([entry(second, 1)])
        assert storage.mint_id() > fourth

    async def test_minting_past_max_id_raises_id_space_is_exhausted(self, storage: Storage) -> None:
        """R-1.2: past ``MAX_ID``, ``ID space is exhausted``; nothing is stored."""
        await storage.commit([conversation(1), entry(MAX_ID - 1, 1)])
        assert storage.mint_id() == MAX_ID
        with pytest.raises(StorageRejected) as caught:
            storage.mint_id()
        assert str(caught.value) == "ID space is exhausted"
        assert storage.last_seq == 1

    async def test_an_explicit_max_id_exhausts_minting_at_once(self, storage: Storage) -> None:
        """R-1.2: after a record with ID ``MAX_ID`` nothing is left to mint."""
        await storage.commit([conversation(1), task(MAX_ID, 1)])
        with pytest.raises(StorageRejected, match=r"^ID space is exhausted$"):
            storage.mint_id()


class ImmutabilityAndReferenceRules(ConformanceBase):
    """Written-once records, references, moves and request IDs (R4, R12, Commit checks)."""

    async def test_a_conversation_is_written_once(self, storage: Storage) -> None:
        """R4: ``Conversation <n> already exists``, even for an identical record."""
        await storage.commit([conversation(1)])
        await rejects(storage, [conversation(1)], "Conversation 1 already exists", exact=True)
        await rejects(storage, [conversation(2), conversation(2)], "Conversation 2")

    async def test_an_entry_is_written_once(self, storage: Storage) -> None:
        """R4: ``Entry <n> already exists``, even for an identical record."""
        await storage.commit([conversation(1), entry(2, 1, data={"v": 1})])
        await rejects(storage, [entry(2, 1, data={"v": 1})], "Entry 2 already exists", exact=True)
        await rejects(storage, [entry(3, 1), entry(3, 1)], "Entry 3")
        stored = await storage.entry(2)
        assert stored is not None
        assert stored.entry.data == {"v": 1}

    @pytest.mark.parametrize(
        ("case", "message"),
        [
            ("entry", "Conversation 99 does not exist"),
            ("task", "Conversation 99 does not exist"),
            ("submission", "Conversation 99 does not exist"),
            ("fork parent", "Conversation 99 does not exist"),
            ("owner conversation", "Conversation 99 does not exist"),
            ("owner task", "Task 98 does not exist"),
            ("task owner", "Task 98 does not exist"),
            ("conversation document", "Conversation 99 does not exist"),
            ("task document", "Task 98 does not exist"),
        ],
    )
    async def test_a_record_naming_a_missing_conversation_or_task_is_refused(
        self, storage: Storage, case: str, message: str
    ) -> None:
        """Protocol, Commit: missing references, with their exact messages."""
        await storage.commit([conversation(1), task(2, 1)])
        writes: dict[str, Write] = {
            "entry": entry(10, 99),
            "task": task(10, 99),
            "submission": submission(10, 99),
            "fork parent": conversation(10, parent=99, at=3),
            "owner conversation": conversation(10, owner=(99, 2)),
            "owner task": conversation(10, owner=(1, 98)),
            "task owner": task(10, 1, owner=98),
            "conversation document": create(10, ConversationScope(99)),
            "task document": create(10, TaskScope(98)),
        }
        await rejects(storage, [writes[case]], message, exact=True)

    async def test_an_id_of_another_kind_is_not_a_conversation_or_task(
        self, storage: Storage
    ) -> None:
        """Protocol, Commit: a reference must name a record of the right kind."""
        await storage.commit([conversation(1), entry(2, 1), task(3, 1)])
        await rejects(storage, [entry(10, 3)], "Conversation 3 does not exist", exact=True)
        await rejects(storage, [create(10, TaskScope(2))], "Task 2 does not exist", exact=True)

    async def test_records_created_earlier_or_later_in_the_batch_count_as_existing(
        self, storage: Storage
    ) -> None:
        """Protocol, Commit: references may point forward within one batch."""
        await storage.commit(
            [
                entry(3, 2),
                create(6, TaskScope(5)),
                conversation(7, owner=(2, 5)),
                task(5, 2, owner=4),
                task(4, 2),
                conversation(2),
                conversation(8, parent=2, at=3),
            ]
        )
        owned = await storage.conversation(7)
        assert owned is not None
        assert owned.owner is not None
        assert owned.owner.task_id == 5

    async def test_a_task_never_moves_to_another_conversation(self, storage: Storage) -> None:
        """R12: a task's ``conversation_id`` never changes, across or within batches."""
        await storage.commit([conversation(1), conversation(2), task(3, 1)])
        await rejects(storage, [task(3, 2)], "cannot move to another conversation")
        await rejects(storage, [task(4, 1), task(4, 2)], "cannot move to another conversation")

    async def test_a_task_is_replaced_as_a_whole_record(self, storage: Storage) -> None:
        """Protocol, writes: ``PutTask`` replaces the whole record; the last write wins."""
        await storage.commit([conversation(1), task(2, 1, input={"x": 1})])
        await storage.commit([task(2, 1, "running", abort_requested=True), task(2, 1, "waiting")])
        record = await storage.task(2)
        assert record is not None
        assert (record.status, record.abort_requested, record.input) == ("waiting", False, None)

    async def test_task_and_submission_records_keep_every_field(
        self, storage: Storage, phase: str
    ) -> None:
        """Records' shapes: every optional field of a task and a submission round-trips."""
        full_task = TaskRecord(
            3,
            1,
            "pi.tool",
            2,
            {"args": [1, "é", None], "n": 2**60},
            {
                "status": "waiting",
                "checkpoint": {"phase": "join"},
                "on": [4],
                "policy": "fail_fast",
            },
            owner=4,
            background=True,
            abort_requested=True,
            started_at=1700000000.25,
            ended_at=0.0,
            memos={"m": {"first": True}},
        )
        bare_task = TaskRecord(4, 1, "job", 1, None, {"status": "terminal", "outcome": {}})
        full_submission = SubmissionRecord(
            5, 1, "input", "unanswered", "req-é", 2, 2, "model_error", {"error": "x", "code": 1.5}
        )
        bare_submission = SubmissionRecord(6, 1, "write", "queued")
        await storage.commit(
            [
                conversation(1),
                entry(2, 1),
                PutTask(full_task),
                PutTask(bare_task),
                PutSubmission(full_submission),
                PutSubmission(bare_submission),
            ]
        )
        storage = await self.checkpoint(storage)
        assert await storage.task(3) == full_task
        assert await storage.task(4) == bare_task
        assert await storage.submission(5) == full_submission
        assert await storage.submission(6) == bare_submission

    async def test_a_task_state_needs_a_known_status(self, storage: Storage) -> None:
        """Records' shapes: ``state`` is an object whose ``status`` is a task status."""
        await storage.commit([conversation(1)])
        bad = TaskRecord(2, 1, "job", 1, None, {"checkpoint": {}})
        await rejects(storage, [PutTask(bad)], "Task 2 state needs a status")

    async def test_a_submission_never_moves_or_changes_type(self, storage: Storage) -> None:
        """Protocol, Commit: submissions keep their conversation and type."""
        await storage.commit([conversation(1), conversation(2), submission(3, 1)])
        await rejects(storage, [submission(3, 2)], "cannot move to another conversation")
        await rejects(storage, [submission(3, 1, type="write")], "cannot change its type")
        await rejects(storage, [submission(4, 1), submission(4, 1, type="write")], "type")

    async def test_a_request_id_identifies_one_submission_per_conversation(
        self, storage: Storage
    ) -> None:
        """Protocol, Commit: ``Request <id> already identifies submission <n>``."""
        await storage.commit([conversation(1), conversation(2), submission(3, 1, request_id="r")])
        await rejects(
            storage,
            [submission(4, 1, request_id="r")],
            "Request r already identifies submission 3",
            exact=True,
        )
        await rejects(
            storage,
            [submission(5, 2, request_id="q"), submission(6, 2, request_id="q")],
            "Request q already identifies submission 5",
            exact=True,
        )
        await storage.commit([submission(3, 1, status="placed", request_id="r", entry=None)])
        await storage.commit([submission(4, 2, request_id="r")])
        found = await storage.submission_by_request(1, "r")
        assert found is not None
        assert (found.id, found.status) == (3, "placed")
        other = await storage.submission_by_request(2, "r")
        assert other is not None
        assert other.id == 4
        assert await storage.submission_by_request(1, "nope") is None
        assert await storage.submission_by_request(99, "r") is None

    async def test_a_replaced_request_id_no_longer_finds_the_submission(
        self, storage: Storage
    ) -> None:
        """Protocol, Commit: a request ID is used by a submission's current record only."""
        await storage.commit([conversation(1), submission(2, 1, request_id="a")])
        await storage.commit([submission(2, 1, request_id="b")])
        assert await storage.submission_by_request(1, "a") is None
        found = await storage.submission_by_request(1, "b")
        assert found is not None
        assert found.id == 2
        await storage.commit([submission(3, 1, request_id="a"), submission(2, 1)])
        found = await storage.submission_by_request(1, "a")
        assert found is not None
        assert found.id == 3
        assert await storage.submission_by_request(1, "b") is None


NOT_JSON: list[Any] = [
    math.nan,
    math.inf,
    {1, 2},
    b"bytes",
    (1, 2),
    {1: "int key"},
    object(),
    "split \ud83d\ude00 pair",
    {"key \ud800\udc00": 1},
]


class JsonAndCopyRules(ConformanceBase):
    """Strict JSON values (R129) and detached copies (R10, R128)."""

    @pytest.mark.parametrize("value", NOT_JSON, ids=lambda v: type(v).__name__ + repr(v)[:8])
    @pytest.mark.parametrize("where", ["entry", "task", "submission", "document", "delta"])
    async def test_a_value_that_is_not_strict_json_rejects_the_whole_batch(
        self, storage: Storage, where: str, value: Any
    ) -> None:
        """R129: NaN, infinities, sets, bytes, tuples, non-string keys, objects, split pairs.

        A surrogate pair split into two characters would read back as one (lone
        surrogates are kept, see ``strings``).
        """
        await storage.commit([conversation(1), create(2, SessionScope(), {"a": 1})])
        nested: Any = {"ok": [1, {"deep": value}]}
        bad: dict[str, Write] = {
            "entry": entry(10, 1, data=nested),
            "task": task(10, 1, input=nested),
            "submission": submission(10, 1, detail=nested),
            "document": create(10, ConversationScope(1), nested),
            "delta": delta(2, set_op(["a"], nested)),
        }
        await rejects(storage, [conversation(3), bad[where]], "is not JSON")

    async def test_changing_committed_inputs_afterwards_changes_nothing_stored(
        self, storage: Storage
    ) -> None:
        """R10: commit arguments are borrowed only until ``commit`` returns."""
        data: dict[str, Any] = {"list": [1, 2]}
        value: dict[str, Any] = {"items": ["a"]}
        ops = [set_op(["items", 1], "b")]
        first = entry(2, 1, data=data)
        job = task(3, 1, input={"n": 1})
        await storage.commit([conversation(1), first, job, create(4, rewindable(1), value)])
        await storage.commit([delta(4, *ops)])
        data["list"].append(3)
        value["items"].append("z")
        ops[0]["value"] = "changed"
        job.record.state["status"] = "terminal"
        assert isinstance(job.record.input, dict)
        job.record.input["n"] = 2
        stored = await storage.entry(2)
        assert stored is not None
        assert stored.entry.data == {"list": [1, 2]}
        record = await storage.task(3)
        assert record is not None
        assert (record.status, record.input) == ("pending", {"n": 1})
        read = await storage.document(4)
        assert read is not None
        assert read.value == {"items": ["a", "b"]}
        old = await storage.document(4, at=1)
        assert old is not None
        assert old.value == {"items": ["a"]}

    async def test_changing_returned_records_changes_nothing_stored(self, storage: Storage) -> None:
        """R10, R128: every read returns a fresh copy."""
        await storage.commit(
            [
                conversation(1),
                entry(2, 1, data={"list": [1]}),
                task(3, 1, input={"n": [1]}),
                create(4, SessionScope(), {"items": [1]}),
            ]
        )
        stored: Any = await storage.entry(2)
        stored.entry.data["list"].append(2)
        record: Any = await storage.task(3)
        record.input["n"].append(2)
        record.state["status"] = "terminal"
        read: Any = await storage.document(4)
        read.value["items"].append(2)
        page: Any = await storage.scan_entries(1)
        page.items[0].entry.data["list"].append(3)
        stored = await storage.entry(2)
        assert stored.entry.data == {"list": [1]}
        again = await storage.task(3)
        assert again is not None
        assert (again.input, again.status) == ({"n": [1]}, "pending")
        assert (await storage.document(4)).value == {"items": [1]}  # type: ignore[union-attr]

    async def test_lookups_return_none_for_missing_ids_and_ids_of_other_kinds(
        self, storage: Storage
    ) -> None:
        """Protocol, Reads: ``None`` for what does not exist, whatever owns the ID."""
        await storage.commit(
            [conversation(1), entry(2, 1), task(3, 1), submission(4, 1), create(5, SessionScope())]
        )
        for missing in (2, 3, 4, 5, 99):
            assert await storage.conversation(missing) is None
        for missing in (1, 3, 4, 5, 99):
            assert await storage.entry(missing) is None
        for missing in (1, 2, 3, 4, 99):
            assert await storage.document(missing) is None
        for missing in (1, 2, 4, 5, 99):
            assert await storage.task(missing) is None
        for missing in (1, 2, 3, 5, 99):
            assert await storage.submission(missing) is None
