"""The ``Storage`` protocol: what every backend provides (reference section 1.9).

A backend stores records and documents and answers keyed lookups and ordered
scans. It knows nothing of tasks' meaning or of conversations beyond indexing;
the kernel's Session serializes commits, so backends add no caller mutex.

The contract, rule by rule (the conformance suite in
``pi_durable_tui.storage.conformance`` checks each one):

Commit (R1, R10, R129)
    ``commit(writes)`` stores a batch atomically and returns its sequence number:
    the first commit of a store returns 1, each later one the previous plus one.
    Everything is checked before anything durable happens; a violation raises
    ``StorageRejected``, leaves the store exactly as it was, and consumes no
    sequence number. Bad input never does anything else: no batch makes
    ``commit`` fail with an uncertain error. Checks:

    - an ID already used by another kind: ``ID <n> already belongs to <kind>``;
      IDs lie in ``1..MAX_ID``, and ID 1 belongs to the root conversation even
      before it is stored (``ID 1 already belongs to conversation``);
    - a conversation or entry written twice: ``Conversation <n> already exists`` /
      ``Entry <n> already exists``;
    - a record naming a missing conversation (entry, task, submission, fork
      parent, conversation-scoped document) or task (conversation owner,
      task-scoped document): ``Conversation <n> does not exist`` /
      ``Task <n> does not exist``; records created earlier or later in the same
      batch count as existing;
    - a task or submission moving to another conversation, or a submission
      changing type;
    - a task whose ``state`` is not an object with a task ``status`` (backends
      index tasks by status);
    - a request ID used by another submission of the same conversation:
      ``Request <id> already identifies submission <n>`` (a replacement that
      changes or drops a submission's request ID frees the old one);
    - document writes (R18): creating at an address that already has a live
      incarnation (``already has a current incarnation``); changing or retiring
      an unknown or retired document; two changes of one document in a batch; a
      change of a document created or copied in the same batch; a delta that is
      not a well-formed operation list (``json_ops.check_ops``); a delta whose
      version differs from the stored one (R15: ``version transition requires a
      base``); a copy whose source is unknown, not alive at ``source_at``, or
      created, changed or retired in the same batch, whose kind, key, history or
      fork policy differ from the source's, or whose content at ``source_at`` was
      reclaimed (a current-only source before its newest base);
    - a value that is not strict JSON (R129): non-finite numbers, keys that are
      not strings, tuples, sets, bytes, a surrogate pair split into two
      characters (``json_ops.check_json``).

    An empty batch is allowed and consumes a sequence number. After a commit,
    ``mint_id`` returns IDs above every ID in it. Any other exception from
    ``commit`` is uncertain: the batch may or may not be durable (R8).

Strings
    Every string is kept losslessly, lone surrogates included (Python makes them
    when it decodes an undecodable file name): kinds, keys, request IDs and JSON
    values round-trip, and lookups and filters by them answer like
    ``MemoryStorage``.

IDs (R-1.2)
    ``mint_id()`` returns an ID above every committed ID and every ID it returned
    before, starting at 2; it never does I/O. Past ``MAX_ID`` it raises
    ``StorageRejected("ID space is exhausted")``. A reopened store mints above
    every committed ID; an ID minted but never committed, which nothing stored
    names, may be minted again.

Reads (R10, R128)
    Every returned value is a fresh copy: mutating it, or the records given to
    ``commit``, never changes the store. Lookups return ``None`` for what does
    not exist, except that an entry lookup, entry scan or head-marker lookup in a
    conversation that does not exist raises ``StorageRejected("Unknown
    conversation <n>")``: a wrong conversation ID never passes for an empty one.

Entries and forks (R17, R19, R71)
    A conversation's visible history is its own entries plus its parent's
    visible entries with IDs up to the fork point, recursively. Entry IDs rise
    along a visible history, so ordering by ID is chronological.
    ``entry(id, conversation_id)`` finds an entry only if visible there;
    ``scan_entries`` and ``find_latest_head_marker`` are fork-aware.

Scans
    Every scan takes ``limit`` (a positive integer) and ``cursor`` (``None`` for
    the first page) and returns a ``Page`` whose ``cursor`` continues the scan,
    or ``None`` when no item is left; a ``limit`` that is not a positive integer
    raises ``ValueError``. Cursors are JSON objects owned by the
    backend: they survive a JSON round trip and a reopen; a cursor the backend
    did not make for that scan raises ``InvalidCursor``. Conversation, entry,
    task and submission scans take ``order`` (``"asc"`` or ``"desc"`` by ID;
    ``None``, the default, means the cursor's order, or without a cursor
    newest first for entries and ascending for the others); a cursor carries the
    order of the scan that made it, and a query asking for the other order with
    it raises ``InvalidCursor`` (the message names the cursor). Document scans
    are ascending. Arguments are checked in this order: limit, order, cursor,
    then the conversation an entry scan names.

Documents (R13, R16, R20, R129)
    A document is alive at seq ``s`` when ``created_at <= s < retired_at``.
    ``document(id, at)`` returns the content alive at ``at`` (``None``: now):
    the newest base at or before ``at`` with the deltas after it applied, the
    stored version, and the number of those deltas. A base or a retirement of a
    current-only document (session, task, or ``latest`` conversation scope,
    ``DocumentRecord.current_only``) reclaims its older revisions (backends
    delete them, so every backend answers alike); rewindable documents keep
    every revision. A numeric (historical) read of a current-only document
    raises ``StorageRejected("Document <id> (<kind>) does not retain historical
    content ...")`` at every seq, its current one included (R20): it is the
    caller's mistake, answered alike whatever reclamation has done. A read that
    needs a revision that should be there and is not raises
    ``StorageCorrupted("Document <id> is missing a required base")``. Storage
    checks a delta's shape, not that it fits the value (the Session derives
    deltas from the value); a read through a delta that does not apply raises
    ``StorageCorrupted``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.records import (
    ConversationRecord,
    DocAddress,
    DocumentRead,
    DocumentRecord,
    Page,
    ScopeRef,
    StoredEntry,
    SubmissionRecord,
    SubmissionStatus,
    TaskRecord,
    TaskStatus,
)
from pi_durable_tui.storage.writes import Write

ScanOrder = Literal["asc", "desc"]
"""The order of a scan by ID."""
EntryOrder = ScanOrder
"""The former name of ``ScanOrder``, from when only entry scans took an order.

REMINDER: kept so branches written against it still import; new code says
``ScanOrder``. Remove it once nothing imports it."""
DEFAULT_PAGE = 100


class Storage(Protocol):
    """A backend for one durable session store. See the module docstring for the contract."""

    @property
    def last_seq(self) -> int:
        """The sequence number of the newest commit (0 for an empty store)."""
        ...

    async def commit(self, writes: Sequence[Write]) -> int:
        """Store a batch atomically.

        Args:
            writes: The batch; borrowed only until the call returns.

        Returns:
            The batch's sequence number.

        Raises:
            StorageRejected: The batch breaks a rule; nothing was stored.
            StorageError: Anything else; the outcome is unknown.
        """
        ...

    def mint_id(self) -> int:
        """Return a fresh ID above every committed or previously minted ID.

        Raises:
            StorageRejected: With ``ID space is exhausted`` past ``MAX_ID``.
        """
        ...

    async def conversation(self, conversation_id: int) -> ConversationRecord | None:
        """Return a conversation by ID."""
        ...

    async def entry(self, entry_id: int, conversation_id: int | None = None) -> StoredEntry | None:
        """Return an entry by ID, or only if it is visible from ``conversation_id``.

        Raises:
            StorageRejected: ``Unknown conversation <n>``.
        """
        ...

    async def task(self, task_id: int) -> TaskRecord | None:
        """Return a task by ID."""
        ...

    async def submission(self, submission_id: int) -> SubmissionRecord | None:
        """Return a submission by ID."""
        ...

    async def submission_by_request(
        self, conversation_id: int, request_id: str
    ) -> SubmissionRecord | None:
        """Return the submission with this request ID in this conversation."""
        ...

    async def scan_conversations(
        self,
        *,
        owner_conversation_id: int | None = None,
        owner_task_id: int | None = None,
        order: ScanOrder | None = None,
        limit: int = DEFAULT_PAGE,
        cursor: JsonObject | None = None,
    ) -> Page[ConversationRecord]:
        """Scan conversations by ID (ascending by default), optionally by owner.

        Both owner filters must match when both are given.
        """
        ...

    async def scan_entries(
        self,
        conversation_id: int,
        *,
        min_entry_id: int | None = None,
        max_entry_id: int | None = None,
        order: ScanOrder | None = None,
        limit: int = DEFAULT_PAGE,
        cursor: JsonObject | None = None,
    ) -> Page[StoredEntry]:
        """Scan the visible history of a conversation, newest first by default.

        ``min_entry_id`` and ``max_entry_id`` are inclusive bounds.

        Raises:
            StorageRejected: ``Unknown conversation <n>``.
        """
        ...

    async def scan_tasks(
        self,
        *,
        conversation_id: int | None = None,
        kind: str | None = None,
        status: TaskStatus | Sequence[TaskStatus] | None = None,
        abort_requested: bool | None = None,
        background: bool | None = None,
        order: ScanOrder | None = None,
        limit: int = DEFAULT_PAGE,
        cursor: JsonObject | None = None,
    ) -> Page[TaskRecord]:
        """Scan tasks by ID (ascending by default); every given filter must match."""
        ...

    async def scan_submissions(
        self,
        *,
        conversation_id: int | None = None,
        status: SubmissionStatus | Sequence[SubmissionStatus] | None = None,
        order: ScanOrder | None = None,
        limit: int = DEFAULT_PAGE,
        cursor: JsonObject | None = None,
    ) -> Page[SubmissionRecord]:
        """Scan submissions by ID (ascending by default); every given filter must match."""
        ...

    async def scan_documents(
        self,
        scope: ScopeRef,
        *,
        at: int | None = None,
        kind: str | None = None,
        limit: int = DEFAULT_PAGE,
        cursor: JsonObject | None = None,
    ) -> Page[DocumentRecord]:
        """Scan, in ID order, the documents of exactly this scope alive at ``at``."""
        ...

    async def find_latest_head_marker(
        self, conversation_id: int, at_or_before: int | None = None
    ) -> StoredEntry | None:
        """Return the newest visible entry carrying ``head`` with ID at most ``at_or_before``.

        Raises:
            StorageRejected: ``Unknown conversation <n>``.
        """
        ...

    async def find_document(
        self, address: DocAddress, at: int | None = None
    ) -> DocumentRecord | None:
        """Return the incarnation at ``address`` alive at ``at`` (``None``: the live one)."""
        ...

    async def document(self, document_id: int, at: int | None = None) -> DocumentRead | None:
        """Return a document's content at ``at`` (``None``: now), or ``None`` if not alive then.

        Raises:
            StorageRejected: A numeric ``at`` for a current-only document (R20).
            StorageCorrupted: The revisions needed are missing or damaged.
        """
        ...

    async def close(self) -> None:
        """Release the store; idempotent. Later calls raise ``StorageClosed``."""
        ...
