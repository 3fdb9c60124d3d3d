"""The suite's scaffolding: the backend factory, reopening, record builders, assertions.

``ConformanceBase`` owns the fixtures every test uses: ``storage`` (a fresh
store in a directory of its own, closed after the test) and ``phase`` (runs a
test twice, once as is and once with a reopen at each ``checkpoint``). A backend
that declares ``persistent = False`` has no reopen tests at all, rather than
skipped ones: its tests get only the ``live`` phase, and the tests marked
``@reopens`` are not part of its class. The builders make valid records with few
arguments, so a test reads as the rule it checks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import pytest

from pi_durable_tui.storage._conformance.snapshot import snapshot
from pi_durable_tui.storage.errors import StorageRejected
from pi_durable_tui.storage.json_ops import Json, JsonObject, Op
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.records import (
    ConversationOwner,
    ConversationRecord,
    ConversationScope,
    DocScope,
    EntryRecord,
    ForkPoint,
    SubmissionRecord,
    SubmissionStatus,
    SubmissionType,
    TaskRecord,
    TaskStatus,
)
from pi_durable_tui.storage.writes import (
    ChangeDocument,
    CreateDocument,
    PutConversation,
    PutEntry,
    PutSubmission,
    PutTask,
    Write,
)

_Test = TypeVar("_Test", bound=Callable[..., Any])
_REOPENS = "_conformance_reopens"


def reopens(test: _Test) -> _Test:
    """Mark a test that calls ``reopen``: a backend that is not persistent does not get it."""
    setattr(test, _REOPENS, True)
    return test


class ConformanceBase:
    """Fixtures and helpers shared by every group of conformance tests.

    Subclasses provide ``open_storage`` and may set ``persistent``.
    """

    persistent: ClassVar[bool] = True
    """Whether the store survives ``close``; ``False`` leaves out every reopen test."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.persistent:
            return
        # pytest collects only callables: a test set to None is not in the class.
        for name in dir(cls):
            if name.startswith("test_") and getattr(getattr(cls, name), _REOPENS, False):
                setattr(cls, name, None)

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        """Give ``phase`` its runs: ``live``, and ``reopened`` for a persistent backend."""
        if "phase" in metafunc.fixturenames:
            phases = ["live", "reopened"] if self.persistent else ["live"]
            metafunc.parametrize("phase", phases, indirect=True)

    _directory: Path
    _current: Storage
    _reopen_at_checkpoint: bool = False

    async def open_storage(self, directory: Path) -> Storage:
        """Open the store kept in ``directory`` (empty the first time), or a new one.

        Args:
            directory: A directory owned by this test; the same one on every reopen.
        """
        raise NotImplementedError("a conformance test class must define open_storage")

    @pytest.fixture
    async def storage(self, tmp_path: Path) -> AsyncIterator[Storage]:
        """A fresh store, closed (in whatever instance is current) after the test."""
        self._directory = tmp_path / "store"
        self._directory.mkdir()
        self._current = await self.open_storage(self._directory)
        try:
            yield self._current
        finally:
            await self._current.close()

    @pytest.fixture
    def phase(self, request: pytest.FixtureRequest) -> str:
        """Run a test as is, then again with a reopen at every ``checkpoint``."""
        self._reopen_at_checkpoint = request.param == "reopened"
        return str(request.param)

    async def reopen(self, storage: Storage) -> Storage:
        """Close ``storage`` and open the same store again; return the new instance.

        Raises:
            TypeError: The backend is not persistent (mark the test ``@reopens``).
        """
        if not self.persistent:
            name = type(self).__name__
            raise TypeError(f"{name} is not persistent: mark a test that reopens with @reopens")
        await storage.close()
        self._current = await self.open_storage(self._directory)
        return self._current

    async def checkpoint(self, storage: Storage) -> Storage:
        """Reopen the store when the test runs in the ``reopened`` phase."""
        if self._reopen_at_checkpoint:
            return await self.reopen(storage)
        return storage


# -- builders ---------------------------------------------------------------------


def conversation(
    conversation_id: int,
    *,
    parent: int | None = None,
    at: int | None = None,
    owner: tuple[int, int] | None = None,
) -> PutConversation:
    """A conversation write; ``parent``/``at`` make a fork, ``owner`` is ``(conv, task)``."""
    fork = None if parent is None or at is None else ForkPoint(parent, at)
    owned = None if owner is None else ConversationOwner(*owner)
    return PutConversation(ConversationRecord(conversation_id, fork, owned))


def entry(
    entry_id: int,
    conversation_id: int,
    *,
    kind: str = "note",
    data: Json = None,
    head: int | None = None,
) -> PutEntry:
    """An entry write."""
    return PutEntry(EntryRecord(entry_id, conversation_id, kind, data=data, head=head))


def task_state(status: TaskStatus) -> JsonObject:
    """A well-formed task state of the given status."""
    if status in ("pending", "running"):
        return {"status": status, "checkpoint": {"phase": "start"}}
    if status == "waiting":
        return {
            "status": status,
            "checkpoint": {"phase": "join"},
            "on": [],
            "policy": "all_settled",
        }
    return {"status": status, "outcome": {"status": "completed", "result": None}}


def task(
    task_id: int,
    conversation_id: int,
    status: TaskStatus = "pending",
    *,
    kind: str = "job",
    owner: int | None = None,
    background: bool = False,
    abort_requested: bool = False,
    input: Json = None,
) -> PutTask:
    """A task write (creation or whole-record replacement)."""
    return PutTask(
        TaskRecord(
            task_id,
            conversation_id,
            kind,
            1,
            input,
            task_state(status),
            owner=owner,
            background=background,
            abort_requested=abort_requested,
        )
    )


def submission(
    submission_id: int,
    conversation_id: int,
    *,
    type: SubmissionType = "input",
    status: SubmissionStatus = "queued",
    request_id: str | None = None,
    entry: int | None = None,
    detail: Json = None,
) -> PutSubmission:
    """A submission write (creation or whole-record replacement)."""
    return PutSubmission(
        SubmissionRecord(
            submission_id,
            conversation_id,
            type,
            status,
            request_id=request_id,
            entry=entry,
            detail=detail,
        )
    )


def rewindable(conversation_id: int) -> ConversationScope:
    """A rewindable conversation scope copied ``asOf`` the fork point."""
    return ConversationScope(conversation_id, "rewindable", "asOf")


def latest(conversation_id: int) -> ConversationScope:
    """A current-only conversation scope copied as it is when a fork commits."""
    return ConversationScope(conversation_id, "latest", "current")


def create(
    document_id: int,
    scope: DocScope,
    value: JsonObject | None = None,
    *,
    kind: str = "notes",
    key: str | None = None,
    version: int = 1,
) -> CreateDocument:
    """A document creation with a complete base (``{}`` unless given)."""
    return CreateDocument(document_id, kind, scope, version, {} if value is None else value, key)


def delta(document_id: int, *ops: Op, version: int = 1) -> ChangeDocument:
    """A document change by operations."""
    return ChangeDocument(document_id, version, ops=list(ops))


def base(document_id: int, value: JsonObject, *, version: int = 1) -> ChangeDocument:
    """A document change by a complete base."""
    return ChangeDocument(document_id, version, base=value)


def set_op(path: list[str | int], value: Json) -> Op:
    """A ``set`` operation."""
    return {"op": "set", "path": path, "value": value}


# -- assertions -------------------------------------------------------------------


async def rejects(
    storage: Storage, writes: Sequence[Write], message: str, *, exact: bool = False
) -> StorageRejected:
    """Assert that a commit is rejected and left every read as it was (R8).

    Args:
        storage: The store.
        writes: The batch that must be rejected.
        message: Text the error must contain (or equal, with ``exact``).
        exact: Whether the message must match exactly.

    Returns:
        The error, for further checks.
    """
    before = await snapshot(storage)
    with pytest.raises(StorageRejected) as caught:
        await storage.commit(writes)
    text = str(caught.value)
    if exact:
        assert text == message
    else:
        assert message in text, f"{message!r} not in {text!r}"
    assert storage.last_seq == before["last_seq"], "a rejected commit consumed a seq"
    assert await snapshot(storage) == before, "a rejected commit changed what reads return"
    return caught.value
