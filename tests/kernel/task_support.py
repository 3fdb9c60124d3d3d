"""Test support for durable tasks: a session kit, gates, hooks that record, and a crash.

- ``Kits`` (the ``kits`` fixture of ``conftest.py``): ``await kits.open(*definitions)``
  opens a ``Session`` on a fresh ``CrashableStorage`` with a ``ManualClock`` and a
  recording hook set; every kit a test opened is closed when the test ends.
- ``await kits.reopen(kit)``: the in-process stand-in for ``kill -9``. The old
  Session is closed (which writes nothing, R27) without closing its storage, as a
  killed process closes nothing; a new Session opens on the same storage object.
- ``Gate``: a phase awaits ``gate.passage()``; the test awaits ``gate.reached``,
  inspects, then ``gate.open()``. No real sleeping anywhere.

Everything here goes through the kernel's public surface.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pi_durable_tui.kernel import (
    Aborted,
    CommitInfo,
    Completed,
    ConversationOwned,
    ManualClock,
    Ownerless,
    Report,
    Running,
    Session,
    SessionHooks,
    TaskDefinition,
    TaskOwned,
    TaskRegistry,
    TaskRuntime,
    Tx,
    define_task,
)
from pi_durable_tui.storage import MemoryStorage
from pi_durable_tui.storage.json_ops import Json, JsonObject
from pi_durable_tui.storage.records import ConversationRecord, TaskRecord
from tests.deadlines import WAIT

Phase = Callable[[TaskRecord, TaskRuntime], Awaitable[None]]


async def within(awaitable: Awaitable[Any], timeout: float = WAIT) -> Any:
    """Await ``awaitable`` with the safety timeout."""
    return await asyncio.wait_for(awaitable, timeout)


async def spin(rounds: int = 50) -> None:
    """Let every ready coroutine run a few times (yields only; no real time passes)."""
    for _ in range(rounds):
        await asyncio.sleep(0)


class Gate:
    """A point a phase stops at until the test opens it."""

    def __init__(self) -> None:
        self.reached = asyncio.Event()
        self._open = asyncio.Event()
        self.passages = 0

    def open(self) -> None:
        """Let every current and future passage through."""
        self._open.set()

    async def passage(self) -> None:
        """Signal that the gate was reached, then wait until it is open."""
        self.passages += 1
        self.reached.set()
        await self._open.wait()

    async def wait_reached(self) -> None:
        """Wait (with the safety timeout) until a phase reached the gate."""
        await within(self.reached.wait())


@dataclass
class RecordingHooks(SessionHooks):
    """Hooks that remember every call, with what the calling commit staged."""

    outcomes: list[tuple[int, JsonObject, TaskRecord]] = field(default_factory=list)
    """``(task ID, outcome, the record the commit stages)`` per cleanup call."""
    cancelled: list[list[int]] = field(default_factory=list)
    created: list[int] = field(default_factory=list)

    async def conversation_created(self, tx: Tx, record: ConversationRecord) -> None:
        self.created.append(record.id)

    async def scheduler_outcome(self, tx: Tx, task: TaskRecord, outcome: JsonObject) -> None:
        self.outcomes.append((task.id, outcome, task))

    async def conversations_cancelled(self, tx: Tx, conversation_ids: list[int]) -> None:
        self.cancelled.append(list(conversation_ids))


class CrashableStorage(MemoryStorage):
    """A ``MemoryStorage`` that a Session can be abandoned on, as a killed process leaves it.

    While ``crashing`` is set, ``close()`` leaves the store open, so a new Session
    can open on the same object.
    """

    crashing = False

    async def close(self) -> None:
        if not self.crashing:
            await super().close()


@dataclass
class Kit:
    """One open Session with everything a task test looks at."""

    storage: CrashableStorage
    clock: ManualClock
    registry: TaskRegistry
    hooks: RecordingHooks
    session: Session
    reports: list[Report] = field(default_factory=list)
    commits: list[CommitInfo] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.session.subscribe(self.commits.append)

    async def close(self) -> None:
        """Close the Session unless a test already did."""
        if not self.session.closing:
            await within(self.session.close())

    async def conversation(self, owner_task: int | None = None) -> int:
        """Commit a new conversation (ownerless, or owned by a task) and return its ID."""

        def create(tx: Tx) -> ConversationRecord:
            ownership = Ownerless() if owner_task is None else TaskOwned(owner_task)
            return tx.create_conversation(ownership)

        return (await self.session.commit(create)).id

    async def create(
        self,
        definition: TaskDefinition,
        task_input: Json = None,
        *,
        conversation_id: int | None = None,
        owner: int | None = None,
        background: bool = False,
    ) -> TaskRecord:
        """Commit a new task, conversation-owned by default."""

        def create(tx: Tx) -> TaskRecord:
            ownership = ConversationOwned() if owner is None else TaskOwned(owner)
            return tx.create_task(
                definition,
                task_input,
                ownership=ownership,
                conversation_id=conversation_id,
                background=background,
            )

        return await self.session.commit(create)

    async def task(self, task_id: int) -> TaskRecord:
        """Return a task's committed record."""
        record = await self.session.read_task(task_id)
        assert record is not None, f"task {task_id} is unknown"
        return record

    async def finished(self, task_id: int) -> TaskRecord:
        """Start scheduling and return the task's terminal record."""
        record: TaskRecord = await within(self.session.wait_for_task(task_id))
        return record

    async def until(self, predicate: Callable[[CommitInfo], bool]) -> None:
        """Wait until a published commit satisfies ``predicate`` (no polling)."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def check(info: CommitInfo) -> None:
            if not done.done() and predicate(info):
                done.set_result(None)

        unsubscribe = self.session.subscribe(check)
        try:
            await within(done)
        finally:
            unsubscribe()

    async def status_is(self, task_id: int, *statuses: str) -> TaskRecord:
        """Wait until a task's committed status is one of ``statuses``; return the record."""
        record = await self.task(task_id)
        if record.status in statuses:
            return record
        found: list[TaskRecord] = []

        def reached(info: CommitInfo) -> bool:
            found.extend(r for r in info.tasks if r.id == task_id and r.status in statuses)
            return bool(found)

        await self.until(reached)
        return found[-1]

    async def scheduling(self) -> str:
        """Return what ``inspect()`` says of scheduling: paused, running or closing (R28)."""
        report = await self.session.inspect()
        scheduling: str = report["scheduling"]
        return scheduling

    async def activity(self, task_id: int) -> JsonObject:
        """Return what ``inspect()`` says a live task is doing (R28)."""
        report = await self.session.inspect()
        (activity,) = [t["activity"] for t in report["tasks"] if t["id"] == task_id]
        found: JsonObject = activity
        return found

    async def blocked(self) -> dict[int, str]:
        """Return the blocked reason of every live task ``inspect()`` shows blocked (R44)."""
        report = await self.session.inspect()
        return {
            task["id"]: task["activity"]["blocked"]["reason"]
            for task in report["tasks"]
            if "blocked" in task["activity"]
        }


class Kits:
    """Opens session kits for one test and closes them all when it ends (the ``kits`` fixture)."""

    def __init__(self) -> None:
        self._opened: list[Kit] = []

    async def open(
        self,
        *definitions: TaskDefinition,
        registry: TaskRegistry | None = None,
        storage: CrashableStorage | None = None,
        clock: ManualClock | None = None,
        hooks: RecordingHooks | None = None,
    ) -> Kit:
        """Open a Session with a manual clock; scheduling is paused (R23)."""
        registry = registry if registry is not None else TaskRegistry(definitions)
        storage = storage if storage is not None else CrashableStorage()
        clock = clock if clock is not None else ManualClock()
        hooks = hooks if hooks is not None else RecordingHooks()
        reports: list[Report] = []
        session = await Session.open(
            storage, registry=registry, clock=clock, hooks=hooks, on_report=reports.append
        )
        kit = Kit(storage, clock, registry, hooks, session, reports)
        self._opened.append(kit)
        return kit

    async def reopen(self, kit: Kit, registry: TaskRegistry | None = None) -> Kit:
        """Abandon a Session as a crash would, then open a new one on the same storage.

        The old Session is closed without closing its storage: close seals
        admission, stops the scheduler and joins invocations, and writes nothing
        (R27). The new Session shares the storage object, clock, hooks and
        (unless given) registry.
        """
        seq = kit.storage.last_seq
        kit.storage.crashing = True
        try:
            await kit.close()
        finally:
            kit.storage.crashing = False
        assert kit.storage.last_seq == seq, "abandoning a Session must write nothing"
        return await self.open(
            registry=registry if registry is not None else kit.registry,
            storage=kit.storage,
            clock=kit.clock,
            hooks=kit.hooks,
        )

    async def close_all(self) -> None:
        """Close every kit still open, newest first."""
        for kit in reversed(self._opened):
            await kit.close()


# -- definitions --


def abort_with(reason: str = "stopped") -> Phase:
    """An abort handler that commits ``Aborted(reason)``."""

    async def abort(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.commit(lambda tx: Aborted(reason))

    return abort


def complete(result: Json = None) -> Phase:
    """A phase that commits ``Completed(result)``."""

    async def phase(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.commit(lambda tx: Completed(result))

    return phase


def goto(phase_name: str, **extra: Json) -> Phase:
    """A phase that commits ``Running({"phase": phase_name, **extra})``."""

    async def phase(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.commit(lambda tx: Running({"phase": phase_name, **extra}))

    return phase


def create_owned(definition: TaskDefinition, owner: int) -> Callable[[Tx], None]:
    """A runtime commit callback that creates a task owned by ``owner`` and leaves the state."""

    def create(tx: Tx) -> None:
        tx.create_task(definition, ownership=TaskOwned(owner))

    return create


def crashing_parent(child: TaskDefinition) -> TaskDefinition:
    """A ``parent`` task that creates an owned ``child``, then raises ``parent broke``.

    The scheduler faults it while the child is live, so the fault holds (R53, R54).
    """

    async def crash(task: TaskRecord, runtime: TaskRuntime) -> None:
        await runtime.commit(create_owned(child, task.id))
        raise RuntimeError("parent broke")

    return define("parent", {"crash": crash})


def gated(gate: Gate, then: Phase) -> Phase:
    """A phase that waits at ``gate`` and then behaves like ``then``."""

    async def phase(task: TaskRecord, runtime: TaskRuntime) -> None:
        await gate.passage()
        await then(task, runtime)

    return phase


def define(
    name: str,
    phases: Mapping[str, Phase],
    *,
    abort: Phase | None = None,
    version: int = 1,
    migrate: Callable[[Json, JsonObject, int], tuple[Json, JsonObject]] | None = None,
    first: str | None = None,
) -> TaskDefinition:
    """Define a task whose first checkpoint is ``{"phase": first or the first phase}``."""
    start = first if first is not None else next(iter(phases))
    return define_task(
        name,
        initial=lambda _input: {"phase": start},
        phases=phases,
        abort=abort if abort is not None else abort_with(),
        version=version,
        migrate=migrate,
    )


def outcome_of(record: TaskRecord) -> JsonObject:
    """Return a held or terminal task's outcome."""
    outcome = record.state.get("outcome")
    assert isinstance(outcome, dict), f"task {record.id} has no outcome: {record.state}"
    return outcome
