"""Test support for the kernel: a controllable Storage and small helpers.

``ControlledStorage`` wraps ``MemoryStorage`` (the reference semantics, R128) and
lets a test:

- record every batch handed to ``commit`` (``batches``) and every call (``calls``);
- make the next commits fail with any exception (``fail_next``): a
  ``StorageRejected`` is a clean refusal, anything else an uncertain failure (R8);
- hold commits at a gate (``hold_commits()`` / ``release_commits()``), to observe
  what happens while a batch is "in storage";
- hold reads at a gate (``hold_reads()`` / ``release_reads()``), so document
  acquisitions really are pending (``MemoryStorage`` never yields on its own).

Nothing here sleeps for real: gates are ``asyncio.Event``s and ``settle()`` only
lets the event loop run ready callbacks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from pi_durable_tui.kernel import (
    CommitInfo,
    Completed,
    DocDefinition,
    Ownerless,
    Session,
    TaskRuntime,
    Tx,
    define_doc,
    define_task,
)
from pi_durable_tui.storage import MemoryStorage
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.records import DocAddress, DocumentRead, ScopeRef, TaskRecord
from pi_durable_tui.storage.writes import Write

_READS = frozenset(
    {
        "conversation",
        "entry",
        "task",
        "submission",
        "submission_by_request",
        "scan_conversations",
        "scan_entries",
        "scan_tasks",
        "scan_submissions",
        "scan_documents",
        "find_latest_head_marker",
        "find_document",
        "document",
    }
)


class ControlledStorage:
    """A ``MemoryStorage`` whose commits and reads a test can record, fail and hold."""

    def __init__(self, inner: MemoryStorage | None = None) -> None:
        self.inner = inner if inner is not None else MemoryStorage()
        self.batches: list[list[Write]] = []
        self.calls: list[str] = []
        self.fail_next: list[BaseException] = []
        self.commit_started = asyncio.Event()
        self.closes = 0
        self._commit_gate: asyncio.Event | None = None
        self._read_gate: asyncio.Event | None = None

    # -- gates --

    def hold_commits(self) -> None:
        """Make every later commit wait in storage until ``release_commits``."""
        self._commit_gate = asyncio.Event()
        self.commit_started.clear()

    def release_commits(self) -> None:
        """Let held commits (and later ones) go through."""
        if self._commit_gate is not None:
            self._commit_gate.set()
        self._commit_gate = None

    def hold_reads(self) -> None:
        """Make every later read wait until ``release_reads``."""
        self._read_gate = asyncio.Event()

    def release_reads(self) -> None:
        """Let held reads (and later ones) go through."""
        if self._read_gate is not None:
            self._read_gate.set()
        self._read_gate = None

    # -- Storage --

    @property
    def last_seq(self) -> int:
        return self.inner.last_seq

    def mint_id(self) -> int:
        return self.inner.mint_id()

    async def commit(self, writes: Sequence[Write]) -> int:
        self.calls.append("commit")
        self.batches.append(list(writes))
        self.commit_started.set()
        gate = self._commit_gate
        if gate is not None:
            await gate.wait()
        else:
            await asyncio.sleep(0)  # a real backend yields to the loop while it commits
        if self.fail_next:
            raise self.fail_next.pop(0)
        seq = await self.inner.commit(writes)
        self.calls.append(f"committed {seq}")
        return seq

    async def close(self) -> None:
        self.closes += 1
        self.calls.append("close")
        await self.inner.close()

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if name not in _READS:
            return attribute

        async def read(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            gate = self._read_gate
            if gate is not None:
                await gate.wait()
            return await attribute(*args, **kwargs)

        return read


async def settle(rounds: int = 20) -> None:
    """Let the event loop run every ready callback a few times (never a real sleep)."""
    for _ in range(rounds):
        await asyncio.sleep(0)


NOTES = define_doc("notes", initial=lambda: {"text": "", "items": []})
"""A conversation document with a text and a list."""


async def _complete(task: TaskRecord, runtime: TaskRuntime) -> None:
    await runtime.commit(lambda tx: Completed())


JOB = define_task(
    "job", initial=lambda _input: {"phase": "run"}, phases={"run": _complete}, abort=_complete
)
"""A task that completes at once (it runs only when a test registers it)."""


async def controlled() -> tuple[ControlledStorage, Session]:
    """Open a Session over a fresh ``ControlledStorage``."""
    storage = ControlledStorage()
    return storage, await open_session(storage)


def collect_published(session: Session) -> list[CommitInfo]:
    """Return a list that collects every commit the Session publishes from now on."""
    seen: list[CommitInfo] = []
    session.subscribe(seen.append)
    return seen


async def open_session(storage: Any = None, **options: Any) -> Session:
    """Open a Session over ``storage`` (a fresh ``MemoryStorage`` by default)."""
    return await Session.open(storage if storage is not None else MemoryStorage(), **options)


async def new_conversation(session: Session) -> int:
    """Commit a new ownerless conversation and return its ID."""
    record = await session.commit(lambda tx: tx.create_conversation(Ownerless()))
    return record.id


async def append(session: Session, conversation_id: int, kind: str = "note") -> int:
    """Commit one entry and return its ID."""
    record = await session.commit(lambda tx: tx.append(conversation_id, kind))
    return record.id


async def edit(
    session: Session,
    definition: DocDefinition,
    scope_id: int | None,
    change: Callable[[JsonObject], object],
    key: str | None = None,
) -> None:
    """Commit one change to a document: ``change(draft)``."""

    async def fn(tx: Tx) -> None:
        change(await tx.doc(definition, scope_id, key))

    await session.commit(fn)


async def stored(
    storage: Any, definition: DocDefinition, scope_id: int | None, at: int | None = None
) -> DocumentRead | None:
    """Read a document straight from storage (bypassing the Session's cache)."""
    scope = (
        ScopeRef("session")
        if definition.scope == "session"
        else ScopeRef(definition.scope, scope_id)
    )
    address = DocAddress(definition.kind, scope)
    record = await storage.find_document(address, at)
    if record is None:
        return None
    read: DocumentRead | None = await storage.document(record.id, at)
    return read
