"""``Tx``: what a commit callback may read and write (R1, R5-R11, R17-R18, R70).

A transaction stages everything and writes nothing until its callback returns;
then the Session prepares the commit (creation hooks, task rules, document diffs,
fork copies) into one storage batch. A ``Tx`` is the author's handle on a
``StagedCommit`` (``_staging``) and shows only the documented surface
(``_SURFACE``). Rules:

- Table reads (conversations, entries, tasks, submissions, scans) are async and
  allowed only before the first table write; afterwards they raise
  ``ReadAfterWrite`` (R5). Document reads and writes stay allowed.
- Creation methods return the created record; callers never read it back.
- A refused write (a non-JSON value, a missing ownership) raises at once and
  leaves the transaction as it was: it does not count as a table write.
- ``tx.doc`` acquires a document (creating a missing one from ``initial``, R9);
  the first acquisition of an address in a commit is memoized.
- When the callback settles, the handle it received is revoked: every later use
  raises ``TransactionClosed`` (R6), even while the commit still prepares. Hooks
  the kernel calls during preparation get handles of their own.

Whether new owned work has a live owner (R11) is judged on the commit's
candidate records when it prepares (the tasks part of the kernel).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, ClassVar, Literal, Protocol

from pi_durable_tui.kernel._errors import (
    KernelError,
    OwnershipRejected,
    ReadAfterWrite,
    TransactionClosed,
)
from pi_durable_tui.kernel._owners import (
    ConversationOwned,
    ConversationOwnership,
    TaskOwned,
    TaskOwnership,
)
from pi_durable_tui.kernel._staging import StagedCommit
from pi_durable_tui.kernel.docs import DocDefinition
from pi_durable_tui.storage.json_ops import (
    Json,
    JsonObject,
    check_json,
    checked_copy_json,
    copy_json,
)
from pi_durable_tui.storage.protocol import ScanOrder
from pi_durable_tui.storage.records import (
    ROOT_CONVERSATION_ID,
    ConversationOwner,
    ConversationRecord,
    EntryRecord,
    ForkPoint,
    Page,
    StoredEntry,
    SubmissionRecord,
    SubmissionStatus,
    SubmissionType,
    TaskRecord,
    TaskStatus,
)

SETTLED: tuple[SubmissionStatus, ...] = ("done", "unanswered")


class TaskKind(Protocol):
    """What ``Tx.create_task`` needs of a task definition (``define_task`` builds one)."""

    @property
    def name(self) -> str:
        """The task kind, stored on the record."""
        ...

    @property
    def version(self) -> int:
        """The definition's version, stored on the record."""
        ...

    def first_checkpoint(self, task_input: Json) -> JsonObject:
        """Return the checkpoint a new task starts at, checked."""
        ...


class Tx:
    """The transaction of one commit callback. Created by the kernel, never directly.

    Args:
        staged: The commit this handle stages into; the new handle revokes the
            previous one.
    """

    _SURFACE: ClassVar[frozenset[str]] = frozenset(
        {
            "conversation",
            "entry",
            "task",
            "submission",
            "submission_by_request",
            "scan_entries",
            "scan_tasks",
            "scan_conversations",
            "scan_submissions",
            "append",
            "create_conversation",
            "create_root_conversation",
            "fork_conversation",
            "create_task",
            "create_submission",
            "place_submission",
            "settle_submission",
            "doc",
            "retire_doc",
        }
    )
    """The public members: what authors may use (DESIGN.md 3.1)."""

    def __init__(self, staged: StagedCommit) -> None:
        self._staged = staged
        self._storage = staged.storage
        staged.holder = self

    def _check_active(self) -> None:
        if self._staged.holder is not self:
            raise TransactionClosed()

    def _read_table(self, what: str) -> None:
        self._check_active()
        if self._staged.wrote_table:
            raise ReadAfterWrite(what)

    def _write_table(self) -> None:
        self._check_active()
        self._staged.wrote_table = True

    # -- table reads (R5) --

    async def conversation(self, conversation_id: int) -> ConversationRecord | None:
        """Read a conversation."""
        self._read_table("conversation")
        return await self._storage.conversation(conversation_id)

    async def entry(self, entry_id: int, conversation_id: int | None = None) -> StoredEntry | None:
        """Read an entry, optionally only if visible from a conversation."""
        self._read_table("entry")
        return await self._storage.entry(entry_id, conversation_id)

    async def task(self, task_id: int) -> TaskRecord | None:
        """Read a task."""
        self._read_table("task")
        return await self._staged.read_task(task_id)

    async def submission(self, submission_id: int) -> SubmissionRecord | None:
        """Read a submission."""
        self._read_table("submission")
        return await self._storage.submission(submission_id)

    async def submission_by_request(
        self, conversation_id: int, request_id: str
    ) -> SubmissionRecord | None:
        """Read the submission with a request ID in a conversation."""
        self._read_table("submission")
        return await self._storage.submission_by_request(conversation_id, request_id)

    async def scan_entries(
        self,
        conversation_id: int,
        *,
        min_entry_id: int | None = None,
        max_entry_id: int | None = None,
        order: ScanOrder | None = None,
        limit: int = 100,
        cursor: JsonObject | None = None,
    ) -> Page[StoredEntry]:
        """Scan a conversation's visible entries (committed state only)."""
        self._read_table("entries")
        return await self._storage.scan_entries(
            conversation_id,
            min_entry_id=min_entry_id,
            max_entry_id=max_entry_id,
            order=order,
            limit=limit,
            cursor=cursor,
        )

    async def scan_tasks(
        self,
        *,
        conversation_id: int | None = None,
        kind: str | None = None,
        status: TaskStatus | Sequence[TaskStatus] | None = None,
        limit: int = 100,
        cursor: JsonObject | None = None,
    ) -> Page[TaskRecord]:
        """Scan tasks (committed state only)."""
        self._read_table("tasks")
        return await self._storage.scan_tasks(
            conversation_id=conversation_id, kind=kind, status=status, limit=limit, cursor=cursor
        )

    async def scan_conversations(
        self,
        *,
        owner_conversation_id: int | None = None,
        owner_task_id: int | None = None,
        limit: int = 100,
        cursor: JsonObject | None = None,
    ) -> Page[ConversationRecord]:
        """Scan conversations by owner (committed state only)."""
        self._read_table("conversations")
        return await self._storage.scan_conversations(
            owner_conversation_id=owner_conversation_id,
            owner_task_id=owner_task_id,
            limit=limit,
            cursor=cursor,
        )

    async def scan_submissions(
        self,
        *,
        conversation_id: int | None = None,
        status: SubmissionStatus | Sequence[SubmissionStatus] | None = None,
        limit: int = 100,
        cursor: JsonObject | None = None,
    ) -> Page[SubmissionRecord]:
        """Scan submissions (committed state only)."""
        self._read_table("submissions")
        return await self._storage.scan_submissions(
            conversation_id=conversation_id, status=status, limit=limit, cursor=cursor
        )

    # -- table writes --

    def append(
        self,
        conversation_id: int,
        kind: str,
        *,
        model: list[Any] | None = None,
        data: Json = None,
        head: int | Literal["self"] | None = None,
        edits: list[Any] | None = None,
    ) -> EntryRecord:
        """Append an immutable entry to a conversation.

        Args:
            conversation_id: The conversation.
            kind: The entry kind, for example ``pi.user``.
            model: Messages this entry contributes to model context.
            data: Application JSON.
            head: Makes the entry a head marker; ``"self"`` names the new entry.
            edits: Context edits.

        Returns:
            The entry record, with its new ID.

        Raises:
            TypeError: When ``model``, ``data`` or ``edits`` is not JSON (path named).
        """
        self._check_active()
        model_copy = checked_copy_json(model, "entry.model")
        data_copy = checked_copy_json(data, "entry.data")
        edits_copy = checked_copy_json(edits, "entry.edits")
        self._write_table()
        entry_id = self._storage.mint_id()
        record = EntryRecord(
            id=entry_id,
            conversation_id=conversation_id,
            kind=kind,
            model=model_copy,  # type: ignore[arg-type]
            data=data_copy,
            head=entry_id if head == "self" else head,
            edits=edits_copy,  # type: ignore[arg-type]
            by_task_id=self._staged.origin_task,
        )
        self._staged.entries.append(record)
        return record

    def create_conversation(self, ownership: ConversationOwnership) -> ConversationRecord:
        """Create a conversation, ownerless or owned by a live task (R11, R-1.3)."""
        self._write_table()
        record = ConversationRecord(self._storage.mint_id(), owner=self._owner_pair(ownership))
        self._staged.conversations[record.id] = record
        return record

    def create_root_conversation(self) -> ConversationRecord:
        """Create the root conversation, ID 1, ownerless (R-1.2, R24).

        Storage rejects the commit when conversation 1 exists already.
        """
        self._write_table()
        record = ConversationRecord(ROOT_CONVERSATION_ID)
        self._staged.conversations[record.id] = record
        return record

    def fork_conversation(
        self, parent_id: int, at: int, ownership: ConversationOwnership
    ) -> ConversationRecord:
        """Fork a conversation at a committed entry visible from it (R17, R26).

        The child sees the parent's entries through ``at`` (inclusive); its
        documents are copied by their fork policy when the commit prepares.
        """
        self._write_table()
        record = ConversationRecord(
            self._storage.mint_id(),
            parent=ForkPoint(parent_id, at),
            owner=self._owner_pair(ownership),
        )
        self._staged.conversations[record.id] = record
        self._staged.forks.append(record)
        return record

    def _owner_pair(self, ownership: ConversationOwnership) -> ConversationOwner | None:
        if isinstance(ownership, TaskOwned):
            # The owner's conversation is derived, never written by callers.
            owner = self._staged.candidate_task(ownership.task_id)
            conversation_id = owner.conversation_id if owner is not None else 0
            return ConversationOwner(conversation_id, ownership.task_id)
        return None

    def create_task(
        self,
        definition: TaskKind,
        input: Json = None,
        *,
        ownership: TaskOwnership,
        conversation_id: int | None = None,
        background: bool = False,
    ) -> TaskRecord:
        """Create a pending task (R11, R36).

        Args:
            definition: The task kind, a ``TaskDefinition`` from ``define_task``.
            input: The task's JSON input.
            ownership: ``ConversationOwned()`` or ``TaskOwned(task_id)``.
            conversation_id: Required for conversation-owned tasks; defaults to the
                owner task's conversation.
            background: Only for conversation-owned tasks.

        Returns:
            The pending task record.

        Raises:
            OwnershipRejected: When ownership is missing or the conversation is unknown.
        """
        self._check_active()
        if not isinstance(ownership, (ConversationOwned, TaskOwned)):
            raise OwnershipRejected(
                "A task needs an ownership: ConversationOwned() or TaskOwned(id)"
            )
        input_copy = checked_copy_json(input, "task.input")
        owner_id = ownership.task_id if isinstance(ownership, TaskOwned) else None
        if conversation_id is None and owner_id is not None:
            owner = self._staged.candidate_task(owner_id)
            # An owner that is not live is rejected with its status when the commit
            # prepares (R11); 0 names no conversation meanwhile.
            conversation_id = owner.conversation_id if owner is not None else 0
        if conversation_id is None:
            raise OwnershipRejected("A conversation-owned task needs a conversation_id")
        checkpoint = definition.first_checkpoint(input)
        self._write_table()
        record = TaskRecord(
            id=self._storage.mint_id(),
            conversation_id=conversation_id,
            kind=definition.name,
            version=definition.version,
            input=input_copy,
            state={"status": "pending", "checkpoint": checkpoint},
            owner=owner_id,
            background=background,
            memos={},
        )
        self._staged.tasks[record.id] = record
        self._staged.new_task_ids.append(record.id)
        return record

    # -- submissions (raw, R70) --

    def create_submission(
        self,
        conversation_id: int,
        type: SubmissionType,
        *,
        status: SubmissionStatus = "queued",
        request_id: str | None = None,
        entry: int | None = None,
        answer: int | None = None,
        reason: str | None = None,
        detail: Json = None,
    ) -> SubmissionRecord:
        """Write a submission record with no admission rules (R70)."""
        self._check_active()
        detail_copy = checked_copy_json(detail, "submission.detail")
        self._write_table()
        record = SubmissionRecord(
            id=self._storage.mint_id(),
            conversation_id=conversation_id,
            type=type,
            status=status,
            request_id=request_id,
            entry=entry,
            answer=answer,
            reason=reason,
            detail=detail_copy,
        )
        self._staged.submissions[record.id] = record
        return record

    async def _candidate_submission(self, submission_id: int) -> SubmissionRecord:
        self._check_active()
        record = self._staged.submissions.get(submission_id)
        if record is None:
            record = await self._storage.submission(submission_id)
        if record is None:
            raise KernelError(f"Submission {submission_id} does not exist")
        return record

    async def place_submission(self, submission_id: int, entry: int) -> SubmissionRecord:
        """Place a queued submission: an input becomes ``placed``, a write ``done`` (R-1.8).

        Raises:
            KernelError: When the submission is unknown or not queued.
        """
        record = await self._candidate_submission(submission_id)
        if record.status != "queued":
            raise KernelError(f"Submission {submission_id} is {record.status}, not queued")
        self._write_table()
        status: SubmissionStatus = "placed" if record.type == "input" else "done"
        placed = replace(record, status=status, entry=entry)
        self._staged.submissions[submission_id] = placed
        return placed

    async def settle_submission(
        self,
        submission_id: int,
        status: Literal["done", "unanswered"],
        *,
        answer: int | None = None,
        reason: str | None = None,
        detail: Json = None,
    ) -> SubmissionRecord:
        """Settle a submission; settling a settled one changes nothing (R64).

        Raises:
            KernelError: When the submission is unknown, or ``done`` is asked for an
                input that was never placed.
        """
        record = await self._candidate_submission(submission_id)
        if record.status in SETTLED:
            return record
        if status == "done" and record.type == "input" and record.status != "placed":
            raise KernelError(f"Submission {submission_id} was never placed; it cannot be done")
        check_json(detail, "submission.detail")
        self._write_table()
        settled = replace(
            record,
            status=status,
            answer=answer if status == "done" else None,
            reason=reason if status == "unanswered" else None,
            detail=copy_json(detail) if status == "unanswered" else None,
        )
        self._staged.submissions[submission_id] = settled
        return settled

    # -- documents (R9) --

    async def doc(
        self,
        definition: DocDefinition,
        scope_id: int | None = None,
        key: str | None = None,
        seed: Json = None,
    ) -> JsonObject:
        """Acquire a document for reading and writing, creating it when missing (R9).

        Args:
            definition: The document kind.
            scope_id: The conversation or task ID (``None`` for session documents).
            key: The family key, for family documents.
            seed: Passed to ``initial(seed)`` when a family member is created; the
                first caller's seed wins.

        Returns:
            The draft: a mutable copy of the committed value. Changes made to it
            before the callback returns are committed; later changes are ignored.

        Raises:
            DocumentAccessError: When the stored document does not fit the definition.
        """
        self._check_active()
        address = definition.address(scope_id, key)
        draft = await self._staged.documents.acquire(definition, address, seed)
        return draft.value

    async def retire_doc(
        self, definition: DocDefinition, scope_id: int | None = None, key: str | None = None
    ) -> bool:
        """Retire the live document at an address; its final content is persisted first (R9).

        Returns:
            Whether a document was retired. A later ``doc`` for the same address
            in this commit creates a new incarnation.
        """
        self._check_active()
        return await self._staged.documents.retire(definition, definition.address(scope_id, key))
