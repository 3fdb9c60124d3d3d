"""The Session: one store, one mutation line, and everything published from it.

``Session.open(storage, ...)`` loads what is live (live tasks and the
conversations around them; never the transcript), reconciles tasks a crash left
running (R22), and then serves:

- ``commit(fn)``: the mutation line (R1-R8). Callbacks run one at a time, each
  holding the line from its start until storage has settled and the new revisions
  are adopted. A callback that raises persists and publishes nothing. An
  uncertain storage failure poisons the Session (``SessionFailed``), while
  ``StorageRejected`` rolls back and leaves it healthy.
- documents: ``snapshot``, ``snapshot_as_of`` (R19), ``document_state`` and
  ``watch_doc`` (R124);
- tasks through ``self.scheduler`` (R36-R58), which this class re-exports;
- ``close()`` (R27).

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
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar, overload

from pi_durable_tui.kernel.clock import Clock, SystemClock
from pi_durable_tui.kernel.documents import DocDefinition
from pi_durable_tui.kernel.drafts import Draft
from pi_durable_tui.kernel.errors import (
    DocumentAccessError,
    SessionClosed,
    SessionFailed,
)
from pi_durable_tui.kernel.forks import fork_source_for, plan_fork_copies
from pi_durable_tui.kernel.hooks import Report, SessionHooks
from pi_durable_tui.kernel.inspection import TaskGraphState, inspect_session, task_graph
from pi_durable_tui.kernel.observation import DocumentState, DocumentWatch, Observation
from pi_durable_tui.kernel.ownership import LiveIndex
from pi_durable_tui.kernel.publication import CommitInfo, Listener, Publisher
from pi_durable_tui.kernel.registry import TaskRegistry
from pi_durable_tui.kernel.scheduler import Scheduler
from pi_durable_tui.kernel.tx import Tx
from pi_durable_tui.storage.errors import StorageRejected
from pi_durable_tui.storage.json_ops import Json, JsonObject, copy_json
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.records import (
    LIVE_TASK_STATUSES,
    DocAddress,
    DocumentRecord,
    TaskRecord,
)
from pi_durable_tui.storage.writes import CopyDocument, RetireDocument, Write

T = TypeVar("T")

_CACHE_LIMIT = 4096


@dataclass(slots=True)
class _DocSlot:
    record: DocumentRecord
    version: int
    value: JsonObject
    """Committed value at ``version``; kernel-owned, copied before it leaves."""
    deltas_since_base: int


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
        self._closed: asyncio.Future[CloseReason] = asyncio.get_running_loop().create_future()
        self._close_task: asyncio.Task[None] | None = None
        self._doc_ids: OrderedDict[DocAddress, int | None] = OrderedDict()
        self._slots: OrderedDict[int, _DocSlot] = OrderedDict()
        self._epoch = 0
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
        if self._failed is not None:
            raise self._failed
        if self._closing:
            raise SessionClosed()

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
        self.check_usable()
        await self._line.acquire()
        handed_off = False
        try:
            self.check_usable()
            tx = Tx(self, origin_task)
            try:
                result = fn(tx)
                if inspect.isawaitable(result):
                    result = await result
                tx.check_settled()
                writes = await self._prepare(tx)
            finally:
                tx.close()
            if not writes:
                return result
            store = asyncio.ensure_future(self._store(tx, writes))
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
        writes.extend(w for w in tx.extra_writes if isinstance(w, RetireDocument))
        writes.extend(tx.finish_drafts(self.storage.last_seq + 1))
        writes.extend(await plan_fork_copies(self, tx))
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
                raise self._failed from error  # type: ignore[misc]
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
        self._epoch += 1
        for conversation in (*tx.loaded_conversations, *tx.conversations.values()):
            self.live.add_conversation(conversation)
        previous: dict[int, TaskRecord | None] = {}
        for task in tx.tasks.values():
            previous[task.id] = self.live.task(task.id)
            self.live.put_task(task)
        changes = []
        for change in tx.doc_changes:
            record = change.record
            if record.created_at != seq and change.created:
                record = replace(record, created_at=seq)
            if change.retired and record.retired_at != seq:
                record = replace(record, retired_at=seq)
            if record is not change.record:
                change = replace(change, record=record)
            changes.append(change)
            if change.retired:
                self._slots.pop(record.id, None)
                if self._doc_ids.get(change.address) == record.id:
                    self._doc_ids[change.address] = None
            else:
                self._remember(
                    change.address,
                    _DocSlot(record, change.version, change.value, change.deltas_since_base),
                )
        for write in writes:
            if isinstance(write, CopyDocument):
                self._slots.pop(write.id, None)
        return CommitInfo(
            seq=seq,
            conversations=tuple(tx.conversations.values()),
            entries=tuple(tx.entries),
            tasks=tuple(tx.tasks.values()),
            previous_tasks=previous,
            submissions=tuple(tx.submissions.values()),
            documents=tuple(changes),
        )

    # -- document cache --

    def _remember(self, address: DocAddress, slot: _DocSlot) -> None:
        self._doc_ids[address] = slot.record.id
        self._doc_ids.move_to_end(address)
        self._slots[slot.record.id] = slot
        self._slots.move_to_end(slot.record.id)
        while len(self._slots) > _CACHE_LIMIT:
            self._slots.popitem(last=False)
        while len(self._doc_ids) > _CACHE_LIMIT:
            self._doc_ids.popitem(last=False)

    def forget_address(self, address: DocAddress) -> None:
        """Drop what the cache knows of an address (a copy is about to create it)."""
        self._doc_ids.pop(address, None)

    async def _load_slot(self, address: DocAddress) -> _DocSlot | None:
        if address in self._doc_ids:
            document_id = self._doc_ids[address]
            if document_id is None:
                return None
            slot = self._slots.get(document_id)
            if slot is not None:
                return slot
        epoch = self._epoch
        record = await self.storage.find_document(address)
        read = None if record is None else await self.storage.document(record.id)
        slot = None
        if read is not None:
            slot = _DocSlot(read.record, read.version, read.value, read.deltas_since_base)
        if epoch == self._epoch:  # REMINDER: never cache a read that a commit overtook.
            if slot is None:
                self._doc_ids[address] = None
            else:
                self._remember(address, slot)
        return slot

    async def document_exists(self, address: DocAddress) -> bool:
        """Whether a live incarnation exists at an address."""
        return await self._load_slot(address) is not None

    async def acquire_draft(
        self, tx: Tx, definition: DocDefinition, address: DocAddress, seed: Json
    ) -> Draft:
        """Load (or start) the draft of a document for a transaction (R9, R15)."""
        slot = None if tx.retired_in_this_commit(address) else await self._load_slot(address)
        if slot is None:
            source = await fork_source_for(self, tx, address)
            if source is not None:
                record, at = source
                read = await self.storage.document(record.id, at)
                if read is not None:
                    value = definition.upgrade(read.value, read.version)
                    return Draft(
                        definition,
                        address,
                        self.storage.mint_id(),
                        None,
                        {},
                        definition.version,
                        0,
                        _copy_object(value),
                    )
            value = definition.initial_value(seed)
            return Draft(
                definition, address, self.storage.mint_id(), None, {}, definition.version, 0, value
            )
        definition.check_record(slot.record)
        base = definition.upgrade(slot.value, slot.version)
        return Draft(
            definition,
            address,
            slot.record.id,
            slot.record,
            base,
            slot.version,
            slot.deltas_since_base,
            _copy_object(base),
        )

    # -- document reads --

    async def snapshot(
        self, definition: DocDefinition, scope_id: int | None = None, key: str | None = None
    ) -> JsonObject | None:
        """Return a document's committed value (migrated in memory), or ``None`` (R9, R15).

        Never creates or writes anything.
        """
        self._check_readable()
        slot = await self._load_slot(definition.address(scope_id, key))
        if slot is None:
            return None
        definition.check_record(slot.record)
        return copy_json(definition.upgrade(slot.value, slot.version))  # type: ignore[return-value]

    async def snapshot_as_of(
        self, definition: DocDefinition, conversation_id: int, at: int, key: str | None = None
    ) -> JsonObject | None:
        """Return a rewindable conversation document as of an entry (R19, R20).

        The value is the final state of the commit containing entry ``at``, read
        in the ancestor conversation that owns ``at``.

        Raises:
            DocumentAccessError: For a current-only document, or an entry not visible
                from the conversation.
        """
        self._check_readable()
        if definition.current_only:
            raise DocumentAccessError(
                f"Document {definition.kind} does not retain historical content"
            )
        stored = await self.storage.entry(at, conversation_id)
        if stored is None:
            raise DocumentAccessError(
                f"Entry {at} is not visible from conversation {conversation_id}"
            )
        address = definition.address(stored.entry.conversation_id, key)
        record = await self.storage.find_document(address, stored.commit_seq)
        if record is None:
            return None
        definition.check_record(record)
        read = await self.storage.document(record.id, stored.commit_seq)
        if read is None:
            return None
        return copy_json(definition.upgrade(read.value, read.version))  # type: ignore[return-value]

    async def document_state(
        self, definition: DocDefinition, scope_id: int | None = None, key: str | None = None
    ) -> DocumentState:
        """Return a live view of a document's committed value at an address (R124)."""
        self._check_readable()
        address = definition.address(scope_id, key)
        async with self._line:
            slot = await self._load_slot(address)
            value = None
            if slot is not None:
                definition.check_record(slot.record)
                value = definition.upgrade(slot.value, slot.version)
            return self.observation.state(definition, address, value)

    async def watch_doc(
        self, definition: DocDefinition, scope_id: int | None = None, key: str | None = None
    ) -> DocumentWatch | None:
        """Watch the live incarnation at an address, or return ``None`` when absent (R124)."""
        self._check_readable()
        address = definition.address(scope_id, key)
        async with self._line:
            slot = await self._load_slot(address)
            if slot is None:
                return None
            definition.check_record(slot.record)
            value = definition.upgrade(slot.value, slot.version)
            return self.observation.watch(definition, slot.record, value)

    def _check_readable(self) -> None:
        if self._failed is not None:
            raise self._failed

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

        Close writes nothing. Later calls await the same shutdown; cancelling a
        ``close()`` call does not stop the shutdown.
        """
        if self._close_task is None:
            self._closing = True
            self._close_task = asyncio.ensure_future(self._shutdown())
        await asyncio.shield(self._close_task)

    async def _shutdown(self) -> None:
        self.observation.session_ended("session_closed")
        await self.scheduler.close()
        async with self._line:  # admitted commits settle before storage closes
            pass
        await self.storage.close()
        if not self._closed.done():
            self._closed.set_result(CloseReason("closed"))


def _copy_object(value: JsonObject) -> JsonObject:
    copied = copy_json(value)
    assert isinstance(copied, dict)
    return copied


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
