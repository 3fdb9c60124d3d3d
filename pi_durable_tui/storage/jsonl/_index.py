"""The in-memory index of a JSONL store: what is committed, and where it is on disk.

The index answers batch preparation's ``CommittedView`` questions (without
I/O, but for the request ID of a submission being replaced, read from its line)
and tells reads (``_queries``) where each record is. Its semantics are
``MemoryStorage``'s (R128), rule for rule; its shape is what makes a reopen
cheap (DESIGN.md section 4):

- Records are not held: entries, tasks and submissions stay in ``main.jsonl``
  and are read back by byte offset (``_reader``), so every read parses a
  fresh copy. The tables (``_tables``, ``_documents``) hold, per
  record, a few integer columns: IDs, conversations, filter fields, line
  locations. Memory grows by about 24 bytes per entry, not by its text.
- Each live document keeps its current value (as text, parsed when needed), so
  a current read replays nothing; a historical read replays from the newest
  base at or before the point, with revisions read from the sidecar. Which
  revisions count is exactly ``MemoryStorage``'s: a current-only document keeps
  those from its newest base on, a retired one none, a rewindable one all.
- ``sections`` and ``load`` turn the whole index into named columns and back,
  which is what a checkpoint stores (``_checkpoint``): loading is a copy
  per column, no per-record work.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pi_durable_tui.storage._batch import PreparedBatch
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.jsonl._columns import Sections
from pi_durable_tui.storage.jsonl._documents import Documents
from pi_durable_tui.storage.jsonl._reader import Content, Reader, replay
from pi_durable_tui.storage.jsonl._tables import (
    Conversations,
    Entries,
    Submissions,
    Tasks,
    request_hash,
)
from pi_durable_tui.storage.records import (
    FIRST_MINTED_ID,
    ConversationRecord,
    DocAddress,
    DocumentRecord,
    ForkPoint,
    RecordKind,
    SubmissionRecord,
    TaskRecord,
)

if TYPE_CHECKING:
    from pi_durable_tui.storage.jsonl._plan_types import Plan, Written


class JsonlIndex:
    """Committed state of a JSONL store. See the module docstring.

    ``reader`` must be attached (by the open store) before anything reads a
    record; recovery builds the index without one.
    """

    def __init__(self) -> None:
        self.seq = 0
        self.next_id = FIRST_MINTED_ID
        self.conversations = Conversations()
        self.entries = Entries()
        self.tasks = Tasks()
        self.submissions = Submissions()
        self.documents = Documents()
        self.reader: Reader | None = None
        self._kinds: dict[int, RecordKind] = {}
        """Kinds ``id_kind`` found lately: an ID never changes kind, and batch checks ask
        about the same few (the conversation every write names) again and again."""

    def read(self) -> Reader:
        """Return the attached reader."""
        if self.reader is None:  # pragma: no cover - a bug: reads before open finished
            raise RuntimeError("the index has no reader")
        return self.reader

    # -- building ---------------------------------------------------------------

    def claim(self, record_id: int) -> None:
        """Keep minting above ``record_id``."""
        if record_id >= self.next_id:
            self.next_id = record_id + 1

    def add_conversation(self, record: ConversationRecord) -> None:
        """Store a new conversation."""
        self.claim(record.id)
        self.conversations.add(record)

    def add_entry(
        self, entry_id: int, conversation_id: int, head: bool, at: int, length: int
    ) -> None:
        """Store a new entry whose line is ``length`` bytes at offset ``at``."""
        self.claim(entry_id)
        self.entries.add(entry_id, conversation_id, head, at, length)

    def put_task(self, record: TaskRecord, at: int, length: int) -> None:
        """Create or replace a task."""
        self.claim(record.id)
        self.tasks.put(record, at, length)

    def put_submission(self, record: SubmissionRecord, at: int, length: int) -> None:
        """Create or replace a submission."""
        self.claim(record.id)
        self.submissions.put(record, at, length)

    def put_document(self, record: DocumentRecord) -> int:
        """Store a new incarnation, or retire a known one; return its row."""
        self.claim(record.id)
        documents = self.documents
        row = documents.row(record.id)
        if row < 0:
            return documents.add(record)
        if record.retired_at is not None:
            documents.retire(row, record.retired_at)
        return row

    def apply(self, batch: PreparedBatch, plan: Plan, written: Written) -> None:
        """Publish a batch that is durable.

        Args:
            batch: The prepared batch.
            plan: What ``plan_commit`` serialized for it.
            written: What ``Publisher.write`` did (where, and what it reclaimed).
        """
        # REMINDER: the batch is already on disk; nothing below may fail, or memory and
        # files would disagree until the next open.
        seq = batch.seq
        start = written.main_start
        add_entry = self.entries.add
        # Each loop is guarded: most commits write one or two kinds of record.
        if batch.conversations:
            for conversation, _ in batch.conversations:
                self.add_conversation(conversation)
        if batch.entries:
            for (entry, _), (at, length) in zip(batch.entries, plan.entry_spans, strict=True):
                # No claim: ``max_id`` below covers every new ID.
                add_entry(
                    entry.id, entry.conversation_id, entry.head is not None, start + at, length
                )
        if batch.tasks:
            for (task, _), (at, length) in zip(batch.tasks, plan.task_spans, strict=True):
                self.tasks.put(task, start + at, length)
        if batch.submissions:
            for (submission, _), (at, length) in zip(
                batch.submissions, plan.submission_spans, strict=True
            ):
                self.submissions.put(submission, start + at, length)
        if batch.retired or batch.new_documents:
            # Retirements first, so an address retired and re-created in one batch ends live.
            for record, _ in (*batch.retired, *batch.new_documents):
                self.put_document(record)
        if batch.revisions:
            self._apply_revisions(batch, plan, written)
        self.next_id = max(self.next_id, batch.max_id + 1)
        self.seq = seq

    def _apply_revisions(self, batch: PreparedBatch, plan: Plan, written: Written) -> None:
        seq = batch.seq
        documents = self.documents
        for document_id, (first, size) in written.rescanned.items():
            row = documents.row(document_id)
            documents.first[row] = first
            documents.size[row] = size
        rows: dict[int, int] = {}
        forget = self.read().forget
        for revision in batch.revisions:
            document_id = revision.document_id
            row = rows[document_id] = documents.row(document_id)
            line = plan.sidecar_bytes.get(document_id, 0)
            documents.add_revision(row, seq, revision.kind, revision.version, line)
            forget(document_id)
        for document_id, content in plan.contents.items():
            row = rows[document_id]
            if content.text is not None:
                documents.set_text(row, content.text)
            else:
                assert content.value is not None
                documents.set_value(row, content.value)
        for document_id, everything in batch.reclaim.items():
            if written.reclaimed.get(document_id) is False:
                documents.pending.add(document_id)  # R132: a later open finishes the job
                continue
            # Rewritten, removed, or never written (nothing to drop): the file now holds
            # the new base alone, or nothing.
            line = 0 if everything else plan.sidecar_bytes.get(document_id, 0)
            documents.reclaimed(documents.row(document_id), everything, line)

    # -- CommittedView --------------------------------------------------------

    def id_kind(self, record_id: int) -> RecordKind | None:
        """Return the kind that owns an ID."""
        if record_id >= self.next_id:
            return None
        kind = self._kinds.get(record_id)
        if kind is not None:
            return kind
        if self.conversations.row(record_id) >= 0:
            kind = "conversation"
        elif self.tasks.row(record_id) >= 0:
            kind = "task"
        elif self.documents.row(record_id) >= 0:
            kind = "document"
        elif self.submissions.row(record_id) >= 0:
            kind = "submission"
        elif self.entries.owner(record_id) is not None:
            kind = "entry"
        else:
            return None
        if len(self._kinds) >= 4096:
            self._kinds.clear()
        self._kinds[record_id] = kind
        return kind

    def task_conversation(self, task_id: int) -> int | None:
        """Return the conversation of a committed task."""
        if task_id >= self.next_id:
            return None  # a new task: no lookup
        row = self.tasks.row(task_id)
        return None if row < 0 else self.tasks.conversation[row]

    def submission_identity(self, submission_id: int) -> tuple[int, str, str | None] | None:
        """Return the conversation, type and request ID of a committed submission."""
        if submission_id >= self.next_id:
            return None  # a new submission: no lookup
        record = self.submission(submission_id)
        return None if record is None else (record.conversation_id, record.type, record.request_id)

    def submission_for_request(self, conversation_id: int, request_id: str) -> int | None:
        """Return the ID of the submission with this request ID."""
        if not self.submissions.requests.has(request_hash(conversation_id, request_id)):
            return None  # the common case: a fresh request ID, no record to read
        record = self.submission_by_request(conversation_id, request_id)
        return None if record is None else record.id

    def document_record(self, document_id: int) -> DocumentRecord | None:
        """Return a document incarnation."""
        row = self.documents.row(document_id)
        return None if row < 0 else self.documents.record(row)

    def live_document(self, address: DocAddress) -> DocumentRecord | None:
        """Return the live incarnation at an address."""
        row = self.documents.find(address, None)
        return None if row < 0 else self.documents.record(row)

    def document_version(self, document_id: int) -> int:
        """Return the version of a live document's newest revision."""
        return self.documents.version[self.documents.row(document_id)]

    def document_content(self, document_id: int, at: int) -> tuple[int, JsonObject]:
        """Return a document's version and value at ``at`` (shared: do not mutate)."""
        content = self.content(document_id, at)
        return content.version, content.value

    # -- records and content ----------------------------------------------------

    def parent_of(self, conversation_id: int) -> ForkPoint | None:
        """Return a conversation's fork point."""
        return self.conversations.parent_of(conversation_id)

    def task(self, task_id: int) -> TaskRecord | None:
        """Return a task, read from its line."""
        tasks = self.tasks
        row = tasks.row(task_id)
        if row < 0:
            return None
        [(_, record)] = self.read().records("task", [(task_id, tasks.at[row], tasks.length[row])])
        return TaskRecord.from_json(record)

    def submission(self, submission_id: int) -> SubmissionRecord | None:
        """Return a submission, read from its line."""
        table = self.submissions
        row = table.row(submission_id)
        if row < 0:
            return None
        items = [(submission_id, table.at[row], table.length[row])]
        [(_, record)] = self.read().records("submission", items)
        return SubmissionRecord.from_json(record)

    def submission_by_request(
        self, conversation_id: int, request_id: str
    ) -> SubmissionRecord | None:
        """Return the submission holding this request ID in this conversation."""
        for candidate in self.submissions.requests.get(request_hash(conversation_id, request_id)):
            record = self.submission(candidate)
            if (
                record is not None
                and record.conversation_id == conversation_id
                and record.request_id == request_id
            ):
                return record
        return None

    def content(self, document_id: int, at: int) -> Content:
        """Return a document's content at ``at``; the kept value when it is current.

        The value is shared when current: callers copy it before handing it out.
        """
        documents = self.documents
        row = documents.row(document_id)
        if not documents.retired[row] and at >= documents.last_seq[row]:
            value = documents.shared_value(row)
            return Content(documents.version[row], value, documents.deltas[row])
        revisions = self.read().revisions(
            document_id, documents.keep_from(row), documents.ordinals[row], documents.last_seq[row]
        )
        return replay(document_id, revisions, at)

    # -- checkpoint ---------------------------------------------------------------

    def sections(self) -> Sections:
        """Return the whole index as named columns (``load`` takes them back)."""
        self.documents.flush_values()
        return {
            **self.conversations.sections("conversations"),
            **self.entries.sections(),
            **self.tasks.sections("tasks"),
            **self.submissions.sections("submissions"),
            **self.documents.sections("documents"),
        }

    def codes(self) -> dict[str, Any]:
        """Return the JSON that goes with ``sections``: the scalars and every code table."""
        return {
            "seq": self.seq,
            "next_id": self.next_id,
            **self.tasks.codes(),
            **self.submissions.codes(),
            **self.documents.codes(),
        }

    @classmethod
    def load(cls, codes: Mapping[str, Any], sections: Mapping[str, array[int]]) -> JsonlIndex:
        """Rebuild an index from ``codes`` and ``sections``.

        Raises:
            ValueError: Something is missing or inconsistent.
            KeyError: A code table is missing.
            TypeError: A scalar has the wrong type.
        """
        index = cls()
        index.seq = _count(codes["seq"])
        index.next_id = _count(codes["next_id"])
        index.conversations.load("conversations", sections)
        index.entries.load(sections)
        index.tasks.load("tasks", sections)
        index.tasks.load_codes(codes)
        index.submissions.load("submissions", sections)
        index.submissions.load_codes(codes)
        index.documents.load("documents", sections)
        index.documents.load_codes(codes)
        return index


def _count(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TypeError(f"{value!r} is not a count")
    return value
