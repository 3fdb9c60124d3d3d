"""Checking and preparing a commit batch, shared by every backend.

``prepare_batch`` applies every rule of the commit contract (see
``pi_durable_tui.storage.protocol``) against a ``CommittedView`` of what the
store holds, and serializes every record before any I/O happens (R129, R130). A
backend then only has to write the ``PreparedBatch`` atomically. Keeping the rules
in one place is what makes the three backends agree.

The view is synchronous on purpose: ``MemoryStorage`` and ``JsonlStorage`` answer
from dictionaries, and ``SqliteStorage`` runs the whole preparation on its
database thread, so a commit costs one thread hop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, get_args

from pi_durable_tui.storage.errors import StorageCorrupted, StorageRejected, readable
from pi_durable_tui.storage.json_ops import (
    InvalidOperation,
    Json,
    JsonObject,
    check_json,
    check_ops,
    dumps,
)
from pi_durable_tui.storage.records import (
    MAX_ID,
    ROOT_CONVERSATION_ID,
    ConversationRecord,
    ConversationScope,
    DocAddress,
    DocScope,
    DocumentRecord,
    EntryRecord,
    RecordKind,
    SubmissionRecord,
    TaskRecord,
    TaskScope,
    TaskStatus,
)
from pi_durable_tui.storage.writes import (
    ChangeDocument,
    CopyDocument,
    CreateDocument,
    PutConversation,
    PutEntry,
    PutSubmission,
    PutTask,
    RetireDocument,
    Write,
)

RevisionKind = Literal["base", "delta"]
_TASK_STATUSES: frozenset[str] = frozenset(get_args(TaskStatus))


class CommittedView(Protocol):
    """Synchronous questions about committed state that batch preparation asks."""

    def id_kind(self, record_id: int) -> RecordKind | None:
        """Return the kind that owns ``record_id``, or ``None`` if unused."""
        ...

    def task_conversation(self, task_id: int) -> int | None:
        """Return the conversation of a committed task."""
        ...

    def submission_identity(self, submission_id: int) -> tuple[int, str, str | None] | None:
        """Return ``(conversation_id, type, request_id)`` of a committed submission."""
        ...

    def submission_for_request(self, conversation_id: int, request_id: str) -> int | None:
        """Return the ID of the committed submission with this request ID."""
        ...

    def document_record(self, document_id: int) -> DocumentRecord | None:
        """Return a committed document incarnation."""
        ...

    def live_document(self, address: DocAddress) -> DocumentRecord | None:
        """Return the live (unretired) incarnation at an address."""
        ...

    def document_version(self, document_id: int) -> int:
        """Return the version of a live document's newest revision."""
        ...

    def document_content(self, document_id: int, at: int) -> tuple[int, JsonObject]:
        """Return ``(version, value)`` of a document at ``at`` (for fork copies)."""
        ...


@dataclass(slots=True)
class PreparedRevision:
    """One revision to store: a base or a delta of a document at the batch's seq."""

    document_id: int
    kind: RevisionKind
    version: int
    text: str
    """JSON text of the base value, or of the operation list."""


@dataclass(slots=True)
class PreparedBatch:
    """A checked batch with every record already serialized."""

    seq: int
    conversations: list[tuple[ConversationRecord, str]] = field(default_factory=list)
    entries: list[tuple[EntryRecord, str]] = field(default_factory=list)
    tasks: list[tuple[TaskRecord, str]] = field(default_factory=list)
    """Final record of each task written, in first-write order."""
    submissions: list[tuple[SubmissionRecord, str]] = field(default_factory=list)
    new_documents: list[tuple[DocumentRecord, str]] = field(default_factory=list)
    revisions: list[PreparedRevision] = field(default_factory=list)
    retired: list[tuple[DocumentRecord, str]] = field(default_factory=list)
    """Retired incarnations with ``retired_at`` set, and their new JSON text."""
    reclaim: dict[int, bool] = field(default_factory=dict)
    """Current-only documents whose older revisions may go: ``True`` = all of them
    (retired), ``False`` = those before this batch's base."""
    new_ids: dict[int, RecordKind] = field(default_factory=dict)
    max_id: int = 0


def _serialize(value: Json, what: str) -> str:
    # ``json.dumps`` alone is not strict: it turns tuples into lists and int, float,
    # bool and None keys into strings, and a surrogate pair split into two characters
    # reads back as one (the stored value would differ from the committed one).
    # ``check_json`` refuses all of them before any I/O and names the path; ``dumps``
    # escapes lone surrogates, so the text always encodes (protocol, Strings).
    try:
        check_json(value, what)
    except (TypeError, ValueError) as error:
        raise StorageRejected(str(error)) from None
    except RecursionError:  # a cycle, or nesting deeper than any reader could parse
        raise StorageRejected(f"{what} is not JSON: it nests too deeply or holds a cycle") from None
    return dumps(value)


def prepare_batch(writes: Sequence[Write], view: CommittedView, seq: int) -> PreparedBatch:
    """Check a batch against committed state and serialize it.

    Args:
        writes: The batch.
        view: Committed state of the backend.
        seq: The sequence number this batch will get if stored.

    Returns:
        The prepared batch.

    Raises:
        StorageRejected: The batch breaks a rule of the commit contract.
    """
    return _Preparation(view, seq).run(writes)


class _Preparation:
    def __init__(self, view: CommittedView, seq: int) -> None:
        self.view = view
        self.batch = PreparedBatch(seq=seq)
        self.tasks: dict[int, TaskRecord] = {}
        self.submissions: dict[int, SubmissionRecord] = {}
        self.requests: dict[tuple[int, str], int | None] = {}
        """Request IDs claimed (a submission ID) or released (``None``) by this batch."""
        self.touched_docs: set[int] = set()
        self.created_docs: dict[int, DocumentRecord] = {}
        self.changed_docs: set[int] = set()
        self.retired_docs: set[int] = set()
        self.live_addresses: dict[DocAddress, int | None] = {}

    def run(self, writes: Sequence[Write]) -> PreparedBatch:
        for write in writes:
            self._claim_id(write)
        for write in writes:
            self._check(write)
        copies = [w for w in writes if isinstance(w, CopyDocument)]
        for copy in copies:
            if copy.source_id in self.touched_docs:
                raise StorageRejected(
                    f"Document {copy.source_id} is copied and written in the same commit"
                )
        batch = self.batch
        batch.tasks = [(r, _serialize(r.to_json(), f"Task {r.id}")) for r in self.tasks.values()]
        batch.submissions = [
            (r, _serialize(r.to_json(), f"Submission {r.id}")) for r in self.submissions.values()
        ]
        batch.max_id = max(batch.new_ids, default=0)
        return batch

    # -- IDs ---------------------------------------------------------------

    def _claim_id(self, write: Write) -> None:
        record_id, kind = _identity(write)
        if record_id is None or kind is None:
            return
        if not isinstance(record_id, int) or isinstance(record_id, bool):
            raise StorageRejected(f"ID {record_id!r} is not an integer")
        if record_id < 1 or record_id > MAX_ID:
            raise StorageRejected(f"ID {record_id} is outside 1..{MAX_ID}")
        owner = self.batch.new_ids.get(record_id) or self.view.id_kind(record_id)
        if owner is None and record_id == ROOT_CONVERSATION_ID and kind != "conversation":
            owner = "conversation"  # reserved for the root even before it is stored
        if owner is not None and owner != kind:
            raise StorageRejected(f"ID {record_id} already belongs to {owner}")
        if owner is None:
            self.batch.new_ids[record_id] = kind
        elif kind in ("conversation", "entry") and record_id in self.batch.new_ids:
            raise StorageRejected(f"{kind.capitalize()} {record_id} is written twice in one commit")
        elif kind in ("conversation", "entry"):
            raise StorageRejected(f"{kind.capitalize()} {record_id} already exists")
        elif kind == "document":
            raise StorageRejected(f"Document {record_id} already exists")

    def _exists(self, record_id: int, kind: RecordKind) -> bool:
        return (self.batch.new_ids.get(record_id) or self.view.id_kind(record_id)) == kind

    def _need_conversation(self, conversation_id: int) -> None:
        if not self._exists(conversation_id, "conversation"):
            raise StorageRejected(f"Conversation {conversation_id} does not exist")

    def _need_task(self, task_id: int) -> None:
        if not self._exists(task_id, "task"):
            raise StorageRejected(f"Task {task_id} does not exist")

    # -- writes ------------------------------------------------------------

    def _check(self, write: Write) -> None:
        if isinstance(write, PutConversation):
            self._conversation(write.record)
        elif isinstance(write, PutEntry):
            record = write.record
            _need_ids(f"Entry {record.id}", record.conversation_id, record.head, record.by_task_id)
            _need_str(f"Entry {record.id} kind", record.kind)
            self._need_conversation(record.conversation_id)
            self.batch.entries.append((record, _serialize(record.to_json(), f"Entry {record.id}")))
        elif isinstance(write, PutTask):
            self._task(write.record)
        elif isinstance(write, PutSubmission):
            self._submission(write.record)
        elif isinstance(write, CreateDocument):
            self._create_document(write)
        elif isinstance(write, CopyDocument):
            self._copy_document(write)
        elif isinstance(write, ChangeDocument):
            self._change_document(write)
        elif isinstance(write, RetireDocument):
            self._retire_document(write)
        else:  # pragma: no cover - guarded by the type checker
            raise StorageRejected(f"unknown write {write!r}")

    def _conversation(self, record: ConversationRecord) -> None:
        what = f"Conversation {record.id}"
        if record.parent is not None:
            _need_ids(what, record.parent.conversation_id, record.parent.at)
        if record.owner is not None:
            _need_ids(what, record.owner.conversation_id, record.owner.task_id)
        if record.parent is not None:
            self._need_conversation(record.parent.conversation_id)
        if record.owner is not None:
            self._need_conversation(record.owner.conversation_id)
            self._need_task(record.owner.task_id)
        text = _serialize(record.to_json(), f"Conversation {record.id}")
        self.batch.conversations.append((record, text))

    def _task(self, record: TaskRecord) -> None:
        what = f"Task {record.id}"
        _need_ids(what, record.conversation_id, record.owner)
        _need_str(f"{what} kind", record.kind)
        _check_version(record.id, record.version)
        if not isinstance(record.background, bool) or not isinstance(record.abort_requested, bool):
            raise StorageRejected(f"{what} background and abort_requested must be booleans")
        self._need_conversation(record.conversation_id)
        # Backends index tasks by status, so a state without one cannot be stored.
        if not isinstance(record.state, dict) or record.state.get("status") not in _TASK_STATUSES:
            raise StorageRejected(
                f"Task {record.id} state needs a status among {', '.join(get_args(TaskStatus))}"
            )
        before = self.tasks.get(record.id)
        conversation = before.conversation_id if before else self.view.task_conversation(record.id)
        if conversation is not None and conversation != record.conversation_id:
            raise StorageRejected(f"Task {record.id} cannot move to another conversation")
        if record.owner is not None:
            self._need_task(record.owner)
        self.tasks[record.id] = record

    def _submission(self, record: SubmissionRecord) -> None:
        what = f"Submission {record.id}"
        _need_ids(what, record.conversation_id, record.entry, record.answer)
        if record.type not in ("input", "write") or record.status not in _SUBMISSION_STATUSES:
            raise StorageRejected(f"{what} has type {record.type!r} and status {record.status!r}")
        if record.request_id is not None:
            _need_str(f"{what} request_id", record.request_id)
        self._need_conversation(record.conversation_id)
        before = self.submissions.get(record.id)
        if before is not None:
            identity: tuple[int, str, str | None] | None = (
                before.conversation_id,
                before.type,
                before.request_id,
            )
        else:
            identity = self.view.submission_identity(record.id)
        if identity is not None:
            conversation_id, kind, old_request = identity
            if conversation_id != record.conversation_id:
                raise StorageRejected(f"Submission {record.id} cannot move to another conversation")
            if kind != record.type:
                raise StorageRejected(f"Submission {record.id} cannot change its type")
            if old_request is not None and old_request != record.request_id:
                # The replaced record no longer holds its old request ID.
                self.requests[(conversation_id, old_request)] = None
        if record.request_id is not None:
            key = (record.conversation_id, record.request_id)
            if key in self.requests:
                other = self.requests[key]
            else:
                other = self.view.submission_for_request(*key)
            if other is not None and other != record.id:
                raise StorageRejected(
                    f"Request {readable(record.request_id)} already identifies submission {other}"
                )
            self.requests[key] = record.id
        self.submissions[record.id] = record

    def _need_scope(self, scope: DocScope) -> None:
        if isinstance(scope, ConversationScope):
            self._need_conversation(scope.conversation_id)
        elif isinstance(scope, TaskScope):
            self._need_task(scope.task_id)

    def _claim_address(self, address: DocAddress, document_id: int) -> None:
        if address in self.live_addresses:
            holder = self.live_addresses[address]
        else:
            live = self.view.live_document(address)
            holder = live.id if live is not None else None
        if holder is not None:
            raise StorageRejected(
                f"Document {readable(address.kind)} already has a current incarnation ({holder}) "
                "at this address"
            )
        self.live_addresses[address] = document_id

    def _new_document(self, write: CreateDocument | CopyDocument) -> DocumentRecord:
        self._need_scope(write.scope)
        if write.key is not None and not isinstance(write.key, str):
            raise StorageRejected(f"Document {write.id} key must be a string")
        record = DocumentRecord(
            id=write.id,
            kind=write.kind,
            scope=write.scope,
            created_at=self.batch.seq,
            key=write.key,
        )
        self._claim_address(record.address, record.id)
        self.created_docs[record.id] = record
        self.touched_docs.add(record.id)
        return record

    def _add_new_document(self, record: DocumentRecord, version: int, value: Json) -> None:
        if not isinstance(value, dict):
            raise StorageRejected(f"Document {record.id} value must be a JSON object")
        _check_version(record.id, version)
        text = _serialize(record.to_json(), f"Document {record.id}")
        self.batch.new_documents.append((record, text))
        self.batch.revisions.append(
            PreparedRevision(record.id, "base", version, _serialize(value, f"Document {record.id}"))
        )

    def _create_document(self, write: CreateDocument) -> None:
        record = self._new_document(write)
        self._add_new_document(record, write.version, write.value)

    def _copy_document(self, write: CopyDocument) -> None:
        source = self.view.document_record(write.source_id)
        if source is None:
            raise StorageRejected(f"Copy source document {write.source_id} does not exist")
        if write.source_at > self.batch.seq - 1 or not source.alive_at(write.source_at):
            raise StorageRejected(
                f"Copy source document {write.source_id} is not alive at {write.source_at}"
            )
        if source.kind != write.kind or source.key != write.key:
            raise StorageRejected(f"Copy of document {write.source_id} changes its kind or key")
        if not isinstance(source.scope, ConversationScope) or not isinstance(
            write.scope, ConversationScope
        ):
            raise StorageRejected("Only conversation documents can be copied")
        if (source.scope.history, source.scope.fork) != (write.scope.history, write.scope.fork):
            raise StorageRejected(
                f"Copy of document {write.source_id} changes its history or fork policy"
            )
        record = self._new_document(write)
        try:
            version, value = self.view.document_content(write.source_id, write.source_at)
        except StorageCorrupted as error:
            # A current-only source keeps nothing before its newest base (R16): copying
            # it as of an older point is a deterministic refusal, not an uncertain failure.
            raise StorageRejected(
                f"Copy source document {write.source_id} has no content at {write.source_at}: "
                f"{error}"
            ) from None
        self._add_new_document(record, version, value)

    def _live_record(self, document_id: int) -> DocumentRecord:
        record = self.view.document_record(document_id)
        if record is None:
            raise StorageRejected(f"Document {document_id} does not exist")
        if record.retired_at is not None or document_id in self.retired_docs:
            raise StorageRejected(f"Document {document_id} is retired")
        return record

    def _change_document(self, write: ChangeDocument) -> None:
        if write.id in self.created_docs:
            raise StorageRejected(
                f"Document {write.id} cannot be changed in the commit that creates it"
            )
        record = self._live_record(write.id)
        if write.id in self.changed_docs:
            raise StorageRejected(f"Document {write.id} is changed twice in one commit")
        if (write.base is None) == (write.ops is None):
            raise StorageRejected(f"Document {write.id} change needs exactly one of base or ops")
        _check_version(write.id, write.version)
        self.changed_docs.add(write.id)
        self.touched_docs.add(write.id)
        if write.base is not None:
            if not isinstance(write.base, dict):
                raise StorageRejected(f"Document {write.id} value must be a JSON object")
            text = _serialize(write.base, f"Document {write.id}")
            self.batch.revisions.append(PreparedRevision(write.id, "base", write.version, text))
            if record.current_only:
                self.batch.reclaim.setdefault(write.id, False)
            return
        stored = self.view.document_version(write.id)
        if write.version != stored:
            raise StorageRejected(
                f"Document {write.id} version transition requires a base: a delta cannot "
                f"change version {stored} to {write.version}"
            )
        try:
            check_ops(write.ops)
        except InvalidOperation as error:
            raise StorageRejected(f"Document {write.id} delta is malformed: {error}") from None
        text = _serialize(write.ops, f"Document {write.id} operations")
        self.batch.revisions.append(PreparedRevision(write.id, "delta", write.version, text))

    def _retire_document(self, write: RetireDocument) -> None:
        created = self.created_docs.get(write.id)
        if created is not None:
            if write.id in self.retired_docs:
                raise StorageRejected(f"Document {write.id} is retired")
            record = created
            self.batch.new_documents = [
                (r, t) for r, t in self.batch.new_documents if r.id != write.id
            ]
            retired = DocumentRecord(
                record.id, record.kind, record.scope, record.created_at, record.key, self.batch.seq
            )
            self.batch.new_documents.append(
                (retired, _serialize(retired.to_json(), f"Document {retired.id}"))
            )
        else:
            record = self._live_record(write.id)
            retired = DocumentRecord(
                record.id, record.kind, record.scope, record.created_at, record.key, self.batch.seq
            )
            self.batch.retired.append(
                (retired, _serialize(retired.to_json(), f"Document {retired.id}"))
            )
        self.retired_docs.add(write.id)
        self.touched_docs.add(write.id)
        self.live_addresses[record.address] = None
        if record.current_only:
            self.batch.reclaim[write.id] = True


def _check_version(document_id: int, version: int) -> None:
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise StorageRejected(f"Document {document_id} version must be a positive integer")


_SUBMISSION_STATUSES = ("queued", "placed", "done", "unanswered")


def _need_ids(what: str, *values: object) -> None:
    """Reject a reference that is not an ID (``None`` means absent and is allowed)."""
    for value in values:
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_ID:
            raise StorageRejected(f"{what} refers to {value!r}, which is not an ID in 0..{MAX_ID}")


def _need_str(what: str, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise StorageRejected(f"{what} must be a non-empty string, not {value!r}")


def _identity(write: Write) -> tuple[int | None, RecordKind | None]:
    if isinstance(write, PutConversation):
        return write.record.id, "conversation"
    if isinstance(write, PutEntry):
        return write.record.id, "entry"
    if isinstance(write, PutTask):
        return write.record.id, "task"
    if isinstance(write, PutSubmission):
        return write.record.id, "submission"
    if isinstance(write, (CreateDocument, CopyDocument)):
        return write.id, "document"
    return None, None
