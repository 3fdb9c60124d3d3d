"""``JsonlStorage``: the Storage contract on append-only JSON-lines files (R130-R132).

A store is a directory: ``main.jsonl`` (table records and one commit marker per
commit), one ``doc-<id>.jsonl`` sidecar per document incarnation (its bases and
deltas) and, for a store of any size, ``index.checkpoint``. ``_files``
owns the line formats, ``_plan`` and ``_publish`` the writing of a
commit, ``_recovery`` (with ``_replay`` and ``_sidecars``)
opening and repair, ``_checkpoint`` the checkpoint file, ``_index``
(with its tables) the in-memory index, ``_reader`` and ``_queries``
the reads; this module owns the public class.

The semantics are exactly ``MemoryStorage``'s (R128), with one addition: a delta
that does not fit its document (a missing key, an index out of range) is
``StorageRejected`` at commit, where ``MemoryStorage`` stores it and fails the
later read. This backend keeps current values up to date at commit, and a store
holding such a delta could not be reopened (``Invalid document content``).

Publication (R130) and reclamation (R132) are ``_publish``'s: a commit is
checked and serialized before any I/O, written sidecars first and marker last,
and published in memory only after the marker is written. Any failed or short
write or flush, or a failpoint that raises, poisons the backend: every later
call raises ``StoragePoisoned`` until the store is reopened, and reopening shows
the commit only if its marker landed.

Durability: with ``fsync=True`` a commit is on disk when it returns. With
``fsync=False`` it survives the death of the process (the kernel's page cache
keeps every write, in order), not a power loss: the disk may then lose unflushed
bytes of any file. A full replay then fails with ``Missing confirmed sidecar
record`` when a sidecar lost confirmed records; a store opened from its
checkpoint finds such a loss when it reads or appends to that sidecar.

What open costs (DESIGN.md section 4: proportional to what is live, not to
history). Memory holds no record text: per record a few integer columns (24
bytes per entry, about 45 per task and 150 per document incarnation), the
current value of each live document as JSON text, and nothing else; records are
read back from ``main.jsonl`` by byte offset (an entry read costs about 8 us
instead of 4). Open loads that index from the checkpoint, one copy and one
CRC-32 of its bytes with no per-record work, replays ``main.jsonl`` after the
checkpoint's offset and reads only the sidecars that replay touched. Measured
with ``python -m pi_durable_tui.bench storage`` on the benchmark's stores (a
fifth as many tasks and live documents as entries), p50 on a busy 2-core VM:
1k entries 1-2 ms, 10k 2-2.6 ms, 100k 8-17 ms (the full replay it replaces:
14-38 ms, 140-220 ms, 1.7-2 s), memory held at 10k 1.3 MiB (7.4 before). What
stays proportional is the checkpoint's size, 7.3 MB at 100k, copied and
checksummed at open: a third of it locates the entries (history), the rest
describes that store's 20,000 live documents and 13,000 live tasks. Open runs
in a worker thread, so the loop stays responsive meanwhile.

When checkpoints are written (``jsonl_checkpoint.CheckpointPolicy``, exported
here): at ``close`` when the log grew by at least ``at_close`` bytes since the
last one (default 64 KiB: below that a reopen replays the difference in a couple
of milliseconds, and a store that small is checked in full at every open), and
after a commit once the log grew by ``every`` bytes (default 4 MiB), so a crash
costs a reopen at most that much replay ("the log" counts the bytes appended to
sidecars too). Writing one at 100k entries takes 15-30 ms (the snapshot on the
loop; the file in a thread with ``fsync``, inline without). A poisoned or
damaged store writes none. ``checkpoints=None`` neither reads nor writes one:
every open replays and checks everything.

Why no ``task-<id>.jsonl`` sidecars: task replacements go to ``main.jsonl``
like every other table write, so a commit moving several tasks costs one append
(and one flush), and a task record is confirmed by the marker after it in the
same file: cutting the unconfirmed tail of ``main.jsonl`` is enough to make sure
no unconfirmed record resurrects a terminal task.

Why synchronous I/O: with ``fsync=False`` a commit is a few ``os.write`` calls
of a few hundred bytes, cheaper than a thread hop (measured: a one-entry commit
p50 16 us, one with a sidecar delta 24 us), so it runs on the event loop. With
``fsync=True`` the writes, flushes and reclamation of a commit run in one hop to
the default executor, shielded, so the loop keeps running while the disk
flushes. A commit cancelled during the hop poisons the backend, since its
outcome is unknown (DESIGN.md section 2); a historical document read waits for
the hop, since reclamation may be rewriting the sidecar it reads.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

from pi_durable_tui.storage._backend_base import StorageBackend, TaskFilters
from pi_durable_tui.storage._batch import prepare_batch
from pi_durable_tui.storage._scans import status_filter
from pi_durable_tui.storage.errors import StorageClosed, StoragePoisoned
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.jsonl import _queries as jsonl_queries
from pi_durable_tui.storage.jsonl._checkpoint import DEFAULT_POLICY, CheckpointPolicy, Checkpoints
from pi_durable_tui.storage.jsonl._files import MAIN_FILE, fsync_directory, open_append
from pi_durable_tui.storage.jsonl._plan import plan_commit
from pi_durable_tui.storage.jsonl._plan_types import Written
from pi_durable_tui.storage.jsonl._publish import Publisher
from pi_durable_tui.storage.jsonl._reader import Reader
from pi_durable_tui.storage.jsonl._recovery import Recovery, RecoveryStats, recover
from pi_durable_tui.storage.lock import StoreLock
from pi_durable_tui.storage.protocol import DEFAULT_PAGE, ScanOrder
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
)
from pi_durable_tui.storage.writes import Write

__all__ = ["CheckpointPolicy", "JsonlStorage"]


class JsonlStorage(StorageBackend):
    """A Storage kept in a directory of append-only JSON-lines files.

    Use ``await JsonlStorage.open(directory)``; see the module docstring.
    """

    def __init__(
        self,
        directory: Path,
        recovery: Recovery,
        lock: StoreLock,
        main_fd: int,
        fsync: bool,
        policy: CheckpointPolicy | None,
    ) -> None:
        self._directory = directory
        self._index = recovery.index
        self._lock = lock
        self._publisher = Publisher(directory, main_fd, recovery.main_size, fsync=fsync)
        self._checkpoints = Checkpoints(
            directory, self._index, self._publisher, policy, recovery.checkpoint_offset
        )
        self._publisher.on_damage = self._checkpoints.damaged
        self._reader = Reader(directory, self._checkpoints.damaged)
        self._index.reader = self._reader
        self._repairs = tuple(recovery.repairs)
        self._stats = recovery.stats
        self._next_id = self._index.next_id
        self._closed = False
        self._poisoned: str | None = None
        self._writing: asyncio.Future[Written] | None = None

    @classmethod
    async def open(
        cls,
        directory: str | os.PathLike[str],
        *,
        fsync: bool = False,
        checkpoints: CheckpointPolicy | None = DEFAULT_POLICY,
    ) -> JsonlStorage:
        """Open (or create) the store in ``directory``, recovering it if needed.

        Args:
            directory: The store directory; created when missing.
            fsync: Flush every commit (and checkpoint) to disk before it returns (R130).
            checkpoints: When to write checkpoints; ``None``: never read or write one.

        Returns:
            The open store, holding the directory's single-writer lock.

        Raises:
            StoreLocked: Another open store holds the directory.
            StorageCorrupted: Confirmed data is missing or damaged (R131).
        """
        path = Path(directory)
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(None, cls._open_sync, path, fsync, checkpoints)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            # The open goes on in its thread; close what it opens, or the lock stays held.
            future.add_done_callback(_close_abandoned)
            raise

    @classmethod
    def _open_sync(cls, path: Path, fsync: bool, policy: CheckpointPolicy | None) -> JsonlStorage:
        if not path.is_dir():
            path.mkdir(parents=True, exist_ok=True)
            if fsync:
                fsync_directory(path.parent)
        lock = StoreLock.acquire(path)
        main_fd: int | None = None
        try:
            recovery = recover(path, fsync=fsync, checkpoints=policy is not None)
            main_path = path / MAIN_FILE
            created = not main_path.exists()
            main_fd = open_append(main_path)
            store = cls(path, recovery, lock, main_fd, fsync, policy)
        except BaseException:
            if main_fd is not None:
                os.close(main_fd)
            lock.release()
            raise
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
    def recovery(self) -> RecoveryStats:
        """How much open read: from which checkpoint, how many lines and sidecars."""
        return self._stats

    @property
    def last_seq(self) -> int:
        """The sequence number of the newest commit."""
        return self._index.seq

    def _fresh_id(self) -> int:
        # A commit may have taken IDs the index now knows; mint above both.
        return max(self._next_id, self._index.next_id)

    def _check_open(self) -> None:
        # JSONL refuses to mint on a poisoned store too, as every other call does.
        self._check_usable()

    # -- commit -----------------------------------------------------------------

    async def commit(self, writes: Sequence[Write]) -> int:
        """Store a batch atomically and return its sequence number (R130)."""
        self._check_usable()
        if self._writing is not None:
            raise RuntimeError("JsonlStorage.commit called while a commit is being written")
        batch = prepare_batch(writes, self._index, self._index.seq + 1)
        plan = plan_commit(batch, self._index, self._publisher.checked)
        try:
            if self._publisher.fsync:
                loop = asyncio.get_running_loop()
                self._writing = loop.run_in_executor(None, self._publisher.write, plan)
                written = await asyncio.shield(self._writing)
            else:
                written = self._publisher.write(plan)
        except asyncio.CancelledError:
            # The write goes on in its thread: whether it lands is unknown (R8).
            self._poison(f"Commit {batch.seq} was cancelled while being written")
            raise
        except Exception as error:
            raise self._poison(
                f"Commit {batch.seq} failed while being written ({error!r})"
            ) from error
        finally:
            self._writing = None
        try:
            self._index.apply(batch, plan, written)
        except Exception as error:  # pragma: no cover - a bug; memory would lie about disk
            raise self._poison(f"Publishing commit {batch.seq} failed ({error!r})") from error
        self._checkpoints.after_commit()
        return batch.seq

    def _poison(self, reason: str) -> StoragePoisoned:
        if self._poisoned is None:
            self._poisoned = f"{reason}; reopen the store"
        return StoragePoisoned(self._poisoned)

    # -- reads ------------------------------------------------------------------

    async def conversation(self, conversation_id: int) -> ConversationRecord | None:
        """Return a conversation by ID."""
        self._check_usable()
        table = self._index.conversations
        row = table.row(conversation_id)
        return None if row < 0 else table.record(row)

    async def entry(self, entry_id: int, conversation_id: int | None = None) -> StoredEntry | None:
        """Return an entry by ID, optionally only if visible from a conversation."""
        self._check_usable()
        return jsonl_queries.entry(self._index, entry_id, conversation_id)

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
        return self._index.submission_by_request(conversation_id, request_id)

    async def scan_conversations(
        self,
        *,
        owner_conversation_id: int | None = None,
        owner_task_id: int | None = None,
        order: ScanOrder | None = None,
        limit: int = DEFAULT_PAGE,
        cursor: JsonObject | None = None,
    ) -> Page[ConversationRecord]:
        """Scan conversations by ID, optionally by owner."""
        self._check_usable()
        return jsonl_queries.scan_conversations(
            self._index, owner_conversation_id, owner_task_id, order, limit, cursor
        )

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
        """Scan the visible history of a conversation, newest first by default."""
        self._check_usable()
        return jsonl_queries.scan_entries(
            self._index, conversation_id, min_entry_id, max_entry_id, order, limit, cursor
        )

    async def _scan_tasks(
        self, filters: TaskFilters, order: ScanOrder | None, limit: int, cursor: JsonObject | None
    ) -> Page[TaskRecord]:
        self._check_usable()
        return jsonl_queries.scan_tasks(self._index, filters, order, limit, cursor)

    async def scan_submissions(
        self,
        *,
        conversation_id: int | None = None,
        status: SubmissionStatus | Sequence[SubmissionStatus] | None = None,
        order: ScanOrder | None = None,
        limit: int = DEFAULT_PAGE,
        cursor: JsonObject | None = None,
    ) -> Page[SubmissionRecord]:
        """Scan submissions by ID; every given filter must match."""
        self._check_usable()
        statuses = status_filter(status)
        return jsonl_queries.scan_submissions(
            self._index, conversation_id, statuses, order, limit, cursor
        )

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
        return jsonl_queries.scan_documents(self._index, scope, at, kind, limit, cursor)

    async def find_latest_head_marker(
        self, conversation_id: int, at_or_before: int | None = None
    ) -> StoredEntry | None:
        """Return the newest visible head marker at or before an entry ID."""
        self._check_usable()
        return jsonl_queries.latest_head_marker(self._index, conversation_id, at_or_before)

    async def find_document(
        self, address: DocAddress, at: int | None = None
    ) -> DocumentRecord | None:
        """Return the incarnation at an address alive at ``at``."""
        self._check_usable()
        return jsonl_queries.find_document(self._index, address, at)

    async def document(self, document_id: int, at: int | None = None) -> DocumentRead | None:
        """Return a document's content at ``at`` (``None``: now), or ``None`` if not alive."""
        self._check_usable()
        writing = self._writing
        if writing is not None and at is not None:
            # A historical read parses the sidecar, which the commit being written in
            # a thread may be rewriting (R132): read it once that write is over.
            await asyncio.wait({writing})
            self._check_usable()
        return jsonl_queries.document(self._index, document_id, at)

    # -- lifecycle --------------------------------------------------------------

    async def close(self) -> None:
        """Write a checkpoint if due, close the files and release the lock; idempotent."""
        if self._closed:
            return
        await self._checkpoints.at_close(healthy=self._poisoned is None, close=self._close_files)
        self._close_files()

    def _close_files(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._publisher.close()
            self._reader.close()
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
