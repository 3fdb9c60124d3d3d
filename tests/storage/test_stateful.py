"""Differential stateful test: SQLite and JSONL against ``MemoryStorage`` (reliability P1).

A Hypothesis ``RuleBasedStateMachine`` drives one backend (in a temporary
directory) and a ``MemoryStorage`` (the reference semantics, R128) with the same
random commit batches, valid and invalid, and checks after every step that both
agree: the same accept/reject outcome and message, the same seq, and the same
answer to every read (records, fork-aware entry scans, head markers, documents
at any point, filtered scans paged with cursors round-tripped through JSON,
sometimes across a reopen). It reopens the backend at random, and mints IDs from
it while drawing batches (each above every committed ID and every earlier mint).

The default run is small (30 examples x 30 steps per backend, about 700 steps);
the soak run (``-m soak``) uses the P1 figures, 200 examples x 50 steps (Hypothesis
treats the step count as a maximum: about 8,000 steps per backend). Both are
reproducible: no example database, derandomized, and no strategy is built from a
fresh list at each draw (see ``stateful_batches.pick``). The default run catches
each of these faults planted in the reference: a stale request-ID index, no
reclamation of current-only documents, a fork cap off by one, a cursor that
skips an item; each has a regression test in the conformance suite.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from pi_durable_tui.storage import (
    JsonlStorage,
    MemoryStorage,
    PostgresStorage,
    SqliteStorage,
    StorageRejected,
)
from pi_durable_tui.storage._conformance.snapshot import (
    document_read_json,
    outcome,
    stored_entry_json,
)
from pi_durable_tui.storage.conformance import canonical, snapshot
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.records import ConversationRecord, DocAddress, Page, ScopeRef
from pi_durable_tui.storage.writes import PutConversation, Write
from tests.storage.stateful_batches import (
    DOC_KINDS,
    KEYS,
    REQUESTS,
    STATUSES,
    SUB_STATUSES,
    BatchDrawer,
    Model,
    maybe,
    pick,
    statuses,
)

BACKENDS: dict[str, Any] = {
    "sqlite": SqliteStorage,
    "jsonl": JsonlStorage,
    "postgres": PostgresStorage,
}

# A failure is replayed hundreds of times while it shrinks, each replay a fresh
# store on disk: stop at the first bug and skip the costly explain phase, so a
# shrunk example is reported well within pytest's timeout.
COMMON = settings(
    database=None,
    derandomize=True,
    deadline=None,
    report_multiple_bugs=False,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
FAST = settings(COMMON, max_examples=30, stateful_step_count=30)
FAST_POSTGRES = settings(COMMON, max_examples=6, stateful_step_count=30)
"""Every read is a round trip to the server: fewer examples by default (the soak runs all)."""
SOAK = settings(COMMON, max_examples=200, stateful_step_count=50)


def backend_class(name: str) -> Any:
    """Return the backend class under test."""
    return BACKENDS[name]


def as_json(value: Any) -> Any:
    """Turn a read's result (records, pages, tuples) into comparable JSON."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "to_json"):
        return value.to_json()
    if hasattr(value, "commit_seq"):
        return stored_entry_json(value)
    if hasattr(value, "deltas_since_base"):
        return document_read_json(value)
    if isinstance(value, (list, tuple)):
        return [as_json(v) for v in value]
    raise TypeError(f"cannot compare {value!r}")


async def commit_outcome(storage: Storage, writes: list[Write]) -> tuple[Any, ...]:
    """``("ok", seq)`` or ``("rejected", message)``; any other error propagates."""
    try:
        return ("ok", await storage.commit(writes))
    except StorageRejected as error:
        return ("rejected", str(error))


class StorageMachine(RuleBasedStateMachine):
    """One backend and the memory reference, fed the same batches.

    Subclasses set ``backend`` and may override ``open`` (how the backend is
    opened in ``self.directory``), e.g. to run the machine with other options.
    """

    backend = "sqlite"
    database = ""
    """The PostgreSQL URL, for ``postgres`` (each example is a store named by its directory)."""

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.directory = Path(tempfile.mkdtemp(prefix=f"pidurable-{self.backend}-"))
        self.opener = backend_class(self.backend)
        self.ref = MemoryStorage()
        self.sut: Storage = self.run(self.open())
        self.model = Model()
        self.last_minted = 0

    # -- plumbing --------------------------------------------------------------

    def run(self, awaitable: Awaitable[Any]) -> Any:
        """Run a coroutine on this machine's own event loop."""
        return self.loop.run_until_complete(awaitable)

    async def open(self) -> Storage:
        if self.backend == "sqlite":
            opened: Storage = await self.opener.open(self.directory / "store.sqlite")
        elif self.backend == "postgres":
            opened = await self.opener.open(self.database, str(self.directory))
        else:
            opened = await self.opener.open(self.directory / "jsonl", fsync=False)
        return opened

    def reopen_backend(self) -> None:
        self.run(self.sut.close())
        self.sut = self.run(self.open())
        self.last_minted = 0

    def both(self, call: Callable[[Storage], Awaitable[Any]]) -> None:
        """Ask both stores the same question; the answers (or errors) must be equal."""
        expected = self.run(outcome(self._json(call, self.ref)))
        got = self.run(outcome(self._json(call, self.sut)))
        assert canonical(got) == canonical(expected), f"backend {got!r} != reference {expected!r}"

    async def _json(self, call: Callable[[Storage], Awaitable[Any]], storage: Storage) -> Any:
        return as_json(await call(storage))

    def current_value(self, document_id: int) -> tuple[int, JsonObject] | None:
        read = self.run(self.ref.document(document_id))
        return None if read is None else (read.version, read.value)

    def teardown(self) -> None:
        try:
            self.run(self.sut.close())
            self.run(self.ref.close())
        finally:
            self.loop.close()
            shutil.rmtree(self.directory, ignore_errors=True)

    # -- rules -----------------------------------------------------------------

    @initialize()
    def root(self) -> None:
        self.commit_batch([PutConversation(ConversationRecord(1))])

    def commit_batch(self, writes: list[Write]) -> None:
        note(f"commit {writes!r}")
        expected = self.run(commit_outcome(self.ref, writes))
        got = self.run(commit_outcome(self.sut, writes))
        assert got == expected, f"backend {got!r} != reference {expected!r}"
        if expected[0] == "ok":
            self.model.apply(writes, expected[1])

    @rule(data=st.data())
    def commit(self, data: st.DataObject) -> None:
        drawer = BatchDrawer(self.model, data.draw, self.mint, self.current_value)
        self.commit_batch(drawer.batch())

    @rule(data=st.data())
    def commit_tables(self, data: st.DataObject) -> None:
        drawer = BatchDrawer(self.model, data.draw, self.mint, self.current_value)
        self.commit_batch(drawer.table_batch())

    @rule(data=st.data())
    def commit_documents(self, data: st.DataObject) -> None:
        drawer = BatchDrawer(self.model, data.draw, self.mint, self.current_value)
        self.commit_batch(drawer.document_batch())

    @rule(data=st.data())
    def commit_fork(self, data: st.DataObject) -> None:
        drawer = BatchDrawer(self.model, data.draw, self.mint, self.current_value)
        self.commit_batch(drawer.fork_batch())

    def mint(self) -> int:
        """Mint an ID from the backend: above every committed ID and every earlier mint."""
        minted = self.sut.mint_id()
        assert minted > self.model.max_id, (minted, self.model.max_id)
        assert minted > self.last_minted, (minted, self.last_minted)
        self.last_minted = minted
        return minted

    @rule(data=st.data())
    def observe(self, data: st.DataObject) -> None:
        """Maybe reopen; ask both stores a scan and a lookup; usually compare everything.

        Reopening, scans, lookups and comparisons share one rule, and minting
        happens while drawing batches: Hypothesis favours rules that sort first
        (by argument count, then name) and switches a random subset of rules off
        in each example, so fewer rules keep commits at most of the steps.
        """
        if data.draw(st.integers(0, 3)) == 3:
            self.reopen_backend()
            assert self.sut.last_seq == self.model.seq
        self.scan(data)
        self.read(data)
        which = data.draw(st.integers(0, 3))
        if which == 3:
            self.compare_history()
        elif which >= 1:
            self.compare_current_state()

    def scan(self, data: st.DataObject) -> None:
        """Page through one scan in both stores; maybe reopen the backend midway."""
        draw, model = data.draw, self.model
        conversations = sorted(model.conversations) or [1]
        tasks = sorted(model.tasks) or [0]
        kind = pick(draw, ["entries", "tasks", "submissions", "conversations", "documents"])
        args: tuple[Any, ...] = ()
        if kind == "entries":
            args = (pick(draw, conversations),)
            filters = {
                "min_entry_id": maybe(draw, lambda: draw(st.integers(0, model.max_id + 2))),
                "max_entry_id": maybe(draw, lambda: draw(st.integers(0, model.max_id + 2))),
                "order": pick(draw, ["asc", "desc"]),
            }
        elif kind == "tasks":
            filters = {
                "conversation_id": maybe(draw, lambda: pick(draw, conversations)),
                "kind": maybe(draw, lambda: pick(draw, ["job", "tool"])),
                "status": maybe(draw, lambda: statuses(draw, STATUSES)),
                "abort_requested": maybe(draw, lambda: draw(st.booleans())),
                "background": maybe(draw, lambda: draw(st.booleans())),
            }
        elif kind == "submissions":
            filters = {
                "conversation_id": maybe(draw, lambda: pick(draw, conversations)),
                "status": maybe(draw, lambda: statuses(draw, SUB_STATUSES)),
            }
        elif kind == "conversations":
            filters = {
                "owner_conversation_id": maybe(draw, lambda: pick(draw, conversations)),
                "owner_task_id": maybe(draw, lambda: pick(draw, tasks)),
            }
        else:
            args = (pick(draw, self.scopes()),)
            filters = {
                "at": maybe(draw, lambda: draw(st.integers(0, model.seq))),
                "kind": maybe(draw, lambda: pick(draw, DOC_KINDS)),
            }
        method = f"scan_{kind}"
        limit = draw(st.integers(1, 5))
        reopen_at = maybe(draw, lambda: draw(st.integers(1, 3)))
        expected = self.run(self.every_page(self.ref, method, args, filters, limit, None))
        got = self.run(self.every_page(self.sut, method, args, filters, limit, reopen_at))
        assert canonical(got) == canonical(expected), (method, args, filters, limit)

    def scopes(self) -> list[ScopeRef]:
        """Every document scope the model knows of."""
        return [
            ScopeRef("session"),
            *(ScopeRef("conversation", c) for c in sorted(self.model.conversations)),
            *(ScopeRef("task", t) for t in sorted(self.model.tasks)),
        ]

    async def every_page(
        self,
        storage: Storage,
        method: str,
        args: tuple[Any, ...],
        filters: dict[str, Any],
        limit: int,
        reopen_at: int | None,
    ) -> list[Any]:
        items: list[Any] = []
        cursor: JsonObject | None = None
        for page_number in range(1, 1000):
            page: Page[Any] = await getattr(storage, method)(
                *args, limit=limit, cursor=cursor, **filters
            )
            assert len(page.items) <= limit
            items.extend(as_json(item) for item in page.items)
            if page.cursor is None:
                return items
            cursor = json.loads(json.dumps(page.cursor))
            if page_number == reopen_at and storage is self.sut:
                await self.sut.close()
                self.sut = storage = await self.open()
                self.last_minted = 0
        raise AssertionError("the scan does not end")

    def read(self, data: st.DataObject) -> None:
        """One keyed lookup, asked of both stores."""
        draw, model = data.draw, self.model
        known = sorted(model.kinds) or [1]

        def an_id() -> int:
            if draw(st.booleans()):
                return int(pick(draw, known))
            return int(draw(st.integers(1, model.max_id + 2)))

        def a_conversation() -> int:
            return int(pick(draw, sorted(model.conversations) or [1]))

        def a_seq() -> int | None:
            return maybe(draw, lambda: draw(st.integers(0, model.seq)))

        which = draw(st.integers(0, 8))
        if which == 0:
            entry_id, cid = an_id(), maybe(draw, a_conversation)
            self.both(lambda s: s.entry(entry_id, cid))
        elif which == 1:
            cid, cutoff = a_conversation(), maybe(draw, an_id)
            self.both(lambda s: s.find_latest_head_marker(cid, cutoff))
        elif which == 2:
            document_id, at = an_id(), a_seq()
            self.both(lambda s: s.document(document_id, at))
        elif which == 3:
            scope = pick(draw, self.scopes())
            address = DocAddress(pick(draw, DOC_KINDS), scope, pick(draw, KEYS))
            at = a_seq()
            self.both(lambda s: s.find_document(address, at))
        elif which == 4:
            cid, request = a_conversation(), pick(draw, REQUESTS)
            self.both(lambda s: s.submission_by_request(cid, request))
        else:
            record_id = an_id()
            method = ["conversation", "task", "submission", "entry"][which - 5]
            self.both(lambda s: getattr(s, method)(record_id))

    def compare_current_state(self) -> None:
        """Everything the stores hold now, read through every scan and lookup."""
        expected = canonical(self.run(snapshot(self.ref, history=False, page_size=2)))
        assert canonical(self.run(snapshot(self.sut, history=False, page_size=2))) == expected

    def compare_history(self) -> None:
        """Document scans and contents at every past seq, plus everything current."""
        expected = canonical(self.run(snapshot(self.ref, history=True, page_size=3)))
        assert canonical(self.run(snapshot(self.sut, history=True, page_size=3))) == expected

    @invariant()
    def same_seq(self) -> None:
        assert self.sut.last_seq == self.ref.last_seq == self.model.seq


def machine_for(backend: str) -> type[StorageMachine]:
    backend_class(backend)
    return type(f"{backend.capitalize()}Machine", (StorageMachine,), {"backend": backend})


# Hypothesis stops shrinking a failure after 300 s and then reports it; the
# timeout leaves room for that, so a divergence is shown rather than cut off.
@pytest.mark.timeout(900)
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_a_backend_answers_like_the_memory_reference(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """P1 (small budget): random valid and invalid batches, reopens, scans, mints."""
    machine = machine_for(backend)
    if backend == "postgres":
        machine.database = request.getfixturevalue("postgres_url")
    run_state_machine_as_test(machine, settings=FAST_POSTGRES if backend == "postgres" else FAST)


@pytest.mark.soak
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_a_backend_answers_like_the_memory_reference_soak(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """P1 figures: 200 examples x 50 steps per backend, zero divergences."""
    machine = machine_for(backend)
    if backend == "postgres":
        machine.database = request.getfixturevalue("postgres_url")
    run_state_machine_as_test(machine, settings=SOAK)
