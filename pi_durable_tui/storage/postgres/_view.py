"""What a PostgreSQL commit is checked against: a cached committed view, filled in one query.

``prepare_batch`` (shared by every backend, R1, R18) asks its ``CommittedView``
synchronous questions: which kind owns an ID, a task's conversation, a
submission's identity, the holder of a request ID, a document's record, live
incarnation at an address, version, or content. SQLite answers each with a
query on its own thread; here each would be a network round trip. So:

- ``Known`` keeps the answers. The store has one writer, this process (the
  advisory lock, ``_lock``), so an answer stays true until this process commits
  something that changes it, and ``learn`` applies every committed batch to the
  answers it touches. Most commits of a running session (an entry, a task step,
  a streamed delta) then ask nothing of the server: one round trip per commit,
  the write itself.
- What ``Known`` lacks is fetched before preparing: ``questions`` reads the
  batch for everything ``prepare_batch`` will plausibly ask, and ``fetch`` asks
  the server all of it in one statement (``_fetch_statement``). If preparation still asks
  something unknown (the guess is only a guess), the view raises ``Unknown``,
  the commit fetches that answer and prepares again: correctness never depends
  on the guess.
- IDs at or above the committed floor (the stored mint floor) were never
  committed, so questions about them are answered without asking.
- Every map is bounded (``LIMIT``): past it, it is emptied before the next commit
  and refilled on demand.

A document's content at a point (asked only by fork copies) is read into a map
that lives for one commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from pi_durable_tui.storage._batch import PreparedBatch
from pi_durable_tui.storage.errors import StorageCorrupted
from pi_durable_tui.storage.json_ops import InvalidOperation, JsonObject, Op, apply_ops, loads
from pi_durable_tui.storage.postgres._columns import column_text, fits
from pi_durable_tui.storage.postgres._schema import SCHEMA
from pi_durable_tui.storage.records import (
    ConversationScope,
    DocAddress,
    DocumentRecord,
    RecordKind,
    ScopeRef,
    SubmissionRecord,
    TaskScope,
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

LIMIT = 4096
"""Answers each map holds before it is emptied (a bound, not an LRU)."""

Identity = tuple[int, str, str | None]
"""A submission's conversation, type and request ID."""
RequestKey = tuple[int, str]
_MISSING_BASE = object()


class Unknown(Exception):
    """``Known`` lacks the answer to a question ``prepare_batch`` asked; fetch and retry."""

    def __init__(self, question: Questions) -> None:
        super().__init__("a committed-view answer is not known yet")
        self.question = question


@dataclass(slots=True)
class Questions:
    """What to ask the server, by kind of question."""

    kinds: set[int] = field(default_factory=set)
    tasks: set[int] = field(default_factory=set)
    submissions: set[int] = field(default_factory=set)
    requests: set[RequestKey] = field(default_factory=set)
    documents: set[int] = field(default_factory=set)
    addresses: set[DocAddress] = field(default_factory=set)
    versions: set[int] = field(default_factory=set)
    contents: set[tuple[int, int]] = field(default_factory=set)

    def __bool__(self) -> bool:
        return any(
            (
                self.kinds,
                self.tasks,
                self.submissions,
                self.requests,
                self.documents,
                self.addresses,
                self.versions,
                self.contents,
            )
        )


def _put(answers: dict[Any, Any], key: Any, value: Any) -> None:
    # REMINDER: never emptied here: while one commit prepares, every answer it was
    # given must stay (a bound hit halfway would fetch the same answers forever).
    # ``trim`` empties an oversized map between commits.
    answers[key] = value


class Known:
    """The cached committed view of one store (a ``CommittedView``); see the module docstring.

    REMINDER: true only while this process holds the store's lock and every commit
    goes through ``learn``; a commit with an unknown outcome poisons the store, so
    the answers are never used after one.
    """

    def __init__(self, floor: int) -> None:
        self.floor = floor
        """Every committed ID is below it (the stored mint floor)."""
        self._kinds: dict[int, RecordKind | None] = {}
        self._tasks: dict[int, int | None] = {}
        self._submissions: dict[int, Identity | None] = {}
        self._requests: dict[RequestKey, int | None] = {}
        self._request_of: dict[int, RequestKey] = {}
        """The request key each known submission holds (the inverse of ``_requests``)."""
        self._documents: dict[int, DocumentRecord | None] = {}
        self._live: dict[DocAddress, DocumentRecord | None] = {}
        self._versions: dict[int, int | object] = {}
        self._contents: dict[tuple[int, int], tuple[int, JsonObject] | StorageCorrupted] = {}

    def _fresh(self, record_id: object) -> bool:
        return not fits(record_id) or record_id >= self.floor  # type: ignore[operator]

    # -- CommittedView ---------------------------------------------------------

    def id_kind(self, record_id: int) -> RecordKind | None:
        """Return the kind that owns an ID."""
        if self._fresh(record_id):
            return None
        if record_id not in self._kinds:
            raise Unknown(Questions(kinds={record_id}))
        return self._kinds[record_id]

    def task_conversation(self, task_id: int) -> int | None:
        """Return the conversation of a committed task."""
        if self._fresh(task_id):
            return None
        if task_id not in self._tasks:
            raise Unknown(Questions(tasks={task_id}))
        return self._tasks[task_id]

    def submission_identity(self, submission_id: int) -> Identity | None:
        """Return the conversation, type and request ID of a committed submission."""
        if self._fresh(submission_id):
            return None
        if submission_id not in self._submissions:
            raise Unknown(Questions(submissions={submission_id}))
        return self._submissions[submission_id]

    def submission_for_request(self, conversation_id: int, request_id: str) -> int | None:
        """Return the ID of the committed submission with this request ID."""
        if self._fresh(conversation_id):
            return None
        key = (conversation_id, request_id)
        if key not in self._requests:
            raise Unknown(Questions(requests={key}))
        return self._requests[key]

    def document_record(self, document_id: int) -> DocumentRecord | None:
        """Return a committed document incarnation."""
        if self._fresh(document_id):
            return None
        if document_id not in self._documents:
            raise Unknown(Questions(documents={document_id}))
        return self._documents[document_id]

    def live_document(self, address: DocAddress) -> DocumentRecord | None:
        """Return the live incarnation at an address."""
        scope = address.scope.id
        if scope is not None and self._fresh(scope):
            return None
        if address not in self._live:
            raise Unknown(Questions(addresses={address}))
        return self._live[address]

    def document_version(self, document_id: int) -> int:
        """Return the version of a document's newest revision."""
        if document_id not in self._versions:
            raise Unknown(Questions(versions={document_id}))
        version = self._versions[document_id]
        if version is _MISSING_BASE:
            raise StorageCorrupted(f"Document {document_id} is missing a required base")
        assert isinstance(version, int)
        return version

    def document_content(self, document_id: int, at: int) -> tuple[int, JsonObject]:
        """Return a document's version and value at ``at`` (fork copies)."""
        answer = self._contents.get((document_id, at))
        if answer is None:
            raise Unknown(Questions(contents={(document_id, at)}))
        if isinstance(answer, StorageCorrupted):
            raise answer
        return answer[0], answer[1]

    # -- what to ask -------------------------------------------------------------

    def trim(self) -> None:
        """Empty every map that grew past ``LIMIT`` (between commits, never during one)."""
        maps: list[dict[Any, Any]] = [
            self._kinds,
            self._tasks,
            self._submissions,
            self._documents,
            self._live,
            self._versions,
        ]
        for answers in maps:
            if len(answers) > LIMIT:
                answers.clear()
        if len(self._requests) > LIMIT or len(self._request_of) > LIMIT:
            self._requests.clear()
            self._request_of.clear()

    def questions(self, writes: Sequence[Write]) -> Questions:
        """Return what preparing ``writes`` will plausibly ask that is not known yet.

        Call it first for each commit: it also trims the maps (``trim``).
        """
        self.trim()
        ask = Questions()

        def kind(value: object) -> None:
            if not self._fresh(value) and value not in self._kinds:
                ask.kinds.add(value)  # type: ignore[arg-type]

        for write in writes:
            if isinstance(write, PutEntry):
                kind(write.record.id)
                kind(write.record.conversation_id)
            elif isinstance(write, PutTask):
                record = write.record
                kind(record.id)
                kind(record.conversation_id)
                kind(record.owner)
                if not self._fresh(record.id) and record.id not in self._tasks:
                    ask.tasks.add(record.id)
            elif isinstance(write, PutSubmission):
                self._ask_submission(write.record, ask, kind)
            elif isinstance(write, PutConversation):
                conversation = write.record
                kind(conversation.id)
                if conversation.parent is not None:
                    kind(conversation.parent.conversation_id)
                if conversation.owner is not None:
                    kind(conversation.owner.conversation_id)
                    kind(conversation.owner.task_id)
            elif isinstance(write, (CreateDocument, CopyDocument)):
                self._ask_new_document(write, ask, kind)
            elif isinstance(write, ChangeDocument):
                self._ask_document(write.id, ask)
                if write.ops is not None and write.id not in self._versions:
                    ask.versions.add(write.id)
            elif isinstance(write, RetireDocument):
                self._ask_document(write.id, ask)
        return ask

    def _ask_submission(self, record: SubmissionRecord, ask: Questions, kind: Any) -> None:
        kind(record.id)
        kind(record.conversation_id)
        if not self._fresh(record.id) and record.id not in self._submissions:
            ask.submissions.add(record.id)
        if isinstance(record.request_id, str) and not self._fresh(record.conversation_id):
            key = (record.conversation_id, record.request_id)
            if key not in self._requests:
                ask.requests.add(key)

    def _ask_document(self, document_id: object, ask: Questions) -> None:
        if not self._fresh(document_id) and document_id not in self._documents:
            ask.documents.add(document_id)  # type: ignore[arg-type]

    def _ask_new_document(
        self, write: CreateDocument | CopyDocument, ask: Questions, kind: Any
    ) -> None:
        kind(write.id)
        scope = write.scope
        if isinstance(scope, ConversationScope):
            kind(scope.conversation_id)
        elif isinstance(scope, TaskScope):
            kind(scope.task_id)
        if isinstance(write.key, (str, type(None))) and isinstance(write.kind, str):
            address = DocAddress(write.kind, ScopeRef.of(scope), write.key)
            scope_id = address.scope.id
            if (scope_id is None or not self._fresh(scope_id)) and address not in self._live:
                ask.addresses.add(address)
        if isinstance(write, CopyDocument):
            self._ask_document(write.source_id, ask)
            if fits(write.source_id) and fits(write.source_at):
                ask.contents.add((write.source_id, write.source_at))

    # -- answers -------------------------------------------------------------------

    async def fetch(self, conn: asyncpg.Connection, store: int, ask: Questions) -> None:
        """Ask the server every question in ``ask`` (one statement, plus one per content)."""
        kinds = sorted(ask.kinds)
        tasks = sorted(ask.tasks)
        submissions = sorted(ask.submissions)
        requests = sorted(ask.requests)
        documents = sorted(ask.documents)
        addresses = list(ask.addresses)
        versions = sorted(ask.versions)
        sql, params = _fetch_statement(
            store, kinds, tasks, submissions, requests, documents, addresses, versions
        )
        if sql:
            rows = await conn.fetch(sql, *params)
            self._adopt(rows, kinds, tasks, submissions, requests, documents, addresses, versions)
        for document_id, at in ask.contents:
            key = (document_id, at)
            try:
                version, value, _ = await content(conn, store, document_id, at)
                self._contents[key] = (version, value)
            except StorageCorrupted as error:
                self._contents[key] = error

    def _adopt(
        self,
        rows: list[asyncpg.Record],
        kinds: list[int],
        tasks: list[int],
        submissions: list[int],
        requests: list[RequestKey],
        documents: list[int],
        addresses: list[DocAddress],
        versions: list[int],
    ) -> None:
        found: dict[int, dict[Any, Any]] = {q: {} for q in range(7)}
        for question, a, b, text in rows:
            found[question][a] = (b, text)
        for record_id in kinds:
            hit = found[0].get(record_id)
            _put(self._kinds, record_id, None if hit is None else hit[1])
        for task_id in tasks:
            hit = found[1].get(task_id)
            _put(self._tasks, task_id, None if hit is None else hit[0])
        for submission_id in submissions:
            hit = found[2].get(submission_id)
            if hit is None:
                _put(self._submissions, submission_id, None)
            else:
                self._know_submission(SubmissionRecord.from_json(loads(hit[1])))
        for index, key in enumerate(requests):
            hit = found[3].get(index)
            if hit is None:
                self._free(key, None)
            else:
                self._hold(hit[0], key)
        for document_id in documents:
            hit = found[4].get(document_id)
            record = None if hit is None else DocumentRecord.from_json(loads(hit[1]))
            _put(self._documents, document_id, record)
        for index, address in enumerate(addresses):
            hit = found[5].get(index)
            record = None if hit is None else DocumentRecord.from_json(loads(hit[1]))
            _put(self._live, address, record)
        for document_id in versions:
            hit = found[6].get(document_id)
            _put(self._versions, document_id, _MISSING_BASE if hit is None else hit[0])

    def _free(self, key: RequestKey, holder: int | None) -> None:
        """Record that no submission holds ``key``, if ``holder`` (when given) still did."""
        # REMINDER: another submission of the same batch may have taken the key already.
        if holder is None or self._requests.get(key) == holder:
            self._requests[key] = None

    def _hold(self, submission_id: int, key: RequestKey) -> None:
        """Record that ``submission_id`` holds the request ``key`` (and no other)."""
        old = self._request_of.pop(submission_id, None)
        if old is not None and old != key:
            self._free(old, submission_id)
        self._requests[key] = submission_id
        self._request_of[submission_id] = key

    def _know_submission(self, record: SubmissionRecord) -> None:
        identity = (record.conversation_id, record.type, record.request_id)
        _put(self._submissions, record.id, identity)
        if record.request_id is not None:
            self._hold(record.id, (record.conversation_id, record.request_id))
        else:
            old = self._request_of.pop(record.id, None)
            if old is not None:
                self._free(old, record.id)

    def learn(self, batch: PreparedBatch, next_id: int) -> None:
        """Apply a batch whose commit succeeded to every answer it changes."""
        self.floor = next_id
        self._contents.clear()
        for record_id, kind in batch.new_ids.items():
            if kind != "entry":  # entries are many and rarely asked about again
                _put(self._kinds, record_id, kind)
        for task, _ in batch.tasks:
            _put(self._tasks, task.id, task.conversation_id)
        for submission, _ in batch.submissions:
            self._know_submission(submission)
        for document, _ in (*batch.retired, *batch.new_documents):
            _put(self._documents, document.id, document)
            _put(self._live, document.address, document if document.retired_at is None else None)
        for revision in batch.revisions:
            _put(self._versions, revision.document_id, revision.version)
        for document_id, everything in batch.reclaim.items():
            if everything:
                self._versions.pop(document_id, None)


_KIND_TABLES = (
    ("conversation", "conversations"),
    ("entry", "entries"),
    ("task", "tasks"),
    ("submission", "submissions"),
    ("document", "documents"),
)


def _fetch_statement(
    store: int,
    kinds: list[int],
    tasks: list[int],
    submissions: list[int],
    requests: list[RequestKey],
    documents: list[int],
    addresses: list[DocAddress],
    versions: list[int],
) -> tuple[str, list[Any]]:
    """Every committed-view question in one statement (``""`` when there is none).

    Its rows are ``(question, a, b, text)``, where ``a`` is the ID asked about, or
    the question's index in its list. Only the parts with questions are sent. An
    address lookup is one indexed probe: addresses are grouped by whether their
    scope ID and key are ``NULL``, since ``IS NOT DISTINCT FROM`` would make every
    lookup read every live document of the kind (seeding 20,000 session
    documents took minutes).
    """
    params: list[Any] = [store]

    def bind(value: Any, cast: str) -> str:
        params.append(value)
        return f"${len(params)}::{cast}"

    parts: list[str] = []
    if kinds:
        ids = bind(kinds, "bigint[]")
        parts += [
            f"SELECT 0, id, NULL::bigint, '{kind}'::text FROM {SCHEMA}.{table}"
            f" WHERE store = $1 AND id = ANY({ids})"
            for kind, table in _KIND_TABLES
        ]
    if tasks:
        parts.append(
            f"SELECT 1, id, conversation_id, NULL FROM {SCHEMA}.tasks"
            f" WHERE store = $1 AND id = ANY({bind(tasks, 'bigint[]')})"
        )
    if submissions:
        parts.append(
            f"SELECT 2, id, NULL, record FROM {SCHEMA}.submissions"
            f" WHERE store = $1 AND id = ANY({bind(submissions, 'bigint[]')})"
        )
    if requests:
        conversations = bind([c for c, _ in requests], "bigint[]")
        texts = bind([column_text(r) for _, r in requests], "text[]")
        parts.append(
            f"SELECT 3, q.n - 1, s.id, NULL FROM unnest({conversations}, {texts})"
            f" WITH ORDINALITY AS q (c, r, n) CROSS JOIN LATERAL (SELECT id FROM"
            f" {SCHEMA}.submissions WHERE store = $1 AND conversation_id = q.c"
            " AND request_id = q.r LIMIT 1) AS s"
        )
    if documents:
        parts.append(
            f"SELECT 4, id, NULL, record FROM {SCHEMA}.documents"
            f" WHERE store = $1 AND id = ANY({bind(documents, 'bigint[]')})"
        )
    groups: dict[tuple[bool, bool], list[tuple[int, DocAddress]]] = {}
    for index, address in enumerate(addresses):
        shape = (address.scope.id is None, address.key is None)
        groups.setdefault(shape, []).append((index, address))
    for (no_scope, no_key), members in sorted(groups.items()):
        scope = "d.scope_id IS NULL" if no_scope else "d.scope_id = q.si"
        key = "d.key IS NULL" if no_key else "d.key = q.key"
        columns = ", ".join(
            (
                bind([i for i, _ in members], "bigint[]"),
                bind([column_text(a.kind) for _, a in members], "text[]"),
                bind([column_text(a.scope.kind) for _, a in members], "text[]"),
                bind([a.scope.id if fits(a.scope.id) else 0 for _, a in members], "bigint[]"),
                bind([column_text(a.key) for _, a in members], "text[]"),
            )
        )
        parts.append(
            f"SELECT 5, q.i, d.id, d.record FROM unnest({columns}) AS q (i, k, sk, si, key)"
            f" CROSS JOIN LATERAL (SELECT d.id, d.record FROM {SCHEMA}.documents d"
            f" WHERE d.store = $1 AND d.kind = q.k AND d.scope_kind = q.sk AND {scope}"
            f" AND {key} AND d.retired_at IS NULL LIMIT 1) AS d"
        )
    if versions:
        parts.append(
            f"SELECT 6, q.id, v.version, NULL FROM unnest({bind(versions, 'bigint[]')}) AS q (id)"
            f" CROSS JOIN LATERAL (SELECT version FROM {SCHEMA}.document_revisions"
            " WHERE store = $1 AND document_id = q.id ORDER BY seq DESC LIMIT 1) AS v"
        )
    if not parts:
        return "", []
    return " UNION ALL ".join(parts), params


async def content(
    conn: asyncpg.Connection, store: int, document_id: int, at: int
) -> tuple[int, JsonObject, int]:
    """Return version, value and delta count of a document at ``at`` (one query).

    Raises:
        StorageCorrupted: No base at or before ``at`` survives, or a delta does not apply.
    """
    rows = await conn.fetch(_CONTENT, store, document_id, at)
    return content_of(document_id, rows)


_CONTENT = (
    f"SELECT kind, version, content FROM {SCHEMA}.document_revisions"
    " WHERE store = $1 AND document_id = $2 AND seq <= $3 AND seq >= ("
    f"SELECT max(seq) FROM {SCHEMA}.document_revisions"
    " WHERE store = $1 AND document_id = $2 AND kind = 'base' AND seq <= $3) ORDER BY seq"
)
"""A document's newest base at or before a point, and the deltas after it."""


def content_of(document_id: int, rows: Sequence[Any]) -> tuple[int, JsonObject, int]:
    """Build a document's value from its ``(kind, version, content)`` revision rows.

    Raises:
        StorageCorrupted: The rows do not start with a base, or a delta does not apply.
    """
    if not rows or rows[0][0] != "base":
        raise StorageCorrupted(f"Document {document_id} is missing a required base")
    ops: list[Op] = []
    for _, _, text in rows[1:]:
        ops.extend(loads(text))  # type: ignore[arg-type]
    try:
        value = apply_ops(loads(rows[0][2]), ops)
    except InvalidOperation as error:
        raise StorageCorrupted(
            f"Document {document_id} has a delta that does not apply: {error}"
        ) from None
    if not isinstance(value, dict):
        raise StorageCorrupted(f"Document {document_id} content is not an object")
    return int(rows[-1][1]), value, len(rows) - 1
