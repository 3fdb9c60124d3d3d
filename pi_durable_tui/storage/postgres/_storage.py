"""``PostgresStorage``: a durable store in a PostgreSQL database (R129; DESIGN.md sections 2, 4, 8).

It keeps the Storage contract (``protocol``) with exactly the semantics of
``MemoryStorage``, on asyncpg, and owns what is specific to a server:

- **One connection per open store**, held from ``open`` to ``close``: it carries
  the single-writer lock (``_lock``), so it is never replaced behind the
  caller's back. A lost connection means a lost lock, and another process may
  be writing by now: the store is poisoned and must be reopened.
- **One statement, one transaction and one round trip per commit**
  (``_commit.statement``). ``prepare_batch`` runs on the event loop against the
  cached committed view (``_view.Known``); what it lacks is fetched first, in
  one more round trip. A rejected batch costs no write and consumes no seq.
- **Calls are serialized and shielded.** asyncpg runs one query at a time on a
  connection, so every call waits its turn on an ``asyncio.Lock`` (first come,
  first served: a read made after a commit started sees it) and runs as a task
  of its own, which a cancelled caller does not interrupt: the statement
  finishes and this object stays consistent; the kernel treats a cancelled
  commit as uncertain (R8).
- **Failures.** ``StorageRejected`` only for what ``prepare_batch`` refuses. A
  commit the server refused (an error answer) rolled back, and is re-raised as
  ``StorageError``; one that got no answer (connection lost, cancelled by the
  server's shutdown) may or may not have landed: it is re-raised as
  ``StorageError`` too, and this object refuses every later call with
  ``StoragePoisoned`` (its lock may be gone). Messages never show the URL's password.
- **Reopen** reads the store row and the newest row of each table for this
  store (``_schema.read_metadata``), never its history.
- **Failpoints** ``postgres.before_commit`` (the batch prepared, the statement
  not sent) and ``postgres.after_commit`` (its answer received) let crash tests
  die at every commit boundary.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar

import asyncpg

from pi_durable_tui.storage._backend_base import StorageBackend, TaskFilters
from pi_durable_tui.storage._batch import prepare_batch
from pi_durable_tui.storage.errors import (
    StorageClosed,
    StorageError,
    StoragePoisoned,
)
from pi_durable_tui.storage.failpoints import define as define_failpoint
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.postgres import _lock
from pi_durable_tui.storage.postgres._commit import STATEMENT_CACHE, statement
from pi_durable_tui.storage.postgres._integrity import problems
from pi_durable_tui.storage.postgres._reads import Reads
from pi_durable_tui.storage.postgres._schema import (
    SCHEMA,
    StoreSummary,
    list_stores,
    prepare_schema,
    read_metadata,
    store_id,
)
from pi_durable_tui.storage.postgres._url import redact, scrub
from pi_durable_tui.storage.postgres._view import Known, Unknown
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

__all__ = ["PostgresStorage", "connect"]

T = TypeVar("T")
P = ParamSpec("P")

BEFORE_COMMIT = define_failpoint("postgres.before_commit")
AFTER_COMMIT = define_failpoint("postgres.after_commit")
DRIVER_ERRORS = (
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    asyncpg.exceptions.InternalClientError,
    OSError,
)
"""What asyncpg raises when a query fails (from the server or from the link)."""
CLOSE_TIMEOUT = 10.0
"""Seconds ``close`` waits for calls in flight, then for the server, before it drops the socket."""


async def connect(url: str, *, timeout: float, purpose: str) -> asyncpg.Connection:
    """Open a connection to ``url`` as pidurable does, or say why not (without the password).

    Args:
        url: A ``postgresql://`` URL.
        timeout: Seconds to wait for the server.
        purpose: What the connection is for, in its ``application_name``.

    Raises:
        StorageError: The server could not be reached or refused the connection.
    """
    settings = {
        "application_name": f"pidurable {purpose}"[:63],
        # Every statement of this backend is an index lookup; a generic plan spares
        # replanning the commit statement's dozen parts at every commit.
        "plan_cache_mode": "force_generic_plan",
        **_lock.KEEPALIVES,
    }
    try:
        conn: asyncpg.Connection = await asyncpg.connect(
            url, timeout=timeout, server_settings=settings, statement_cache_size=STATEMENT_CACHE
        )
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as error:
        detail = scrub(str(error) or type(error).__name__, url)
        raise StorageError(
            f"Cannot connect to PostgreSQL at {redact(url)}: {detail}; check the URL, and that "
            "the server is running and accepts this user"
        ) from None
    return conn


class PostgresStorage(StorageBackend):
    """A Storage kept in a PostgreSQL database under a name; see the module docstring.

    Create it with ``open``.
    """

    def __init__(
        self,
        url: str,
        name: str,
        conn: asyncpg.Connection,
        store: int,
        next_seq: int,
        next_id: int,
        newest_entry: int,
    ) -> None:
        self._url = url
        self._where = redact(url)
        self._name = name
        self._conn = conn
        self._store = store
        self._seq = next_seq - 1
        self._next_id = next_id
        self._stored = (next_seq, next_id, newest_entry)
        """Next seq, mint floor and newest entry ID as the last commit left them."""
        self._known = Known(next_id)
        self._reads = Reads(store)
        self._busy = asyncio.Lock()
        self._inflight: set[asyncio.Task[Any]] = set()
        self._closed = False
        self._poisoned: BaseException | None = None

    @classmethod
    async def open(cls, url: str, name: str, *, connect_timeout: float = 10.0) -> PostgresStorage:
        """Open (creating if needed) the store ``name`` in the database at ``url``.

        Args:
            url: ``postgresql://user:password@host:port/database`` (libpq's URL form).
            name: The store's name; many stores share one database.
            connect_timeout: Seconds to wait for the server.

        Returns:
            The open store, holding its single-writer lock.

        Raises:
            ValueError: ``name`` is empty or holds a NUL or a lone surrogate.
            StoreLocked: Another process (on any machine) holds the store.
            UnsupportedSchema: A newer pidurable made the tables.
            StorageError: The server could not be reached, or a migration failed.
        """
        if not isinstance(name, str) or not name or "\x00" in name:
            raise ValueError(f"a store name must be a non-empty string without NUL, got {name!r}")
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"a store name must be encodable as UTF-8, got {name!r}") from None
        conn = await connect(url, timeout=connect_timeout, purpose=_lock.identity())
        try:
            where = redact(url)
            await prepare_schema(conn, where)
            store = await store_id(conn, name)
            await _lock.acquire(conn, store, name, where)
            metadata = await read_metadata(conn, store, name)
        except BaseException as error:
            conn.terminate()
            if isinstance(error, DRIVER_ERRORS):
                raise StorageError(
                    f"Opening store {name!r} in {redact(url)} failed: {scrub(str(error), url)}"
                ) from None
            raise
        return cls(
            url, name, conn, store, metadata.next_seq, metadata.next_id, metadata.newest_entry
        )

    # -- properties -------------------------------------------------------------

    @property
    def name(self) -> str:
        """The store's name in its database."""
        return self._name

    @property
    def database(self) -> str:
        """The database's URL, without its password."""
        return self._where

    def __repr__(self) -> str:
        return f"PostgresStorage({self._name!r} in {self._where})"

    # -- running calls on the connection -------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StorageClosed(f"PostgreSQL store {self._name!r} is closed")

    def _check_usable(self) -> None:
        self._check_open()
        if self._poisoned is not None:
            raise StoragePoisoned(
                f"PostgreSQL store {self._name!r} in {self._where} failed during an earlier "
                f"call ({self._describe(self._poisoned)}); reopen it"
            )

    def _describe(self, error: BaseException) -> str:
        return scrub(f"{type(error).__name__}: {error}", self._url)

    def _spawn(self, work: Awaitable[T]) -> asyncio.Future[T]:
        task = asyncio.ensure_future(work)
        self._inflight.add(task)
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._inflight.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: a caller cancelled meanwhile no longer waits for it

    async def _read(
        self,
        fn: Callable[Concatenate[asyncpg.Connection, P], Awaitable[T]],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        self._check_open()
        # REMINDER: shield, never a bare await: a cancelled caller must not interrupt a
        # query on the shared connection; the task finishes it and frees the lock.
        return await asyncio.shield(self._spawn(self._locked(fn, *args, **kwargs)))

    async def _locked(
        self,
        fn: Callable[Concatenate[asyncpg.Connection, P], Awaitable[T]],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        async with self._busy:
            self._check_usable()
            try:
                return await fn(self._conn, *args, **kwargs)
            except DRIVER_ERRORS as error:
                raise self._failure(error, "reading") from None

    def _failure(self, error: BaseException, doing: str) -> StorageError:
        """Return the error to raise for a driver failure; poison the store if the link broke.

        Only an error answer from the server on a connection that is still open
        leaves the store usable; anything else may have cost the lock.
        """
        answered = isinstance(error, asyncpg.PostgresError) and not isinstance(
            error, asyncpg.PostgresConnectionError
        )
        if self._conn.is_closed() or not answered:
            self._poisoned = error
        return StorageError(
            f"PostgreSQL store {self._name!r} in {self._where}: {doing} failed "
            f"({self._describe(error)})"
        )

    # -- writes -------------------------------------------------------------------

    async def commit(self, writes: Sequence[Write]) -> int:
        """Store a batch atomically in one SQL transaction and return its seq.

        Raises:
            StorageRejected: The batch breaks a rule; nothing was written.
            StoragePoisoned: An earlier call lost the connection; reopen the store.
            asyncio.CancelledError: The caller was cancelled; the statement still
                finishes on its own, so the outcome is unknown.
            StorageError: Any other failure; the outcome is unknown.
        """
        self._check_usable()
        # REMINDER: shield (see ``_read``); only ``_settle`` adopts the seq and the IDs.
        return await asyncio.shield(self._spawn(self._settle(list(writes), self._next_id)))

    async def _settle(self, writes: list[Write], floor: int) -> int:
        async with self._busy:
            self._check_usable()
            next_seq, stored_next_id, newest = self._stored
            known = self._known
            ask = known.questions(writes)
            while True:
                if ask:
                    try:
                        await known.fetch(self._conn, self._store, ask)
                    except DRIVER_ERRORS as error:
                        raise self._failure(error, "checking a commit") from None
                try:
                    batch = prepare_batch(writes, known, next_seq)
                    break
                except Unknown as missing:
                    ask = missing.question
            next_id = max(stored_next_id, floor, batch.max_id + 1)
            sql, params, top = statement(self._store, batch, next_id, newest)
            BEFORE_COMMIT.hit()
            try:
                await self._conn.execute(sql, *params)
            except DRIVER_ERRORS as error:
                # An error answer from a live server: the statement's transaction rolled back.
                # Anything else (``_failure`` tells): the commit may have landed.
                raise self._failure(error, "a commit") from None
            except BaseException as error:
                self._poisoned = error  # no answer: only a reopen can tell what landed
                raise
            self._stored = (next_seq + 1, next_id, top)
            known.learn(batch, next_id)
            self._reads.learn(batch)
            self._seq = max(self._seq, next_seq)
            self._next_id = max(self._next_id, next_id)
            try:
                AFTER_COMMIT.hit()
            except BaseException as error:
                self._poisoned = error  # committed, yet reported as failed
                raise
            return next_seq

    # -- reads ----------------------------------------------------------------------

    async def conversation(self, conversation_id: int) -> ConversationRecord | None:
        """Return a conversation by ID."""
        return await self._read(self._reads.conversation, conversation_id)

    async def entry(self, entry_id: int, conversation_id: int | None = None) -> StoredEntry | None:
        """Return an entry by ID, or only if it is visible from ``conversation_id``."""
        return await self._read(self._reads.entry, entry_id, conversation_id)

    async def task(self, task_id: int) -> TaskRecord | None:
        """Return a task by ID."""
        return await self._read(self._reads.task, task_id)

    async def submission(self, submission_id: int) -> SubmissionRecord | None:
        """Return a submission by ID."""
        return await self._read(self._reads.submission, submission_id)

    async def submission_by_request(
        self, conversation_id: int, request_id: str
    ) -> SubmissionRecord | None:
        """Return the submission with this request ID in this conversation."""
        return await self._read(self._reads.submission_by_request, conversation_id, request_id)

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
            self._reads.scan_conversations,
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
            self._reads.scan_entries,
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
        return await self._read(self._reads.scan_tasks, filters, order, limit, cursor)

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
            self._reads.scan_submissions, conversation_id, status, order, limit, cursor
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
        return await self._read(self._reads.scan_documents, scope, at, kind, limit, cursor)

    async def find_latest_head_marker(
        self, conversation_id: int, at_or_before: int | None = None
    ) -> StoredEntry | None:
        """Return the newest visible entry carrying ``head`` with ID at most ``at_or_before``."""
        return await self._read(self._reads.find_latest_head_marker, conversation_id, at_or_before)

    async def find_document(
        self, address: DocAddress, at: int | None = None
    ) -> DocumentRecord | None:
        """Return the incarnation at ``address`` alive at ``at`` (``None``: the live one)."""
        return await self._read(self._reads.find_document, address, at)

    async def document(self, document_id: int, at: int | None = None) -> DocumentRead | None:
        """Return a document's content at ``at`` (``None``: now), or ``None`` if not alive then.

        Raises:
            StorageCorrupted: The revisions needed are missing or damaged.
        """
        return await self._read(self._reads.document, document_id, at)

    async def check_integrity(self) -> list[str]:
        """Check the store's rows against each other (linear in the store; ``_integrity``).

        Returns:
            The problems found; empty when the store is sound.
        """
        store = self._store

        async def run(conn: asyncpg.Connection) -> list[str]:
            return await problems(conn, store, self._stored[0])

        return await self._read(run)

    # -- beyond the protocol -----------------------------------------------------------

    async def set_label(self, text: str) -> None:
        """Give the store a one-line label (the product's session title), unless it has one.

        ``list_stores`` returns it; it is not part of the store's records.
        """
        line = " ".join(text.split())[:200].replace("\x00", "")
        line = line.encode("utf-8", "replace").decode("utf-8")
        store = self._store

        async def run(conn: asyncpg.Connection) -> None:
            await conn.execute(
                f"UPDATE {SCHEMA}.stores SET label = $2 WHERE id = $1 AND label IS NULL",
                store,
                line,
            )

        await self._read(run)

    @staticmethod
    async def list_stores(
        url: str,
        prefix: str = "",
        *,
        limit: int = 1000,
        sizes: bool = False,
        connect_timeout: float = 10.0,
    ) -> list[StoreSummary]:
        """Return the stores of a database whose names start with ``prefix``, last name first.

        Opens no store and takes no lock (it reads the ``stores`` rows only).

        Args:
            url: The database.
            prefix: What the names start with.
            limit: At most this many.
            sizes: Also add up each store's entry text (linear in those stores).
            connect_timeout: Seconds to wait for the server.

        Raises:
            StorageError: The server could not be reached.
        """
        conn = await connect(url, timeout=connect_timeout, purpose="listing")
        try:
            return await list_stores(conn, prefix, limit=limit, sizes=sizes)
        except DRIVER_ERRORS as error:
            raise StorageError(
                f"Listing the stores in {redact(url)} failed: {scrub(str(error), url)}"
            ) from None
        finally:
            conn.terminate()

    # -- closing -----------------------------------------------------------------------

    async def close(self) -> None:
        """Wait for calls in flight, release the lock and close the connection.

        Idempotent; never waits more than about ``2 * CLOSE_TIMEOUT`` seconds, whatever
        the server does. Every later call except ``close`` raises ``StorageClosed``.
        """
        if self._closed:
            return
        self._closed = True
        conn = self._conn
        try:
            if self._inflight:
                await asyncio.wait(set(self._inflight), timeout=CLOSE_TIMEOUT)
            if not conn.is_closed() and self._poisoned is None and not self._busy.locked():
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(_lock.release(conn, self._store), CLOSE_TIMEOUT)
        finally:
            try:
                await asyncio.wait_for(conn.close(), CLOSE_TIMEOUT)
            except Exception:
                conn.terminate()  # the server did not answer: drop the socket
            except BaseException:
                conn.terminate()
                raise
