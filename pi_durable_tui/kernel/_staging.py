"""``StagedCommit``: everything one commit has staged, as the kernel sees it (R1, R5-R7, R70).

A commit callback receives a ``Tx``: the author's handle, which shows only the
documented reads and writes. Behind it, the kernel keeps the staged records in a
``StagedCommit``, and the kernel's own callbacks (the scheduler's reservations,
steps and reconcile commits, a runtime's gate) work on it directly:

- staged records: conversations (and the forks among them), entries, tasks,
  submissions, and the commit's documents (``TxDocuments``);
- ``candidate_task``: a task's newest record in this commit, staged or live in the
  Session; this is not a table read (R70);
- ``wrote_table``: set by the first table write; later table reads through a
  ``Tx`` raise ``ReadAfterWrite`` (R5);
- ``holder``: the one ``Tx`` handle that may use the commit now. Making a new
  handle revokes the previous one, and ``settle`` / ``close`` revoke the last:
  a leaked handle raises ``TransactionClosed`` (R6).

When the callback has settled, ``settle`` rejects a commit whose document
acquisition is still pending (R7) and detaches the drafts from the values the
callback holds (R6). Work the kernel defers to the commit's preparation waits in
``on_prepare``; ``storage_writes`` then lists the table writes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Protocol, TypeVar

from pi_durable_tui.kernel._errors import KernelError
from pi_durable_tui.kernel._recent import RecentTasks
from pi_durable_tui.kernel.docs import DocumentStore, ForkPlanner, TxDocuments
from pi_durable_tui.storage.json_ops import Json
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.records import (
    ConversationRecord,
    EntryRecord,
    SubmissionRecord,
    TaskRecord,
)
from pi_durable_tui.storage.writes import (
    PutConversation,
    PutEntry,
    PutSubmission,
    PutTask,
    Write,
)

_R = TypeVar("_R", EntryRecord, TaskRecord, SubmissionRecord)


class LiveTasks(Protocol):
    """The Session's live tasks, as a commit reads them."""

    def task(self, task_id: int) -> TaskRecord | None:
        """Return a live task's committed record (``None`` when terminal or unknown)."""
        ...

    @property
    def recent(self) -> RecentTasks:
        """What the Session committed about tasks that ended or were born in it."""
        ...


class StagedCommit:
    """The staged state of one commit. Created by the commit line, never directly.

    Args:
        storage: The Session's backend (committed state, and ID minting).
        live: The Session's live tasks.
        documents: The Session's committed documents.
        origin_task: The task whose runtime commit this is (entries get ``by_task_id``).
    """

    def __init__(
        self,
        storage: Storage,
        live: LiveTasks,
        documents: DocumentStore,
        origin_task: int | None = None,
    ) -> None:
        self.storage = storage
        self.live = live
        self.origin_task = origin_task
        self.holder: object | None = None
        """The ``Tx`` handle that may use this commit now, if any."""
        self.wrote_table = False
        self.conversations: dict[int, ConversationRecord] = {}
        self.forks: list[ConversationRecord] = []
        self.fork_planner = ForkPlanner(storage, self.forks)
        self.documents = TxDocuments(documents, self.fork_planner)
        self.entries: list[EntryRecord] = []
        self.tasks: dict[int, TaskRecord] = {}
        self.new_task_ids: list[int] = []
        self.unstored_tasks: set[int] = set()
        """Staged tasks whose new record no reader of the store could observe (``reserve_task``)."""
        self.submissions: dict[int, SubmissionRecord] = {}
        self.loaded_conversations: list[ConversationRecord] = []
        """Committed conversations the live index learns about with this commit."""
        self.on_prepare: list[Callable[[], Awaitable[None]]] = []
        """Kernel work run when the commit prepares, after the creation hooks, so it
        judges everything the commit stages (a phase's returned state, R38, R53)."""

    def candidate_task(self, task_id: int) -> TaskRecord | None:
        """Return a task's newest record in this commit: staged, or live in the Session."""
        if task_id in self.tasks:
            return self.tasks[task_id]
        return self.live.task(task_id)

    async def read_task(self, task_id: int) -> TaskRecord | None:
        """Return a task's committed record (live ones from memory)."""
        record = self.live.task(task_id) or self.live.recent.ended(task_id)
        return record if record is not None else await self.storage.task(task_id)

    def put_task(self, record: TaskRecord) -> None:
        """Stage a task's whole new record."""
        self.wrote_table = True
        self.tasks[record.id] = record
        self.unstored_tasks.discard(record.id)

    def reserve_task(self, record: TaskRecord) -> None:
        """Stage a task's move to ``running`` for the live index only, not for storage (R36).

        The caller guarantees the move changes nothing a reader of the store could
        act on: only the status (``pending``/``waiting`` to ``running``) and
        ``started_at``. The record is adopted into the live index and published
        like any other. The next commit that stores anything stores it whole
        (``CommitLine._carried``), so the first ``started_at`` survives a crash once
        the session has written anything after the reservation.

        # REMINDER: this is true only because the store has one writer (the
        # single-writer lock, ``storage/lock.py``): no other process reads a
        # ``running`` status to decide anything, and reopen turns a surviving
        # ``running`` back into ``pending`` anyway (R22), so a crash before the next
        # write of the task finds the same state either way.
        """
        if record.id in self.tasks and record.id not in self.unstored_tasks:
            self.tasks[record.id] = record  # a durable write staged earlier stays durable
            return
        self.tasks[record.id] = record
        self.unstored_tasks.add(record.id)

    def settle(self) -> None:
        """End the callback's part: revoke its handle and detach its drafts (R6, R7).

        Raises:
            KernelError: When a document acquisition is still pending (R7).
            ValueError: When a draft holds a cycle.
        """
        self.holder = None
        if self.documents.pending:
            raise KernelError(
                "A document acquisition was still pending when the commit callback settled"
            )
        self.documents.detach()

    def close(self) -> None:
        """Revoke every handle and stop loads nobody will use (R6)."""
        self.holder = None
        self.documents.close()

    def filter_values(self, fn: Callable[[Json], Json]) -> None:
        """Pass every JSON value staged through ``fn``, keeping what it returns.

        Entries (messages, data, edits), tasks (input, state, memos), submissions
        (detail, reason) and the drafts of documents: everything the commit will
        store and publish, so the stored and the published state stay the same.
        """
        self.entries = [
            _replaced(e, model=fn(e.model), data=fn(e.data), edits=fn(e.edits))
            for e in self.entries
        ]
        for task_id, t in self.tasks.items():
            self.tasks[task_id] = _replaced(
                t, input=fn(t.input), state=fn(t.state), memos=fn(t.memos)
            )
        for submission_id, s in self.submissions.items():
            self.submissions[submission_id] = _replaced(s, detail=fn(s.detail), reason=fn(s.reason))
        self.documents.filter_values(fn)

    def storage_writes(self) -> list[Write]:
        """Return the table writes of this commit (documents come from ``documents``)."""
        writes: list[Write] = [PutConversation(r) for r in self.conversations.values()]
        writes.extend(PutEntry(r) for r in self.entries)
        writes.extend(PutTask(r) for r in self.tasks.values() if r.id not in self.unstored_tasks)
        writes.extend(PutSubmission(r) for r in self.submissions.values())
        return writes


def _replaced(record: _R, **fields: Json) -> _R:
    """``record`` with ``fields`` set, or ``record`` itself when each is the same object."""
    if all(getattr(record, name) is value for name, value in fields.items()):
        return record
    return replace(record, **fields)  # type: ignore[arg-type]
