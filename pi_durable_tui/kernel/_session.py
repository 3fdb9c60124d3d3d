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
  ``watch_doc`` (R124), read through the kernel's document store;
- tasks (R36-R58): ``resume``, aborts, waits, ``inspect`` and the task graph,
  delegated to the scheduler;
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

A ``Session`` shows only what the layer above may use (``_SURFACE``). What the
kernel's parts need of it (the line itself, the live index, reports) is the
``CommitLine`` (``_line``) it holds privately; the scheduler receives that, never
the Session.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Literal, TypeVar, overload

from pi_durable_tui.kernel._clock import Clock, SystemClock
from pi_durable_tui.kernel._errors import SessionFailed
from pi_durable_tui.kernel._hooks import Report, SessionHooks
from pi_durable_tui.kernel._line import CloseReason, CommitLine
from pi_durable_tui.kernel._publication import Listener
from pi_durable_tui.kernel._staging import StagedCommit
from pi_durable_tui.kernel._tx import Tx
from pi_durable_tui.kernel.docs import DocDefinition, DocumentState, DocumentWatch, Observation
from pi_durable_tui.kernel.tasks import (
    Scheduler,
    TaskGraphState,
    TaskRegistry,
    inspect_tasks,
    task_graph,
)
from pi_durable_tui.storage.json_ops import JsonObject, copy_json
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.records import TaskRecord

T = TypeVar("T")


class Session:
    """A durable session over one Storage. Open it with ``await Session.open(...)``.

    Args:
        storage: An open backend; the Session closes it on ``close()``.
        registry: Task definitions; the scheduler re-reads it when it publishes.
        clock: Time source (``SystemClock`` by default).
        hooks: Extension points for the layer above (creation hook, cleanup).
        on_report: Receives problems that are reported rather than raised.
    """

    _SURFACE: ClassVar[frozenset[str]] = frozenset(
        {
            "open",
            "commit",
            "subscribe",
            "snapshot",
            "snapshot_as_of",
            "document_state",
            "watch_doc",
            "resume",
            "abort_task",
            "abort_conversation",
            "wait_for_task",
            "wait_for_idle",
            "inspect",
            "task_graph",
            "watch_task_graph",
            "close",
            "closed",
            "closing",
            "failed",
            "published_seq",
            "clock",
            "registry",
            "storage",
            "read_task",
        }
    )
    """The public members: what the layer above may use (DESIGN.md 3)."""

    def __init__(
        self,
        storage: Storage,
        *,
        registry: TaskRegistry | None = None,
        clock: Clock | None = None,
        hooks: SessionHooks | None = None,
        on_report: Callable[[Report], None] | None = None,
    ) -> None:
        self._registry = registry if registry is not None else TaskRegistry()
        self._line = CommitLine(
            storage,
            clock if clock is not None else SystemClock(),
            hooks if hooks is not None else SessionHooks(),
            on_report,
        )
        self._observation = Observation(self._observer_failed)
        self._line.subscribe(lambda info: self._observation.publish(info.seq, info.documents))
        self._scheduler = Scheduler(self._line, self._registry)
        self._line.on_failure(self._scheduler.session_failed)
        self._line.on_failure(lambda _: self._observation.session_ended("session_closed"))
        self._close_task: asyncio.Task[None] | None = None

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
        await session._line.load_live()
        await session._scheduler.reconcile_at_open()
        return session

    def _observer_failed(self, error: BaseException, who: str) -> None:
        self._line.report(Report("listener_error", f"{who} raised: {error!r}", error))

    # -- state --

    @property
    def storage(self) -> Storage:
        """The backend, for reads outside a commit (entry scans, lookups).

        Write only through ``commit``: storage written behind the Session's back
        is not seen by its caches and live index.
        """
        return self._line.storage

    @property
    def published_seq(self) -> int:
        """The seq of the newest commit this Session stored, took in and published.

        What ``snapshot``, the live index and the subscribers show is as of this seq.
        Read it, not ``storage.last_seq``, to tell later whether anything was committed
        since: off the line a backend's ``last_seq`` can be one commit ahead of the
        Session's state for a loop iteration (SQLite settles a commit before the line
        takes it in). On the line the two are equal.
        """
        return self._line.published_seq

    @property
    def registry(self) -> TaskRegistry:
        """The task definitions this Session runs."""
        return self._registry

    @property
    def clock(self) -> Clock:
        """The Session's time source."""
        return self._line.clock

    @property
    def closing(self) -> bool:
        """Whether ``close()`` has started (admission is sealed)."""
        return self._line.closing

    @property
    def failed(self) -> SessionFailed | None:
        """The failure that poisoned the Session, if any."""
        return self._line.failed

    @property
    def closed(self) -> asyncio.Future[CloseReason]:
        """Resolves when the Session ends: closed, or failed (R8)."""
        return self._line.closed

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Receive every commit after it is stored; returns the unsubscribe function.

        Listeners run synchronously on the line, in commit order, and must not
        raise: one that raises is removed and reported (R2).
        """
        return self._line.subscribe(listener)

    async def read_task(self, task_id: int) -> TaskRecord | None:
        """Return a task's committed record (live ones from memory)."""
        return await self._line.read_task(task_id)

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

        def callback(staged: StagedCommit) -> Any:
            return fn(Tx(staged))

        return await self._line.run(callback)

    # -- document reads --

    async def snapshot(
        self, definition: DocDefinition, scope_id: int | None = None, key: str | None = None
    ) -> JsonObject | None:
        """Return a document's committed value (migrated in memory), or ``None`` (R9, R15).

        Never creates or writes anything.

        Raises:
            DocumentAccessError: When the stored document does not fit the definition.
        """
        self._line.check_readable()
        value = await self._line.documents.value(definition, definition.address(scope_id, key))
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
        self._line.check_readable()
        return await self._line.documents.value_as_of(definition, conversation_id, at, key)

    async def document_state(
        self, definition: DocDefinition, scope_id: int | None = None, key: str | None = None
    ) -> DocumentState:
        """Return a live view of a document's committed value at an address (R124).

        Raises:
            DocumentAccessError: When the stored document does not fit the definition.
        """
        self._line.check_readable()
        address = definition.address(scope_id, key)
        async with self._line.lock:  # read and register between two publications
            value = await self._line.documents.value(definition, address)
            return self._observation.state(definition, address, value)

    async def watch_doc(
        self, definition: DocDefinition, scope_id: int | None = None, key: str | None = None
    ) -> DocumentWatch | None:
        """Watch the live incarnation at an address, or return ``None`` when absent (R124).

        Raises:
            DocumentAccessError: When the stored document does not fit the definition.
        """
        self._line.check_readable()
        address = definition.address(scope_id, key)
        async with self._line.lock:  # read and register between two publications
            slot = await self._line.documents.current(definition, address)
            if slot is None:
                return None
            value = definition.upgrade(slot.value, slot.version)
            return self._observation.watch(slot.record, value)

    # -- tasks (delegated) --

    def resume(self) -> None:
        """Start scheduling tasks; idempotent (R23). ``open`` dispatches nothing by itself.

        Raises:
            SessionClosed: After ``close()`` started.
            SessionFailed: After the Session failed.
        """
        self._scheduler.resume()

    async def abort_task(self, task_id: int) -> Literal["terminal", "marked"]:
        """Mark a task for abort, signal and join its run invocation (R46).

        The mark is durable before the invocation is signalled; the abort handler
        runs later, once the task's ordinary owned work has drained (R47). A task no
        definition can take is settled ``orphaned`` at once (R49). This does not
        wait for the outcome: ``wait_for_task`` does.

        Returns:
            ``"terminal"`` when the task had already ended, else ``"marked"``.

        Raises:
            TaskNotFound: For an unknown task.
            SessionClosed: After ``close()`` started.
        """
        return await self._scheduler.abort_task(task_id)

    async def abort_conversation(self, conversation_id: int, *, background: bool = False) -> None:
        """Abort a conversation's work, then wait until it is idle (R57).

        One commit marks every live task ordinary traversal reaches from the
        conversation and lets the hooks withdraw queued inputs of the
        conversations reached. With ``background``, the traversal crosses
        background tasks and the wait also covers every task it marked. Starts
        scheduling.

        Raises:
            SessionClosed: After ``close()`` started, or when it closes first.
        """
        await self._scheduler.abort_conversation(conversation_id, background=background)

    async def wait_for_task(self, task_id: int) -> TaskRecord:
        """Start scheduling and return the task's terminal record once it has one (R23, R56).

        Cancelling the wait cancels only the wait, never the task.

        Raises:
            TaskNotFound: For an unknown task.
            SessionClosed: When the Session closes first.
            SessionFailed: When the Session fails first.
        """
        self.resume()
        return await self._scheduler.waits.wait_for_task(task_id)

    async def wait_for_idle(self, conversation_id: int | None = None) -> None:
        """Start scheduling and wait until no ordinary work is live (R23, R58).

        Args:
            conversation_id: Wait for this conversation; ``None`` waits for every
                ownerless conversation (work below a background task does not count).

        Raises:
            SessionClosed: When the Session closes first.
            SessionFailed: When the Session fails first.
        """
        self.resume()
        await self._scheduler.waits.wait_for_idle(conversation_id)

    async def inspect(self) -> JsonObject:
        """Return ``{scheduling, tasks, submissions}`` at one point of the line (R28).

        ``scheduling`` is ``paused``, ``running`` or ``closing``; each live task
        comes with its ``activity`` (``running``, ``completing``, ``waiting {on}``,
        ``ready {migrates}`` or ``blocked {reason}``); queued and placed
        submissions follow in ID order. Writes nothing and starts nothing.
        """
        return await inspect_tasks(self._line, self._scheduler)

    def task_graph(self) -> JsonObject:
        """Return ``{"tasks": {"<id>": node}}`` for every live task (R126); starts nothing."""
        return task_graph(self._line.live)

    def watch_task_graph(self) -> TaskGraphState:
        """Return the task graph, kept current by every commit until the Session closes (R126)."""
        return TaskGraphState(self._line)

    # -- close (R27) --

    async def close(self) -> None:
        """Seal admission, stop invocations, let admitted commits settle, close storage.

        Close writes nothing. States and watches end at the call (they keep their
        last value). Later calls await the same shutdown; cancelling a ``close()``
        call does not stop the shutdown.
        """
        if self._close_task is None:
            self._line.closing = True
            # REMINDER: at the seal, not when the shutdown task first runs: a commit
            # landing in between must not reach observers (R27).
            self._observation.session_ended("session_closed")
            self._close_task = asyncio.ensure_future(self._shutdown())
        await asyncio.shield(self._close_task)

    async def _shutdown(self) -> None:
        try:
            await self._scheduler.close()
            async with self._line.lock:  # admitted commits settle before storage closes
                self._line.storage_closed = True
            await self._line.storage.close()
        finally:
            if not self._line.closed.done():
                self._line.closed.set_result(CloseReason("closed"))


def _copy_object(value: JsonObject) -> JsonObject:
    copied = copy_json(value)
    assert isinstance(copied, dict)
    return copied
