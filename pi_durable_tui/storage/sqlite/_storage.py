"""``SqliteStorage``: the durable backend on one SQLite file (R129; DESIGN.md sections 2, 4).

It keeps the Storage contract (``protocol``) with exactly the semantics of
``MemoryStorage``, on aiosqlite, and owns what is specific to SQLite:

- **Configuration** asserted at open: WAL, ``synchronous = NORMAL`` (or ``FULL``
  on request: only FULL keeps the newest commits across a power cut,
  reliability.md 9.1), a busy timeout, foreign keys, ``isolation_level=None`` so
  every transaction is explicit, and SQLite's automatic checkpoint off.
- **Checkpoints off the commit path** (``_checkpoints``): beside the commits on
  another thread, and now and then between two commits to start the WAL over;
  ``wal_autocheckpoint=N`` brings SQLite's own back instead.
- **One transaction and one thread hop per commit.** ``BEGIN IMMEDIATE`` (the
  write lock up front, so the busy timeout applies, 9.3), ``prepare_batch``
  against a view made of synchronous queries on the same connection, every
  insert, update and reclamation, and ``COMMIT`` (or ``ROLLBACK``) run as one
  function on aiosqlite's worker thread (``run_on_worker``). A rejected batch
  rolls back and consumes no seq.
- **Commits are shielded.** aiosqlite does not cancel work already queued
  (9.7), so a cancelled caller gets ``CancelledError`` while its transaction
  still commits or rolls back on the worker thread and this object stays
  consistent; the kernel treats that outcome as uncertain (R8).
- **Failures.** ``StorageRejected`` only for what ``prepare_batch`` refuses.
  Anything else raised during a commit is re-raised as it is (sqlite3 errors
  that report a damaged file become ``StorageCorrupted``) and is uncertain. If
  a COMMIT or ROLLBACK itself failed, this object refuses further commits with
  ``StoragePoisoned``: only a reopen tells what the file holds.
- **Reopen** reads the schema, the metadata row, a quick check of that row's
  table and the newest row of each record table, never the history (DESIGN.md
  section 4); see ``_schema``.
- **The single-writer lock** (``StoreLock``) is taken before the file is opened
  and released after it is closed; ``close`` waits for the checkpoints in
  flight and truncates the WAL.
- **Failpoints** ``sqlite.before_commit`` and ``sqlite.after_commit`` let crash
  tests die at every commit boundary (``failpoints``).
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

import aiosqlite

from pi_durable_tui.storage._backend_base import StorageBackend, TaskFilters
from pi_durable_tui.storage._batch import prepare_batch
from pi_durable_tui.storage.errors import (
    StorageClosed,
    StorageCorrupted,
    StoragePoisoned,
)
from pi_durable_tui.storage.failpoints import define as define_failpoint
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.lock import LOCK_SUFFIX, StoreLock
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
from pi_durable_tui.storage.sqlite._checkpoints import Checkpoints
from pi_durable_tui.storage.sqlite._scans import Queries
from pi_durable_tui.storage.sqlite._schema import (
    Metadata,
    Synchronous,
    checkpoint,
    configure,
    create,
    damaged,
    integrity_problems,
    is_damage,
)
from pi_durable_tui.storage.writes import Write

__all__ = ["SqliteStorage", "run_on_worker"]

T = TypeVar("T")
P = ParamSpec("P")

BEFORE_COMMIT = define_failpoint("sqlite.before_commit")
AFTER_COMMIT = define_failpoint("sqlite.after_commit")


async def run_on_worker(
    db: aiosqlite.Connection,
    fn: Callable[Concatenate[sqlite3.Connection, P], T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """Run ``fn(connection, *args)`` on aiosqlite's worker thread, in one hop.

    Args:
        db: An open aiosqlite connection.
        fn: A synchronous function; it gets the underlying ``sqlite3.Connection``.
        *args: More positional arguments for ``fn``.
        **kwargs: Keyword arguments for ``fn``.

    Returns:
        What ``fn`` returned. Like every aiosqlite call, the work is queued: if the
        awaiting coroutine is cancelled, ``fn`` still runs.
    """
    # REMINDER: aiosqlite 0.22 has no public "run this function on your thread" API.
    # ``Connection._execute(fn, *args)`` queues ``fn(*args)`` on the worker and awaits
    # its result, and ``Connection._conn`` is the sqlite3 connection. Both are private;
    # pyproject pins aiosqlite>=0.22,<0.23 and tests/storage/test_sqlite.py
    # (test_the_aiosqlite_internals_this_backend_uses_still_exist) fails loudly if
    # they change. This function is the only place that touches them.
    result: T = await db._execute(fn, db._conn, *args, **kwargs)  # type: ignore[no-untyped-call]
    return result


class SqliteStorage(StorageBackend):
    """A Storage in one SQLite file; see the module docstring. Create it with ``open``."""

    def __init__(
        self,
        path: Path,
        db: aiosqlite.Connection,
        lock: StoreLock,
        tables: Queries,
        metadata: Metadata,
        synchronous: Synchronous,
        checkpoints: Checkpoints | None,
    ) -> None:
        self._path = path
        self._checkpoints = checkpoints
        self._db = db
        self._lock = lock
        self._synchronous: Synchronous = synchronous
        self._seq = metadata.next_seq - 1
        self._next_id = metadata.next_id
        self._closed = False
        self._poisoned: BaseException | None = None
        """Set on the worker thread when a COMMIT or ROLLBACK failed."""
        self._inflight: set[asyncio.Task[int]] = set()
        self._tables = tables
        self._stored = (metadata.next_seq, metadata.next_id)
        """The metadata row as the last COMMIT left it; read and written on the worker only."""

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        synchronous: Synchronous = "NORMAL",
        wal_autocheckpoint: int | None = None,
        busy_timeout: float = 10.0,
        open_timeout: float = 2.0,
    ) -> SqliteStorage:
        """Open (or create) the store at ``path`` and take its single-writer lock.

        Args:
            path: The database file; created with the current schema if missing.
            synchronous: ``"NORMAL"`` (survives process crashes) or ``"FULL"``
                (also survives power loss, at a third of the commit rate).
            wal_autocheckpoint: ``None`` (the default): checkpoints run off the
                commit path (``_checkpoints``). A number: SQLite's own automatic
                checkpoint instead, inside the commit that takes the WAL to that
                many pages (``0``: no checkpoint until ``close``).
            busy_timeout: Seconds a commit waits for another connection's write lock.
            open_timeout: Seconds the open waits for it (it claims the lock once, so a
                store another SQLite client holds is refused at open, not at the
                first commit).

        Returns:
            The open store.

        Raises:
            StoreLocked: Another process, or another open in this one, holds it.
            StoreBusy: Another SQLite client held its write lock for ``open_timeout``.
            StorageCorrupted: The file is empty (0 bytes, no WAL beside it: never a
                store, or a store cut to nothing), not a SQLite database, is damaged, has
                lost its metadata (``Durable SQLite metadata is missing``), or holds
                tables that are not a pidurable store.
            UnsupportedSchema: A newer pidurable wrote the store.
            StorageError: The configuration could not be applied, or a migration failed.
        """
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError(f"synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}")
        if wal_autocheckpoint is not None and (
            not isinstance(wal_autocheckpoint, int) or wal_autocheckpoint < 0
        ):
            raise ValueError(f"wal_autocheckpoint must be >= 0, got {wal_autocheckpoint!r}")
        if not busy_timeout >= 0 or not open_timeout >= 0:
            raise ValueError(
                f"busy_timeout and open_timeout must be >= 0 seconds, got "
                f"{busy_timeout!r} and {open_timeout!r}"
            )
        store = Path(path)
        if not store.with_name(store.name + LOCK_SUFFIX).exists():
            _refuse_empty(store)  # never opened by a pidurable: refused without a lock file
        lock = StoreLock.acquire(store)
        db: aiosqlite.Connection | None = None
        try:
            if store.exists():
                _refuse_empty(store)
            else:
                # REMINDER: synchronous on purpose (a few milliseconds, once per store):
                # a thread cancelled here could still rename after the lock is released.
                create(store)
            connecting = aiosqlite.connect(store, isolation_level=None, cached_statements=256)
            # REMINDER: a process must never hang at exit. aiosqlite's worker thread is
            # not a daemon, so a store a bug leaves open would keep the process alive;
            # as a daemon, such a process ends as a kill would (SQLite survives that).
            # The attribute is aiosqlite 0.22's (pinned in pyproject.toml).
            worker = getattr(connecting, "_thread", None)
            if worker is not None:
                worker.daemon = True
            db = await connecting
            metadata = await run_on_worker(
                db,
                configure,
                store,
                synchronous,
                wal_autocheckpoint,
                round(busy_timeout * 1000),
                round(open_timeout * 1000),
            )
            # REMINDER: the tables are used on the worker thread only.
            tables = await run_on_worker(db, Queries, metadata.newest_entry)
            checkpoints = None
            if wal_autocheckpoint is None:
                checkpoints = Checkpoints(store, synchronous, partial(run_on_worker, db))
            return cls(store, db, lock, tables, metadata, synchronous, checkpoints)
        except BaseException:
            # REMINDER: aiosqlite's worker thread is not a daemon; a connection left
            # open here would keep the process alive at exit.
            if db is not None:
                await db.close()
            lock.release()
            raise

    # -- properties -------------------------------------------------------------

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    @property
    def synchronous(self) -> Synchronous:
        """The ``synchronous`` level the store was opened with."""
        return self._synchronous

    # -- writes ------------------------------------------------------------------

    async def commit(self, writes: Sequence[Write]) -> int:
        """Store a batch atomically in one SQL transaction and return its seq.

        Raises:
            StorageRejected: The batch breaks a rule; it was rolled back.
            StoragePoisoned: An earlier COMMIT or ROLLBACK failed; reopen the store.
            asyncio.CancelledError: The caller was cancelled; the transaction still
                commits or rolls back on its own, so the outcome is unknown.
            Exception: Any other failure; the outcome is unknown.
        """
        self._check_open()
        if self._poisoned is not None:
            raise StoragePoisoned(
                f"SQLite store {self._path} failed during an earlier commit "
                f"({self._poisoned!r}); reopen it"
            )
        work = asyncio.ensure_future(self._settle(list(writes), self._next_id))
        self._inflight.add(work)
        work.add_done_callback(self._inflight.discard)
        # REMINDER: shield, never a bare await. Cancelling the caller must not cancel
        # ``_settle``: its transaction is queued on the worker thread and will finish
        # anyway (reliability.md 9.7), and only ``_settle`` adopts its seq and IDs.
        return await asyncio.shield(work)

    async def _settle(self, writes: list[Write], floor: int) -> int:
        seq, next_id, frames = await self._call(self._commit_on_worker, writes, floor)
        self._seq = max(self._seq, seq)
        self._next_id = max(self._next_id, next_id)
        if self._checkpoints is not None:
            self._checkpoints.after_commit(frames)
        return seq

    def _commit_on_worker(self, writes: list[Write], floor: int) -> tuple[int, int, int]:
        """The whole commit, on the worker thread: BEGIN IMMEDIATE to COMMIT or ROLLBACK."""
        tables = self._tables
        conn = tables.conn
        conn.execute("BEGIN IMMEDIATE")
        committing = False
        try:
            # REMINDER: this process holds the store's exclusive lock and every write goes
            # through this function, so ``_stored`` is what the last COMMIT left on disk
            # (in the metadata row, or the newest entry row: ``_schema``); a failed
            # COMMIT poisons this object before it could be used again.
            seq, stored_next_id = self._stored
            tables.committed_floor = stored_next_id
            batch = prepare_batch(writes, tables, seq)
            next_id = max(stored_next_id, floor, batch.max_id + 1)
            frames = tables.write(batch, next_id)
            BEFORE_COMMIT.hit()
            committing = True
            conn.execute("COMMIT")
        except BaseException as error:
            self._roll_back(conn, error, committing)
            raise
        self._stored = (seq + 1, next_id)
        tables.committed(batch)
        try:
            AFTER_COMMIT.hit()
        except BaseException as error:
            self._poisoned = error  # committed, yet reported as failed: state unknown here
            raise
        return seq, next_id, frames

    def _roll_back(self, conn: sqlite3.Connection, error: BaseException, committing: bool) -> None:
        """Undo a failed transaction; poison this object if its outcome is unknown."""
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        except sqlite3.Error:
            self._poisoned = error
        if committing:
            # A COMMIT that raised may still be durable (for example an fsync error
            # after the commit frame was written); only a reopen can tell.
            self._poisoned = error

    # -- reads -------------------------------------------------------------------

    async def _call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``fn`` on the worker thread in one hop; report a damaged file as such."""
        try:
            return await run_on_worker(self._db, _without_connection, partial(fn, *args, **kwargs))
        except sqlite3.DatabaseError as error:
            if is_damage(error):
                raise damaged(self._path, error) from error
            raise

    async def _read(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        self._check_open()
        return await self._call(fn, *args, **kwargs)

    async def conversation(self, conversation_id: int) -> ConversationRecord | None:
        """Return a conversation by ID."""
        return await self._read(self._tables.conversation, conversation_id)

    async def entry(self, entry_id: int, conversation_id: int | None = None) -> StoredEntry | None:
        """Return an entry by ID, or only if it is visible from ``conversation_id``."""
        return await self._read(self._tables.entry, entry_id, conversation_id)

    async def task(self, task_id: int) -> TaskRecord | None:
        """Return a task by ID."""
        return await self._read(self._tables.task, task_id)

    async def submission(self, submission_id: int) -> SubmissionRecord | None:
        """Return a submission by ID."""
        return await self._read(self._tables.submission, submission_id)

    async def submission_by_request(
        self, conversation_id: int, request_id: str
    ) -> SubmissionRecord | None:
        """Return the submission with this request ID in this conversation."""
        return await self._read(self._tables.submission_by_request, conversation_id, request_id)

    async def scan_conversations(
        self,
        *,
        owner_conversation_id: int | None = None,
        owner_task_id: int | None = None,
        order: ScanOrder | None = None,
        limit: int = DEFAULT_PAGE,
        cursor: JsonObject | None = None,
    ) -> Page[ConversationRecord]:
        """Scan conversations by ID, optionally by owner (both filters must match)."""
        return await self._read(
            self._tables.scan_conversations,
            owner_conversation_id,
            owner_task_id,
            order,
            limit,
            cursor,
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
        return await self._read(
            self._tables.scan_entries,
            conversation_id,
            min_entry_id,
            max_entry_id,
            order,
            limit,
            cursor,
        )

    async def _scan_tasks(
        self, filters: TaskFilters, order: ScanOrder | None, limit: int, cursor: JsonObject | None
    ) -> Page[TaskRecord]:
        return await self._read(self._tables.scan_tasks, filters, order, limit, cursor)

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
        return await self._read(
            self._tables.scan_submissions, conversation_id, status, order, limit, cursor
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
        return await self._read(self._tables.scan_documents, scope, at, kind, limit, cursor)

    async def find_latest_head_marker(
        self, conversation_id: int, at_or_before: int | None = None
    ) -> StoredEntry | None:
        """Return the newest visible entry carrying ``head`` with ID at most ``at_or_before``."""
        return await self._read(self._tables.find_latest_head_marker, conversation_id, at_or_before)

    async def find_document(
        self, address: DocAddress, at: int | None = None
    ) -> DocumentRecord | None:
        """Return the incarnation at ``address`` alive at ``at`` (``None``: the live one)."""
        return await self._read(self._tables.find_document, address, at)

    async def document(self, document_id: int, at: int | None = None) -> DocumentRead | None:
        """Return a document's content at ``at`` (``None``: now), or ``None`` if not alive then.

        Raises:
            StorageCorrupted: The revisions needed were reclaimed or are damaged.
        """
        return await self._read(self._tables.document, document_id, at)

    async def check_integrity(self) -> list[str]:
        """Run the full ``integrity_check`` and ``foreign_key_check`` (linear in the file).

        Returns:
            The problems found; empty when the store is sound.
        """
        self._check_open()
        return await self._call(integrity_problems, self._tables.conn)

    # -- closing -------------------------------------------------------------------

    async def close(self) -> None:
        """Wait for a commit in flight, truncate the WAL, close, and release the lock.

        Idempotent; every later call except ``close`` raises ``StorageClosed``.
        """
        if self._closed:
            return
        self._closed = True
        try:
            if self._inflight:
                await asyncio.gather(*self._inflight, return_exceptions=True)
            if self._checkpoints is not None:
                await self._checkpoints.close()
            # A failed checkpoint loses nothing: the WAL stays valid and the next open
            # replays it.
            with contextlib.suppress(sqlite3.Error):
                await run_on_worker(self._db, checkpoint)
        finally:
            try:
                await self._db.close()
            finally:
                self._lock.release()

    def _check_open(self) -> None:
        if self._closed:
            raise StorageClosed(f"SQLite store {self._path} is closed")


def _without_connection(conn: sqlite3.Connection, call: Callable[[], T]) -> T:
    return call()


def _refuse_empty(store: Path) -> None:
    """Refuse a store file that exists and holds nothing: it is never initialised over.

    Stores are created whole (``create``), so an empty file at a store's path
    never was one. A store made before that whose file is still empty but whose
    WAL holds its commits (killed before its first checkpoint) is a store:
    SQLite reads it from the WAL.

    Raises:
        StorageCorrupted: The file has 0 bytes and no WAL beside it holds anything.
    """
    try:
        if store.stat().st_size > 0:
            return
    except FileNotFoundError:
        return  # a new store
    wal = store.with_name(store.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        return
    raise StorageCorrupted(
        f"SQLite store {store} is empty (0 bytes): it holds no session, and an empty "
        "file is not made into one; move it aside and start a new session, "
        "or restore it from a backup"
    )
