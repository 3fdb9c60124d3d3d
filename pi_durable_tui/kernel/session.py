"""The Session: one store, one mutation line, and everything published from it.

``Session.open(storage, ...)`` loads what is live (live tasks and the
conversations around them; never the transcript), reconciles tasks a crash left
running (R22), and then serves:

- ``commit(fn)``: the mutation line (R1-R8). Callbacks run one at a time, each
  holding the line from its start until storage has settled and the new revisions
  are adopted and published. A callback that raises persists and publishes
  nothing. An uncertain storage failure poisons the Session (``SessionFailed``,
  with the storage error as cause, for that commit, every later one, the commits
  queued behind it and pending waits; ``closed`` resolves ``failed``), while
  ``StorageRejected`` rolls back and leaves it healthy.
- documents: ``snapshot``, ``snapshot_as_of`` (R19), ``document_state`` and
  ``watch_doc`` (R124), read through ``self.documents`` (``doc_store``);
- tasks through ``self.scheduler`` (R36-R58), which this class re-exports;
- ``close()`` (R27): it seals admission at once (a commit that has already
  called ``commit()`` is admitted and settles; a later call raises
  ``SessionClosed``), ends every state and watch at that moment, stops the
  scheduler, waits for the admitted commits, then closes storage. Every
  ``close()`` call awaits the same shutdown. Document reads work until storage
  is closed and raise ``SessionClosed`` afterwards.

A commit callback must not wait for another commit, a ``document_state`` or a
``watch_doc`` of the same Session: they queue on the line it holds.

Cancellation: once a callback has returned and its batch goes to storage, the
commit is finished by the line itself, shielded from the caller. A cancelled
caller gets ``CancelledError`` while the commit still lands and publishes, so
cancelling an invocation never leaves an unknown outcome behind (DESIGN.md
section 2; aiosqlite would commit anyway).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, overload

from pi_durable_tui.kernel.clock import Clock, SystemClock
from pi_durable_tui.kernel.doc_store import DocumentStore
from pi_durable_tui.kernel.documents import DocDefinition
from pi_durable_tui.kernel.errors import SessionClosed, SessionFailed
from pi_durable_tui.kernel.forks import copy_address
from pi_durable_tui.kernel.hooks import Report, SessionHooks
from pi_durable_tui.kernel.inspection import TaskGraphState, inspect_session, task_graph
from pi_durable_tui.kernel.observation import DocumentState, DocumentWatch, Observation
from pi_durable_tui.kernel.ownership import LiveIndex
from pi_durable_tui.kernel.publication import CommitInfo, Listener, Publisher
from pi_durable_tui.kernel.registry import TaskRegistry
from pi_durable_tui.kernel.scheduler import Scheduler
from pi_durable_tui.kernel.tx import Tx
from pi_durable_tui.storage.errors import StorageRejected
from pi_durable_tui.storage.json_ops import JsonObject, copy_json
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.records import LIVE_TASK_STATUSES, TaskRecord
from pi_durable_tui.storage.writes import CopyDocument, Write

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CloseReason:
    """Why a Session ended: ``closed`` by ``close()``, or ``failed`` (R8)."""

    reason: Literal["closed", "failed"]
    error: BaseException | None = None


class Session:
    """A durable session over one Storage. Open it with ``await Session.open(...)``."""

    def __init__(
        self,
        storage: Storage,
        *,
        registry: TaskRegistry | None = None,
        clock: Clock | None = None,
        hooks: SessionHooks | None = None,
        on_report: Callable[[Report], None] | None = None,
    ) -> None:
        self.storage = storage
        self.registry = registry if registry is not None else TaskRegistry()
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.hooks = hooks if hooks is not None else SessionHooks()
        self._on_report = on_report
        self.live = LiveIndex()
        self._line = asyncio.Lock()
        self._publisher = Publisher(self._listener_failed)
        self._failed: SessionFailed | None = None
        self._closing = False
        self._storage_closed = False
        self._closed: asyncio.Future[CloseReason] = asyncio.get_running_loop().create_future()
        self._close_task: asyncio.Task[None] | None = None
        self.documents = DocumentStore(storage)
        self.observation = Observation(self)
        self.scheduler = Scheduler(self)

    @classmethod
    async def open(
        cls,
        storage: Storage,
        *,
        registry: TaskRegistry | None = None,
        clock: Clock | None = None,
        hooks: SessionHooks | None = None,
        on_report: Callable[[Report], None] | None = None,
    ) -> Session:
        """Open a Session: load live tasks and reconcile them; dispatch nothing (R22, R23).

        Args:
            storage: An open backend; the Session closes it on ``close()``.
            registry: Task definitions; the scheduler re-reads it when it publishes.
            clock: Time source (``SystemClock`` by default).
            hooks: Extension points for the layer above (creation hook, cleanup).
            on_report: Receives problems that are reported rather than raised.

        Returns:
            The open Session. Call ``resume()`` to start running tasks.
        """
        session = cls(storage, registry=registry, clock=clock, hooks=hooks, on_report=on_report)
        await session._load_live()
        await session.scheduler.reconcile_at_open()
        return session

    async def _load_live(self) -> None:
        cursor = None
        while True:
            page = await self.storage.scan_tasks(
                status=LIVE_TASK_STATUSES, limit=500, cursor=cursor
            )
            for record in page.items:
                self.live.put_task(record)
            if page.cursor is None:
                break
            cursor = page.cursor
        for record in self.live.tasks():
            await self.learn_conversation(record.conversation_id)
            owned_cursor = None
            while True:
                owned = await self.storage.scan_conversations(
                    owner_task_id=record.id, limit=500, cursor=owned_cursor
                )
                for conversation in owned.items:
                    self.live.add_conversation(conversation)
                if owned.cursor is None:
                    break
                owned_cursor = owned.cursor

    async def learn_conversation(self, conversation_id: int) -> None:
        """Make the live index know a committed conversation's owner."""
        if not self.live.knows_conversation(conversation_id):
            record = await self.storage.conversation(conversation_id)
            if record is not None:
                self.live.add_conversation(record)

    # -- state --

    @property
    def closing(self) -> bool:
        """Whether ``close()`` has started (admission is sealed)."""
        return self._closing

    @property
    def failed(self) -> SessionFailed | None:
        """The failure that poisoned the Session, if any."""
        return self._failed

    @property
    def closed(self) -> asyncio.Future[CloseReason]:
        """Resolves when the Session ends: closed, or failed (R8)."""
        return self._closed

    def check_usable(self) -> None:
        """Raise when new operations are refused.

        Raises:
            SessionFailed: After an uncertain storage failure.
            SessionClosed: After ``close()`` started.
        """
        self._check_failed()
        if self._closing:
            raise SessionClosed()

    def _check_failed(self) -> None:
        if self._failed is not None:
            # A fresh error each time: re-raising one instance would grow its traceback.
            raise SessionFailed(self._failed.cause)

    def report(self, report: Report) -> None:
        """Hand a problem to ``on_report`` (never raises)."""
        if self._on_report is not None:
            with contextlib.suppress(Exception):  # REMINDER: a reporter must not break the line.
                self._on_report(report)

    def _listener_failed(self, error: BaseException) -> None:
        self.report(Report("listener_error", f"A commit listener raised: {error!r}", error))

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Receive every commit after it is stored; returns the unsubscribe function."""
        return self._publisher.subscribe(listener)

    async def read_task(self, task_id: int) -> TaskRecord | None:
        """Return a task's committed record (live ones from memory)."""
        record = self.live.task(task_id)
        return record if record is not None else await self.storage.task(task_id)

    # -- the mutation line (R1-R8) --

    @overload
    async def commit(self, fn: Callable[[Tx], Awaitable[T]]) -> T: ...
    @overload
    async def commit(self, fn: Callable[[Tx], T]) -> T: ...

    async def commit(self, fn: Callable[[Tx], Any]) -> Any:
        """Run ``fn(tx)`` on the mutation line and commit what it staged atomically.

        Args:
            fn: A sync or async callback receiving the ``Tx``; its result is returned.

        Returns:
            The callback's result, after the commit is stored and published.

        Raises:
            SessionClosed: After ``close()`` started.
            SessionFailed: The Session is poisoned, or this commit poisoned it.
            StorageRejected: Storage refused the batch; nothing changed.
            Exception: Whatever the callback or the commit's preparation raised;
                nothing was persisted.
        """
        return await self.run_commit(fn)

    @overload
    async def run_commit(
        self, fn: Callable[[Tx], Awaitable[T]], *, origin_task: int | None = None
    ) -> T: ...
    @overload
    async def run_commit(self, fn: Callable[[Tx], T], *, origin_task: int | None = None) -> T: ...

    async def run_commit(self, fn: Callable[[Tx], Any], *, origin_task: int | None = None) -> Any:
        """Run a commit, optionally as a task's runtime commit (entries get ``by_task_id``)."""
        self.check_usable()  # admission: sealed by close() (R27)
        await self._line.acquire()
        handed_off = False
        try:
            # REMINDER: an admitted commit still runs while the Session closes (R27).
            self._check_failed()
            tx = Tx(self, origin_task)
            try:
                result = fn(tx)
                if inspect.isawaitable(result):
                    result = await result
                tx.check_settled()
                prepared = tx.hand_over()
            except BaseException:
                tx.close()
                raise
            try:
                writes = await self._prepare(prepared)
            finally:
                prepared.close()
            if not writes:
                return result
            store = asyncio.ensure_future(self._store(prepared, writes))
            store.add_done_callback(_retrieve)
            handed_off = True
            await asyncio.shield(store)
            return result
        finally:
            if not handed_off:
                self._line.release()

    async def _prepare(self, tx: Tx) -> list[Write]:
        for conversation in list(tx.conversations.values()):
            await self.hooks.conversation_created(tx, conversation)
        await self.scheduler.prepare(tx)
        writes = tx.storage_writes()
        documents = tx.documents
        writes.extend(documents.finish(self.storage.last_seq + 1))
        writes.extend(
            await tx.fork_planner.copies(
                documents.changed_ids(), documents.written_addresses(), self.storage.mint_id
            )
        )
        for record in tx.tasks.values():
            cid = record.conversation_id
            if not self.live.knows_conversation(cid) and cid not in tx.conversations:
                stored = await self.storage.conversation(cid)
                if stored is not None:
                    tx.loaded_conversations.append(stored)
        return writes

    async def _store(self, tx: Tx, writes: list[Write]) -> None:
        try:
            try:
                seq = await self.storage.commit(writes)
            except StorageRejected:
                raise
            except BaseException as error:
                self._poison(error)
                raise SessionFailed(error) from error
            info = self._adopt(tx, seq, writes)
            self._publisher.publish(info)
        finally:
            self._line.release()

    def _poison(self, error: BaseException) -> None:
        if self._failed is None:
            self._failed = SessionFailed(error)
            if not self._closed.done():
                self._closed.set_result(CloseReason("failed", self._failed))
            self.scheduler.session_failed(self._failed)
            self.observation.session_ended("session_closed")

    def _adopt(self, tx: Tx, seq: int, writes: list[Write]) -> CommitInfo:
        for conversation in (*tx.loaded_conversations, *tx.conversations.values()):
            self.live.add_conversation(conversation)
        previous: dict[int, TaskRecord | None] = {}
        for task in tx.tasks.values():
            previous[task.id] = self.live.task(task.id)
            self.live.put_task(task)
        changes = tuple(change.stamped(seq) for change in tx.doc_changes)
        copied = [copy_address(w) for w in writes if isinstance(w, CopyDocument)]
        self.documents.adopt(changes, copied)
        return CommitInfo(
            seq=seq,
            conversations=tuple(tx.conversations.values()),
            entries=tuple(tx.entries),
            tasks=tuple(tx.tasks.values()),
            previous_tasks=previous,
            submissions=tuple(tx.submissions.values()),
            documents=changes,
        )

    # -- document reads --

    async def snapshot(
        self, definition: DocDefinition, scope_id: int | None = None, key: str | None = None
    ) -> JsonObject | None:
        """Return a document's committed value (migrated in memory), or ``None`` (R9, R15).

        Never creates or writes anything.

        Raises:
            DocumentAccessError: When the stored document does not fit the definition.
        """
        self._check_readable()
        value = await self.documents.value(definition, definition.address(scope_id, key))
        return None if value is None else _copy_object(value)

    async def snapshot_as_of(
        self, definition: DocDefinition, conversation_id: int, at: int, key: str | None = None
    ) -> JsonObject | None:
        """Return a rewindable conversation document as of an entry (R19, R20).

        The value is the final state of the commit containing entry ``at``, read
        in the ancestor conversation that owns ``at``.

        Raises:
            DocumentAccessError: For a current-only document, or an entry not visible from
                the conversation.
        """
        self._check_readable()
        return await self.documents.value_as_of(definition, conversation_id, at, key)

    async def document_state(
        self, definition: DocDefinition, scope_id: int | None = None, key: str | None = None
    ) -> DocumentState:
        """Return a live view of a document's committed value at an address (R124).

        Raises:
            DocumentAccessError: When the stored document does not fit the definition.
        """
        self._check_readable()
        address = definition.address(scope_id, key)
        async with self._line:  # read and register between two publications
            value = await self.documents.value(definition, address)
            return self.observation.state(definition, address, value)

    async def watch_doc(
        self, definition: DocDefinition, scope_id: int | None = None, key: str | None = None
    ) -> DocumentWatch | None:
        """Watch the live incarnation at an address, or return ``None`` when absent (R124).

        Raises:
            DocumentAccessError: When the stored document does not fit the definition.
        """
        self._check_readable()
        address = definition.address(scope_id, key)
        async with self._line:  # read and register between two publications
            slot = await self.documents.current(definition, address)
            if slot is None:
                return None
            value = definition.upgrade(slot.value, slot.version)
            return self.observation.watch(slot.record, value)

    def _check_readable(self) -> None:
        self._check_failed()
        if self._storage_closed:
            raise SessionClosed()

    # -- tasks (delegated) --

    def resume(self) -> None:
        """Start scheduling (idempotent; R23)."""
        self.check_usable()
        self.scheduler.resume()

    async def abort_task(self, task_id: int) -> Literal["terminal", "marked"]:
        """Mark a task for abort and join its run invocation (R46); see ``Scheduler``."""
        return await self.scheduler.abort_task(task_id)

    async def abort_conversation(self, conversation_id: int, *, background: bool = False) -> None:
        """Abort a conversation's work and wait until it is idle (R57); see ``Scheduler``."""
        await self.scheduler.abort_conversation(conversation_id, background=background)

    async def wait_for_task(self, task_id: int) -> TaskRecord:
        """Start scheduling and return the task's terminal record once it has one (R23, R56)."""
        self.resume()
        return await self.scheduler.wait_for_task(task_id)

    async def wait_for_idle(self, conversation_id: int | None = None) -> None:
        """Start scheduling and wait for idle (R23, R58)."""
        self.resume()
        await self.scheduler.wait_for_idle(conversation_id)

    async def inspect(self) -> JsonObject:
        """Return ``{scheduling, tasks, submissions}`` without writing anything (R28)."""
        return await inspect_session(self)

    def task_graph(self) -> JsonObject:
        """Return every live task as a graph node (R126); does not enable scheduling."""
        return task_graph(self)

    def watch_task_graph(self) -> TaskGraphState:
        """Return the task graph kept current by publications (R126)."""
        return TaskGraphState(self)

    # -- close (R27) --

    async def close(self) -> None:
        """Seal admission, stop invocations, let admitted commits settle, close storage.

        Close writes nothing. States and watches end at the call (they keep their
        last value). Later calls await the same shutdown; cancelling a ``close()``
        call does not stop the shutdown.
        """
        if self._close_task is None:
            self._closing = True
            # REMINDER: at the seal, not when the shutdown task first runs: a commit
            # landing in between must not reach observers (R27).
            self.observation.session_ended("session_closed")
            self._close_task = asyncio.ensure_future(self._shutdown())
        await asyncio.shield(self._close_task)

    async def _shutdown(self) -> None:
        try:
            await self.scheduler.close()
            async with self._line:  # admitted commits settle before storage closes
                self._storage_closed = True
            await self.storage.close()
        finally:
            if not self._closed.done():
                self._closed.set_result(CloseReason("closed"))


def _copy_object(value: JsonObject) -> JsonObject:
    copied = copy_json(value)
    assert isinstance(copied, dict)
    return copied


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
