"""The workloads of the storage benchmark, as candidates for ``_timing``.

Every workload goes through the public ``Storage`` protocol only (or, for the
Session rows, through ``Session.commit``). Batches are built and their IDs
minted before the clock starts, so a write's figure is the backend's ``commit``
alone. Every read checks its answer against what seeding stored (see
``_seed``); a wrong answer is reported, not raised.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pi_durable_tui.bench.storage._seed import (
    FAMILY_KIND,
    FILTERED_KIND,
    HISTORY_BASE_STEP,
    HISTORY_HALF,
    NOTE_KIND,
    ROOT,
    TimingStore,
    history_value,
    mixed_batch,
    note,
    note_data,
    tail_value,
)
from pi_durable_tui.bench.storage._timing import Candidate
from pi_durable_tui.kernel import Ownerless, Session
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.jsonl import JsonlStorage
from pi_durable_tui.storage.memory import MemoryStorage
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.records import DocAddress, ScopeRef
from pi_durable_tui.storage.sqlite import SqliteStorage
from pi_durable_tui.storage.writes import PutEntry, Write

Kind = Literal["memory", "sqlite", "jsonl"]


@dataclass(frozen=True, slots=True)
class Backend:
    """A backend and its options, under the name the report uses."""

    name: str
    kind: Kind
    durable: bool = False
    """``synchronous=FULL`` for SQLite, ``fsync=True`` for JSONL."""

    @property
    def persistent(self) -> bool:
        """Whether the store can be closed and opened again."""
        return self.kind != "memory"

    def path(self, directory: Path) -> Path:
        """Return where this backend keeps a store inside ``directory``."""
        return directory / ("store.sqlite" if self.kind == "sqlite" else "store")

    async def open(self, path: Path) -> Storage:
        """Open (or create) the store at ``path``; a memory store ignores ``path``."""
        if self.kind == "sqlite":
            return await SqliteStorage.open(path, synchronous="FULL" if self.durable else "NORMAL")
        if self.kind == "jsonl":
            return await JsonlStorage.open(path, fsync=self.durable)
        return MemoryStorage()


MEMORY = Backend("memory", "memory")
SQLITE = Backend("sqlite", "sqlite")
JSONL = Backend("jsonl", "jsonl")
SQLITE_FULL = Backend("sqlite_full", "sqlite", durable=True)
JSONL_FSYNC = Backend("jsonl_fsync", "jsonl", durable=True)
PRIMARY = (MEMORY, SQLITE, JSONL)
DURABLE = (SQLITE_FULL, JSONL_FSYNC)


def write_candidates(name: str, store: TimingStore) -> dict[str, Candidate]:
    """Return the write workloads of one backend, keyed by workload name.

    Args:
        name: The backend's report name.
        store: Its seeded store.

    Returns:
        ``commit_1_entry``, ``commit_100_entries`` and ``commit_mixed``.
    """
    storage = store.storage
    commit = storage.commit

    def hundred(n: int) -> list[Write]:
        return [PutEntry(note(storage.mint_id(), ROOT, 100 * n + k)) for k in range(100)]

    def mixed(n: int) -> list[Write]:
        return mixed_batch(storage, store.mixed_document, n)

    return {
        "commit_1_entry": one_entry_candidate(f"{name}.commit_1_entry", storage),
        "commit_100_entries": Candidate(f"{name}.commit_100_entries", run=commit, prepare=hundred),
        "commit_mixed": Candidate(f"{name}.commit_mixed", run=commit, prepare=mixed),
    }


def one_entry_candidate(key: str, storage: Storage) -> Candidate:
    """Return a one-entry commit to the root conversation of ``storage``, named ``key``."""

    def one(n: int) -> list[Write]:
        return [PutEntry(note(storage.mint_id(), ROOT, n))]

    return Candidate(key, run=storage.commit, prepare=one)


async def open_session(storage: Storage) -> tuple[Session, int]:
    """Open a Session over an empty store and commit a conversation to append to.

    Args:
        storage: An empty store; the Session closes it.

    Returns:
        The Session and the conversation's ID.
    """
    session = await Session.open(storage)
    conversation = await session.commit(lambda tx: tx.create_conversation(Ownerless()))
    return session, conversation.id


def session_candidate(name: str, session: Session, conversation: int) -> Candidate:
    """Return a one-entry commit through ``Session.commit`` (line, storage, publication)."""

    async def run(n: int) -> object:
        return await session.commit(
            lambda tx: tx.append(conversation, NOTE_KIND, data=note_data(n))
        )

    return Candidate(f"{name}.session_commit_1_entry", run=run)


def _brief(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def read_candidates(name: str, store: TimingStore) -> dict[str, Candidate]:
    """Return the read workloads of one backend, keyed by workload name.

    Args:
        name: The backend's report name.
        store: Its seeded store (before any write workload ran on it).

    Returns:
        The candidates; each checks its answer.
    """
    storage = store.storage
    entry_ids = store.bulk.entry_ids
    family = store.bulk.family
    chain = store.chain
    page = entry_ids[-100:][::-1]
    fork_page = chain.entry_ids[-100:][::-1]
    matches = min(50, store.bulk.filtered_matches)
    reads: dict[str, Candidate] = {}

    def add(
        workload: str,
        run: Callable[[int], Awaitable[Any]],
        expect: Callable[[int, Any], bool],
        what: Callable[[int], str],
    ) -> None:
        def check(n: int, result: Any) -> str | None:
            return None if expect(n, result) else f"{what(n)} returned {_brief(result)}"

        reads[workload] = Candidate(f"{name}.{workload}", run=run, check=check)

    def pick_entry(n: int) -> int:
        return entry_ids[n * 7919 % len(entry_ids)]

    add(
        "read_entry",
        lambda n: storage.entry(pick_entry(n)),
        lambda n, r: r is not None and r.entry.id == pick_entry(n),
        lambda n: f"entry({pick_entry(n)})",
    )
    add(
        "scan_entries_100",
        lambda n: storage.scan_entries(ROOT, limit=100),
        lambda n, r: [item.entry.id for item in r.items] == page,
        lambda n: "scan_entries(root, limit=100)",
    )
    add(
        "scan_tasks_filtered",
        lambda n: storage.scan_tasks(
            kind=FILTERED_KIND, status="pending", background=True, limit=50
        ),
        lambda n, r: (
            len(r.items) == matches
            and all(
                t.kind == FILTERED_KIND and t.status == "pending" and t.background for t in r.items
            )
        ),
        lambda n: f"scan_tasks(filtered, pending, background, limit=50) (want {matches})",
    )

    def address(n: int) -> DocAddress:
        return DocAddress(FAMILY_KIND, ScopeRef("session"), f"key-{n * 7919 % len(family)}")

    add(
        "find_document",
        lambda n: storage.find_document(address(n)),
        lambda n, r: r is not None and r.id == family[n * 7919 % len(family)],
        lambda n: f"find_document({address(n)})",
    )
    seqs = store.documents.step_seqs

    def document_read(
        workload: str, document_id: int, at: int | None, value: JsonObject, deltas: int
    ) -> None:
        add(
            workload,
            lambda n: storage.document(document_id, at),
            lambda n, r: r is not None and r.value == value and r.deltas_since_base == deltas,
            lambda n: f"document({document_id}, at={at}) (want {deltas} deltas)",
        )

    for length, document_id in store.documents.tails.items():
        current, past = tail_value(length), tail_value(length // 2)
        document_read(f"doc_tail_{length}_current", document_id, None, current, length)
        at = seqs[length // 2]
        document_read(f"doc_tail_{length}_historical", document_id, at, past, length // 2)
    history = store.documents.history
    ancient, recent = HISTORY_HALF // 2, HISTORY_BASE_STEP + HISTORY_HALF // 2
    old, new = history_value(ancient), history_value(recent)
    document_read("doc_history_ancient", history, seqs[ancient], old, ancient)
    document_read("doc_history_recent", history, seqs[recent], new, HISTORY_HALF // 2)
    add(
        "fork_scan_100",
        lambda n: storage.scan_entries(chain.tip, limit=100),
        lambda n, r: [item.entry.id for item in r.items] == fork_page,
        lambda n: f"scan_entries({chain.tip}, limit=100) at fork depth 8",
    )
    add(
        "fork_head_lookup",
        lambda n: storage.find_latest_head_marker(chain.tip),
        lambda n, r: r is not None and r.entry.id == chain.first_entry,
        lambda n: f"find_latest_head_marker({chain.tip}) (want entry {chain.first_entry})",
    )
    return reads
