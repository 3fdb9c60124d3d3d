"""The mutation line of one Session: admission, preparation, storage, adoption (R1-R8, R25).

``CommitLine`` is the kernel-side object behind a ``Session``. Its ``run(fn)``
is the one queue every write goes through: callbacks run one at a time, each
holding the line from its start until storage has settled and the new revisions
are adopted and published (R1-R3).

1. Admission: sealed by ``close()`` (a commit that called ``run`` before the seal
   is admitted and settles; a later call raises ``SessionClosed``), refused once
   the Session failed (R8, R27).
2. The callback runs on a fresh ``StagedCommit``; when it settles, its handle is
   revoked and its drafts detached (R6, R7). A callback that raises persists and
   publishes nothing.
3. Preparation: the creation hook for every new conversation (R25), the state a
   task's phase returned (``on_prepare``, R38), the task rules
   (``tasks.prepare_commit``: R11, R56), document diffs and fork copies (R13,
   R17, R18), all into one storage batch.
4. Storage, shielded from the caller: a cancelled caller gets ``CancelledError``
   while the commit still lands and publishes, so cancelling never leaves an
   unknown outcome (DESIGN.md section 2; aiosqlite would commit anyway). An
   uncertain storage failure poisons the Session (``SessionFailed``, with the
   storage error as cause, for that commit, every later one and the commits
   queued behind it); ``StorageRejected`` rolls back and leaves it healthy.
5. Adoption and publication: the live index and the document cache take in the
   commit, then every listener receives its ``CommitInfo`` (R2).

It satisfies the tasks part's ``TaskHost`` protocol; the Session hands it to the
scheduler, and never to authors.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, overload

from pi_durable_tui.kernel._clock import Clock
from pi_durable_tui.kernel._errors import SessionClosed, SessionFailed
from pi_durable_tui.kernel._hooks import Report, SessionHooks
from pi_durable_tui.kernel._publication import CommitInfo, Listener, Publisher
from pi_durable_tui.kernel._staging import StagedCommit
from pi_durable_tui.kernel._tx import Tx
from pi_durable_tui.kernel.docs import DocumentStore, copy_address
from pi_durable_tui.kernel.tasks import LiveIndex, prepare_commit
from pi_durable_tui.storage.errors import StorageRejected
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.records import LIVE_TASK_STATUSES, TaskRecord
from pi_durable_tui.storage.writes import CopyDocument, PutTask, Write

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CloseReason:
    """Why a Session ended: ``closed`` by ``close()``, or ``failed`` (R8)."""

    reason: Literal["closed", "failed"]
    error: BaseException | None = None


class CommitLine:
    """The mutation line and the committed state it keeps current. Created by the Session.

    Args:
        storage: An open backend.
        clock: The Session's time source.
        hooks: The layer above's extension points.
        on_report: Receives problems that are reported rather than raised.
    """

    def __init__(
        self,
        storage: Storage,
        clock: Clock,
        hooks: SessionHooks,
        on_report: Callable[[Report], None] | None,
    ) -> None:
        self.storage = storage
        self.clock = clock
        self.hooks = hooks
        self._on_report = on_report
        self.live = LiveIndex()
        self.documents = DocumentStore(storage)
        self.lock = asyncio.Lock()
        """Held by each commit; readers that register observers take it too."""
        self._publisher = Publisher(self._listener_failed)
        self.published_seq = storage.last_seq
        """The seq of the newest stored commit taken into the live state and published."""
        self._unstored_reservations: set[int] = set()
        """Tasks whose live record holds a reservation (``running``, its first
        ``started_at``) that no commit has stored yet; the next storing commit does."""
        self.failed: SessionFailed | None = None
        self.closing = False
        self.storage_closed = False
        self.closed: asyncio.Future[CloseReason] = asyncio.get_running_loop().create_future()
        self._failure_listeners: list[Callable[[SessionFailed], None]] = []

    # -- the Session's condition --

    def check_usable(self) -> None:
        """Raise when new operations are refused.

        Raises:
            SessionFailed: After an uncertain storage failure.
            SessionClosed: After ``close()`` started.
        """
        self.check_failed()
        if self.closing:
            raise SessionClosed()

    def check_failed(self) -> None:
        """Raise ``SessionFailed`` when the Session was poisoned (R8)."""
        if self.failed is not None:
            # A fresh error each time: re-raising one instance would grow its traceback.
            raise SessionFailed(self.failed.cause)

    def check_readable(self) -> None:
        """Raise when committed state can no longer be read (failed, or storage closed)."""
        self.check_failed()
        if self.storage_closed:
            raise SessionClosed()

    def on_failure(self, listener: Callable[[SessionFailed], None]) -> None:
        """Call ``listener`` once if the Session is poisoned."""
        self._failure_listeners.append(listener)

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

    # -- committed state --

    async def load_live(self) -> None:
        """Load live tasks and the conversations around them (never the transcript)."""
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
            await self._learn_conversation(record.conversation_id)
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

    async def _learn_conversation(self, conversation_id: int) -> None:
        if not self.live.knows_conversation(conversation_id):
            record = await self.storage.conversation(conversation_id)
            if record is not None:
                self.live.add_conversation(record)

    async def read_task(self, task_id: int) -> TaskRecord | None:
        """Return a task's committed record (live ones from memory)."""
        record = self.live.task(task_id) or self.live.recent.ended(task_id)
        return record if record is not None else await self.storage.task(task_id)

    # -- the line (R1-R8) --

    @overload
    async def run(
        self, fn: Callable[[StagedCommit], Awaitable[T]], *, origin_task: int | None = None
    ) -> T: ...
    @overload
    async def run(
        self, fn: Callable[[StagedCommit], T], *, origin_task: int | None = None
    ) -> T: ...

    async def run(
        self, fn: Callable[[StagedCommit], Any], *, origin_task: int | None = None
    ) -> Any:
        """Run ``fn(staged)`` on the line and commit what it staged atomically.

        Args:
            fn: A sync or async callback receiving the ``StagedCommit``.
            origin_task: The task whose runtime commit this is (entries get ``by_task_id``).

        Returns:
            The callback's result, after the commit is stored and published.

        Raises:
            SessionClosed: After ``close()`` started.
            SessionFailed: The Session is poisoned, or this commit poisoned it.
            StorageRejected: Storage refused the batch; nothing changed.
            Exception: Whatever the callback or the commit's preparation raised;
                nothing was persisted.
        """
        self.check_usable()  # admission: sealed by close() (R27)
        await self.lock.acquire()
        handed_off = False
        try:
            # REMINDER: an admitted commit still runs while the Session closes (R27).
            self.check_failed()
            staged = StagedCommit(self.storage, self.live, self.documents, origin_task)
            try:
                result = fn(staged)
                if inspect.isawaitable(result):
                    result = await result
                staged.settle()
            except BaseException:
                staged.close()
                raise
            if _untouched(staged):
                staged.close()  # a scheduler pass or reconcile that found nothing to do
                return result
            try:
                writes = await self._prepare(staged)
            finally:
                staged.close()
            if not writes:
                if staged.tasks:  # only reservations no reader of the store can observe
                    self._unstored_reservations.update(staged.unstored_tasks)
                    self._publisher.publish(self._adopt(staged, self.storage.last_seq, []))
                return result
            writes.extend(self._carried(staged))
            store = asyncio.ensure_future(self._store(staged, writes))
            store.add_done_callback(_retrieve)
            handed_off = True
            await asyncio.shield(store)
            return result
        finally:
            if not handed_off:
                self.lock.release()

    async def _prepare(self, staged: StagedCommit) -> list[Write]:
        for conversation in list(staged.conversations.values()):
            await self.hooks.conversation_created(Tx(staged), conversation)
        for deferred in staged.on_prepare:
            await deferred()
        await prepare_commit(self, staged)
        # REMINDER: the last step before writes: nothing staged after it is filtered.
        staged.filter_values(self.hooks.filter_json)
        writes = staged.storage_writes()
        documents = staged.documents
        writes.extend(documents.finish(self.storage.last_seq + 1))
        writes.extend(
            await staged.fork_planner.copies(
                documents.changed_ids(), documents.written_addresses(), self.storage.mint_id
            )
        )
        for record in staged.tasks.values():
            cid = record.conversation_id
            if not self.live.knows_conversation(cid) and cid not in staged.conversations:
                stored = await self.storage.conversation(cid)
                if stored is not None:
                    staged.loaded_conversations.append(stored)
        return writes

    async def _store(self, staged: StagedCommit, writes: list[Write]) -> None:
        try:
            try:
                seq = await self.storage.commit(writes)
            except StorageRejected:
                raise
            except BaseException as error:
                self._poison(error)
                raise SessionFailed(error) from error
            self._unstored_reservations.clear()  # ``_carried`` put every one in ``writes``
            info = self._adopt(staged, seq, writes)
            # REMINDER: only here, with the commit adopted: a backend's ``last_seq`` can
            # move a loop iteration earlier (SQLite settles a commit before this task
            # resumes), while the caches still hold the state before it.
            self.published_seq = seq
            self._publisher.publish(info)
        finally:
            self.lock.release()

    def _carried(self, staged: StagedCommit) -> list[Write]:
        """Return writes storing every reservation not yet stored, for a commit that stores.

        A reservation's ``running`` is invisible to readers of the store, but its
        ``started_at`` is the task's first start, which the task tree shows; a task
        that runs for minutes writing only entries and documents would otherwise
        lose it to a crash and restart its clock on reopen. Riding on a commit that
        stores anyway costs one row and no hop.
        """
        pending = self._unstored_reservations | staged.unstored_tasks
        carried: list[Write] = []
        for task_id in sorted(pending):
            if task_id in staged.tasks and task_id not in staged.unstored_tasks:
                continue  # this commit writes the task whole
            record = staged.tasks.get(task_id) or self.live.task(task_id)
            if record is not None:
                carried.append(PutTask(record))
        return carried

    def _poison(self, error: BaseException) -> None:
        if self.failed is None:
            self.failed = SessionFailed(error)
            if not self.closed.done():
                self.closed.set_result(CloseReason("failed", self.failed))
            for listener in self._failure_listeners:
                listener(self.failed)

    def _adopt(self, staged: StagedCommit, seq: int, writes: list[Write]) -> CommitInfo:
        """Take the commit into the live index and the documents; its ``CommitInfo``."""
        for conversation in (*staged.loaded_conversations, *staged.conversations.values()):
            self.live.add_conversation(conversation)
        recent = self.live.recent
        for task_id in staged.new_task_ids:
            recent.born(task_id)
        previous: dict[int, TaskRecord | None] = {}
        for task in staged.tasks.values():
            previous[task.id] = self.live.task(task.id)
            self.live.put_task(task)
        changes = tuple(change.stamped(seq) for change in staged.documents.changes)
        copied = [copy_address(w) for w in writes if isinstance(w, CopyDocument)]
        for address in (*(change.address for change in changes), *copied):
            if address.scope.kind == "task" and address.scope.id is not None:
                recent.has_documents(address.scope.id)
        self.documents.adopt(changes, copied)
        return CommitInfo(
            seq=seq,
            conversations=tuple(staged.conversations.values()),
            entries=tuple(staged.entries),
            tasks=tuple(staged.tasks.values()),
            previous_tasks=previous,
            submissions=tuple(staged.submissions.values()),
            documents=changes,
            stored=bool(writes),
        )


def _untouched(staged: StagedCommit) -> bool:
    """Whether a settled callback staged nothing, so preparing it would find no work.

    Most runs of the line are such (issue 14: 23 of 30 in a tool round, the
    scheduler's passes and reconcile commits that found nothing to change), and
    preparation (creation hooks, task rules, the filter, document diffs, fork copies)
    cost them most of their 11 microseconds.

    # REMINDER: every kind of thing ``StagedCommit`` can stage must be named here,
    # or a commit staging only it would be dropped unstored.
    """
    return not (
        staged.tasks
        or staged.entries
        or staged.conversations
        or staged.forks
        or staged.submissions
        or staged.on_prepare
        or staged.loaded_conversations
        or staged.new_task_ids
        or staged.documents.touched
    )


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
