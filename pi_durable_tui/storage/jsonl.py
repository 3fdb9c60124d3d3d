"""``JsonlStorage``: the Storage contract on append-only JSON-lines files (R130-R132).

A store is a directory: ``main.jsonl`` (table records and one commit marker per
commit) and one ``doc-<id>.jsonl`` sidecar per document incarnation (its bases
and deltas). ``jsonl_files`` owns the line formats, ``jsonl_recovery`` opening
and repair, ``jsonl_index`` the in-memory state every read is answered from,
``jsonl_publish`` the writing of a commit; this module owns the public class.

The semantics are exactly ``MemoryStorage``'s (R128), with one addition: a delta
that does not fit its document (a missing key, an index out of range) is
``StorageRejected`` at commit, where ``MemoryStorage`` stores it and fails the
later read. This backend keeps current values up to date at commit, and a store
holding such a delta could not be reopened (``Invalid document content``).

Publication (R130) and reclamation (R132) are ``jsonl_publish``'s: a commit is
checked and serialized before any I/O, written sidecars first and marker last,
and published in memory only after the marker is written. Any failed or short
write or flush, or a failpoint that raises, poisons the backend: every later
call raises ``StoragePoisoned`` until the store is reopened, and reopening shows
the commit only if its marker landed.

Durability: with ``fsync=True`` a commit is on disk when it returns. With
``fsync=False`` it survives the death of the process (the kernel's page cache
keeps every write, in order), not a power loss: the disk may then lose unflushed
bytes of any file, and a store whose sidecar lost confirmed records fails to
open with ``Missing confirmed sidecar record``.

Why no ``task-<id>.jsonl`` sidecars: task replacements go to ``main.jsonl``
like every other table write. A commit that moves several tasks then costs one
append and, with ``fsync``, one flush, instead of one more per task; and a task
record is confirmed by the marker that follows it in the same file, so cutting
the unconfirmed tail of ``main.jsonl`` is all recovery needs to do to make sure
no unconfirmed record resurrects a terminal task. The price is that
``main.jsonl`` grows with every replacement (not only with terminal records),
which open reads linearly anyway; task records are small, large payloads live in
documents.

Why synchronous I/O: with ``fsync=False`` a commit is a few ``os.write`` calls
of a few hundred bytes, cheaper than a thread hop (measured: a one-entry commit
p50 16 us, one with a sidecar delta 24 us), so it runs on the event loop. With
``fsync=True`` the writes, flushes and reclamation of a commit run in one hop to
the default executor, shielded, so the loop keeps running while the disk
flushes: the hop costs about 0.1 ms (one-entry commit p50 270 us through the
executor, 180 us inline, on a VM whose fsync takes 0.18 ms), while a flush on
an ordinary disk takes 1-10 ms that would otherwise freeze the UI. A commit
cancelled during the hop poisons the backend, since its outcome is unknown
(DESIGN.md section 2).

What open costs: one pass over ``main.jsonl`` (one regular-expression match and
one ``json.loads`` of the record per line; entries, tasks and submissions kept
as JSON text, entries indexed by conversation), one pass over each live or
rewindable sidecar, and one replay per live document from its newest base:
linear in the log, about 10 us per committed entry (measured: 1k entries 10 ms,
10k 0.1 s, 100k 1.0 s and 78 MB of memory for a 45 MB log). Memory holds the
latest text of every record and the kept revisions of every document. Open runs
in a worker thread, so the loop stays responsive meanwhile.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

from pi_durable_tui.storage.batch import prepare_batch
from pi_durable_tui.storage.errors import (
    StorageClosed,
    StoragePoisoned,
    StorageRejected,
)
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.jsonl_files import MAIN_FILE, fsync_directory, open_append
from pi_durable_tui.storage.jsonl_index import JsonlIndex, page
from pi_durable_tui.storage.jsonl_publish import Publisher, plan_commit
from pi_durable_tui.storage.jsonl_recovery import recover
from pi_durable_tui.storage.lock import StoreLock
from pi_durable_tui.storage.protocol import DEFAULT_PAGE, EntryOrder
from pi_durable_tui.storage.records import (
    MAX_ID,
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


def _statuses(status: str | Sequence[str] | None) -> set[str] | None:
    if status is None:
        return None
    return {status} if isinstance(status, str) else set(status)


class JsonlStorage:
    """A Storage kept in a directory of append-only JSON-lines files.

    Use ``await JsonlStorage.open(directory)``; see the module docstring.
    """

    def __init__(
        self,
        directory: Path,
        index: JsonlIndex,
        lock: StoreLock,
        main_fd: int,
        fsync: bool,
        repairs: list[str],
    ) -> None:
        self._directory = directory
        self._index = index
        self._lock = lock
        self._publisher = Publisher(directory, main_fd, fsync=fsync)
        self._repairs = tuple(repairs)
        self._next_id = index.next_id
        self._closed = False
        self._poisoned: str | None = None
        self._writing = False

    @classmethod
    async def open(cls, directory: str | os.PathLike[str], *, fsync: bool = False) -> JsonlStorage:
        """Open (or create) the store in ``directory``, recovering it if needed.

        Args:
            directory: The store directory; created when missing.
            fsync: Flush every commit to disk before it returns (R130).

        Returns:
            The open store, holding the directory's single-writer lock.

        Raises:
            StoreLocked: Another open store holds the directory.
            StorageCorrupted: Confirmed data is missing or damaged (R131).
        """
        path = Path(directory)
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(None, cls._open_sync, path, fsync)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            # The open goes on in its thread; close what it opens, or the lock stays held.
            future.add_done_callback(_close_abandoned)
            raise

    @classmethod
    def _open_sync(cls, path: Path, fsync: bool) -> JsonlStorage:
        if not path.is_dir():
            path.mkdir(parents=True, exist_ok=True)
            if fsync:
                fsync_directory(path.parent)
        lock = StoreLock.acquire(path)
        try:
            recovery = recover(path, fsync=fsync)
            main_path = path / MAIN_FILE
            created = not main_path.exists()
            main_fd = open_append(main_path)
        except BaseException:
            lock.release()
            raise
        store = cls(path, recovery.index, lock, main_fd, fsync, recovery.repairs)
        if fsync and created:
            try:
                fsync_directory(path)
            except BaseException:
                store._close_files()
                raise
        return store

    @property
    def directory(self) -> Path:
        """The store directory."""
        return self._directory

    @property
    def repairs(self) -> tuple[str, ...]:
        """What recovery changed on disk when this store was opened."""
        return self._repairs

    @property
    def last_seq(self) -> int:
        """The sequence number of the newest commit."""
        return self._index.seq

    def mint_id(self) -> int:
        """Return a fresh ID above every committed or minted one; no I/O."""
        self._check_usable()
        minted = max(self._next_id, self._index.next_id)
        if minted > MAX_ID:
            raise StorageRejected("ID space is exhausted")
        self._next_id = minted + 1
        return minted

    # -- commit -----------------------------------------------------------------

    async def commit(self, writes: Sequence[Write]) -> int:
        """Store a batch atomically and return its sequence number (R130)."""
        self._check_usable()
        if self._writing:
            raise RuntimeError("JsonlStorage.commit called while a commit is being written")
        batch = prepare_batch(writes, self._index, self._index.seq + 1)
        plan = plan_commit(batch, self._index)
        self._writing = True
        try:
            if self._publisher.fsync:
                future = asyncio.get_running_loop().run_in_executor(
                    None, self._publisher.write, plan
                )
                remaining = await asyncio.shield(future)
            else:
                remaining = self._publisher.write(plan)
        except asyncio.CancelledError:
            # The write goes on in its thread: whether it lands is unknown (R8).
            self._poison(f"Commit {batch.seq} was cancelled while being written")
            raise
        except Exception as error:
            raise self._poison(
                f"Commit {batch.seq} failed while being written ({error!r})"
            ) from error
        finally:
            self._writing = False
        index = self._index
        try:
            index.apply(batch, plan.currents)
            for document_id, _, _ in plan.sidecars:
                index.sidecars[document_id].records += 1
            for document_id, records in remaining.items():
                index.sidecars[document_id].records = records
        except Exception as error:  # pragma: no cover - a bug; memory would lie about disk
            raise self._poison(f"Publishing commit {batch.seq} failed ({error!r})") from error
        return batch.seq

    def _poison(self, reason: str) -> StoragePoisoned:
        if self._poisoned is None:
            self._poisoned = f"{reason}; reopen the store"
        return StoragePoisoned(self._poisoned)

    # -- reads ------------------------------------------------------------------

    async def conversation(self, conversation_id: int) -> ConversationRecord | None:
        """Return a conversation by ID."""
        self._check_usable()
        return self._index.conversations.get(conversation_id)

    async def entry(self, entry_id: int, conversation_id: int | None = None) -> StoredEntry | None:
        """Return an entry by ID, optionally only if visible from a conversation."""
        self._check_usable()
        return self._index.entry(entry_id, conversation_id)

    async def task(self, task_id: int) -> TaskRecord | None:
        """Return a task by ID."""
        self._check_usable()
        return self._index.task(task_id)

    async def submission(self, submission_id: int) -> SubmissionRecord | None:
        """Return a submission by ID."""
        self._check_usable()
        return self._index.submission(submission_id)

    async def submission_by_request(
        self, conversation_id: int, request_id: str
    ) -> SubmissionRecord | None:
        """Return the submission with this request ID in this conversation."""
        self._check_usable()
        submission_id = self._index.requests.get((conversation_id, request_id))
        return None if submission_id is None else self._index.submission(submission_id)

    async def scan_conversations(
        self,
        *,
        owner_conversation_id: int | None = None,
        owner_task_id: int | None = None,
        limit: int = DEFAULT_PAGE,
        cursor: JsonObject | None = None,
    ) -> Page[ConversationRecord]:
        """Scan conversations in ID order, optionally by owner."""
        self._check_usable()
        conversations = self._index.conversations

        def keep(conversation_id: int) -> ConversationRecord | None:
            record = conversations[conversation_id]
            owner = record.owner
            if owner_conversation_id is not None and (
                owner is None or owner.conversation_id != owner_conversation_id
            ):
                return None
            if owner_task_id is not None and (owner is None or owner.task_id != owner_task_id):
                return None
            return record

        return page("conversations", self._index.conversation_ids, cursor, limit, keep)

    async def scan_entries(
        self,
        conversation_id: int,
        *,
        min_entry_id: int | None = None,
        max_entry_id: int | None = None,
        order: EntryOrder = "desc",
        limit: int = DEFAULT_PAGE,
        cursor: JsonObject | None = None,
    ) -> Page[StoredEntry]:
        """Scan the visible history of a conversation, newest first by default."""
        self._check_usable()
        return self._index.scan_entries(
            conversation_id, min_entry_id, max_entry_id, order, limit, cursor
        )

    async def scan_tasks(
        self,
        *,
        conversation_id: int | None = None,
        kind: str | None = None,
        status: TaskStatus | Sequence[TaskStatus] | None = None,
        abort_requested: bool | None = None,
        background: bool | None = None,
        limit: int = DEFAULT_PAGE,
        cursor: JsonObject | None = None,
    ) -> Page[TaskRecord]:
        """Scan tasks in ID order; every given filter must match."""
        self._check_usable()
        statuses = _statuses(status)
        index = self._index

        def keep(task_id: int) -> TaskRecord | None:
            row = index.tasks[task_id]
            if (
                (conversation_id is not None and row.conversation_id != conversation_id)
                or (kind is not None and row.kind != kind)
                or (statuses is not None and row.status not in statuses)
                or (abort_requested is not None and row.abort_requested != abort_requested)
                or (background is not None and row.background != background)
            ):
                return None
            return index.task(task_id)

        return page("tasks", index.task_ids, cursor, limit, keep)

    async def scan_submissions(
        self,
        *,
        conversation_id: int | None = None,
        status: SubmissionStatus | Sequence[SubmissionStatus] | None = None,
        limit: int = DEFAULT_PAGE,
        cursor: JsonObject | None = None,
    ) -> Page[SubmissionRecord]:
        """Scan submissions in ID order; every given filter must match."""
        self._check_usable()
        statuses = _statuses(status)
        index = self._index

        def keep(submission_id: int) -> SubmissionRecord | None:
            row = index.submissions[submission_id]
            if conversation_id is not None and row.conversation_id != conversation_id:
                return None
            if statuses is not None and row.status not in statuses:
                return None
            return index.submission(submission_id)

        return page("submissions", index.submission_ids, cursor, limit, keep)

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
        self._check_usable()
        documents = self._index.documents

        def keep(document_id: int) -> DocumentRecord | None:
            record = documents[document_id]
            if kind is not None and record.kind != kind:
                return None
            alive = record.retired_at is None if at is None else record.alive_at(at)
            return record if alive else None

        ids = self._index.scope_documents.get(scope, [])
        return page("documents", ids, cursor, limit, keep)

    async def find_latest_head_marker(
        self, conversation_id: int, at_or_before: int | None = None
    ) -> StoredEntry | None:
        """Return the newest visible head marker at or before an entry ID."""
        self._check_usable()
        index = self._index
        ids = index.visible_window(conversation_id, index.head_ids, None, at_or_before, "desc", 1)
        return index.stored_entry(ids[0]) if ids else None

    async def find_document(
        self, address: DocAddress, at: int | None = None
    ) -> DocumentRecord | None:
        """Return the incarnation at an address alive at ``at``."""
        self._check_usable()
        return self._index.find_document(address, at)

    async def document(self, document_id: int, at: int | None = None) -> DocumentRead | None:
        """Return a document's content at ``at`` (``None``: now), or ``None`` if not alive."""
        self._check_usable()
        return self._index.document(document_id, at)

    # -- lifecycle --------------------------------------------------------------

    async def close(self) -> None:
        """Close the files and release the lock; idempotent."""
        self._close_files()

    def _close_files(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._publisher.close()
        finally:
            self._lock.release()

    def _check_usable(self) -> None:
        if self._closed:
            raise StorageClosed("Storage is closed")
        if self._poisoned is not None:
            raise StoragePoisoned(self._poisoned)


def _close_abandoned(future: asyncio.Future[JsonlStorage]) -> None:
    if not future.cancelled() and future.exception() is None:
        future.result()._close_files()
