"""Test support for durable tasks: a session kit, gates, hooks that record, and a crash.

- ``open_kit(*definitions)`` opens a ``Session`` on a fresh ``MemoryStorage`` with
  a ``ManualClock`` and a recording hook set; ``Kit.close()`` closes it.
- ``Gate``: a phase awaits ``gate.passage()``; the test awaits ``gate.reached``,
  inspects, then ``gate.open()``. No real sleeping anywhere.
- ``abandon_without_closing_and_reopen(kit)``: the in-process stand-in for
  ``kill -9``: the old Session is sealed, its scheduler loop and invocations are
  cancelled, and it writes nothing more; its storage stays open, and a new Session
  opens on the same ``MemoryStorage`` object.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pi_durable_tui.kernel import (
    Aborted,
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
from pi_durable_tui.kernel.publication import CommitInfo
from pi_durable_tui.storage import MemoryStorage
from pi_durable_tui.storage.json_ops import Json, JsonObject
from pi_durable_tui.storage.records import ConversationRecord, TaskRecord

SAFETY = 5.0
"""Seconds before a test that waits for an event gives up (never a real sleep)."""

Phase = Callable[[TaskRecord, TaskRuntime], Awaitable[None]]


async def within(awaitable: Awaitable[Any], timeout: float = SAFETY) -> Any:
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

    outcomes: list[tuple[int, JsonObject, TaskRecord | None]] = field(default_factory=list)
    cancelled: list[list[int]] = field(default_factory=list)
    created: list[int] = field(default_factory=list)

    async def conversation_created(self, tx: Tx, record: ConversationRecord) -> None:
        self.created.append(record.id)

    async def scheduler_outcome(self, tx: Tx, task: TaskRecord, outcome: JsonObject) -> None:
        self.outcomes.append((task.id, outcome, tx.tasks.get(task.id)))

    async def conversations_cancelled(self, tx: Tx, conversation_ids: list[int]) -> None:
        self.cancelled.append(list(conversation_ids))


@dataclass
class Kit:
    """One open Session with everything a task test looks at."""

    storage: MemoryStorage
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
        return await within(self.session.wait_for_task(task_id))  # type: ignore[no-any-return]

    async def until(self, predicate: Callable[[], bool]) -> None:
        """Wait until ``predicate`` holds; re-checked after every commit (no polling)."""
        if predicate():
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def check(_info: CommitInfo) -> None:
            if not done.done() and predicate():
                done.set_result(None)

        unsubscribe = self.session.subscribe(check)
        try:
            await within(done)
        finally:
            unsubscribe()

    async def status_is(self, task_id: int, *statuses: str) -> TaskRecord:
        """Wait until a task's committed status is one of ``statuses``; return the record."""
        found: list[TaskRecord] = []

        def check() -> bool:
            record = self.session.live.task(task_id)
            if record is None:
                return "terminal" in statuses
            if record.status in statuses:
                found.append(record)
                return True
            return False

        await self.until(check)
        return found[-1] if found else await self.task(task_id)


async def open_kit(
    *definitions: TaskDefinition,
    registry: TaskRegistry | None = None,
    storage: MemoryStorage | None = None,
    clock: ManualClock | None = None,
    hooks: RecordingHooks | None = None,
) -> Kit:
    """Open a Session over ``MemoryStorage`` with a manual clock; scheduling is paused."""
    registry = registry if registry is not None else TaskRegistry(definitions)
    storage = storage if storage is not None else MemoryStorage()
    clock = clock if clock is not None else ManualClock()
    hooks = hooks if hooks is not None else RecordingHooks()
    reports: list[Report] = []
    session = await Session.open(
        storage, registry=registry, clock=clock, hooks=hooks, on_report=reports.append
    )
    return Kit(storage, clock, registry, hooks, session, reports)


async def abandon_without_closing_and_reopen(kit: Kit, registry: TaskRegistry | None = None) -> Kit:
    """Abandon a Session as a crash would, then open a new one on the same storage.

    The old Session is sealed (it admits no commit), its scheduler loop is
    cancelled and its invocations are signalled and joined; none of that writes
    anything, and its storage is NOT closed. The new Session shares the storage
    object, clock, hooks and (unless given) registry.
    """
    old = kit.session
    seq = kit.storage.last_seq
    # The old Session must never write again: seal admission the way close() does,
    # but never run close()'s storage shutdown.
    old._closing = True
    await within(old.scheduler.close())
    assert kit.storage.last_seq == seq, "abandoning a Session must write nothing"
    return await open_kit(
        registry=registry if registry is not None else kit.registry,
        storage=kit.storage,
        clock=kit.clock,
        hooks=kit.hooks,
    )


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
