"""Seeding for the storage benchmark: the stores its workloads run against.

Everything goes through the public ``Storage`` protocol (``commit`` and
``mint_id``), in the shapes of the reference benchmark (durable-behavior.md
section 7):

- ``seed_bulk``: entries in the root conversation in batches of 100 (the first
  one a self-head), with tasks and session family documents spread evenly over
  the batches. Tasks cycle ``pending`` / ``running`` / ``terminal``; every 4th is
  of kind ``benchmark.filtered`` (the others ``benchmark.other``), every 5th is
  background and every 7th abort-marked. Documents are keyed ``key-<i>``.
- ``seed_documents``: four rewindable conversation documents with delta tails
  of 0, 16, 128 and 1,024 after their base, and one history document with 128
  deltas, a new base, then 128 more deltas. Each step commits one delta (a
  ``set`` and a string ``append``) to every document still growing.
- ``seed_fork_chain``: a conversation with 32 entries (the first a self-head)
  forked 8 times at its last entry, each fork adding 32 entries.

Each returns what the read workloads need to check their answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pi_durable_tui.storage.json_ops import JsonObject, Op
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.records import (
    ROOT_CONVERSATION_ID,
    ConversationRecord,
    ConversationScope,
    EntryRecord,
    ForkPoint,
    SessionScope,
    SubmissionRecord,
    TaskRecord,
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

ROOT = ROOT_CONVERSATION_ID
BATCH = 100
"""Entries per seeding commit."""
TAIL_LENGTHS = (0, 16, 128, 1024)
HISTORY_HALF = 128
"""Deltas before and after the history document's second base."""
FORK_DEPTH = 8
FORK_ENTRIES = 32

FILTERED_KIND = "benchmark.filtered"
OTHER_KIND = "benchmark.other"
FAMILY_KIND = "benchmark.family"
TAIL_KIND = "benchmark.tail"
MIXED_KIND = "benchmark.mixed"
NOTE_KIND = "bench.note"
TASK_STATUSES = ("pending", "running", "terminal")

_FILLER = (
    "The agent read the failing test, ran it again with more output, and wrote down "
    "what it saw before trying a fix."
)
REWINDABLE = ConversationScope(ROOT, "rewindable", "asOf")


def note_data(n: int) -> JsonObject:
    """Return the data of a seeded entry: a number and a sentence."""
    return {"n": n, "text": _FILLER}


def note(entry_id: int, conversation_id: int, n: int, *, head: int | None = None) -> EntryRecord:
    """Return a transcript entry whose JSON text is about 200 bytes.

    Args:
        entry_id: The new entry's ID.
        conversation_id: Its conversation.
        n: A number stored in its data.
        head: Makes it a head marker naming this entry ID.

    Returns:
        The entry record.
    """
    return EntryRecord(entry_id, conversation_id, NOTE_KIND, data=note_data(n), head=head)


def task(task_id: int, index: int, kind: str | None = None) -> TaskRecord:
    """Return the ``index``-th seeded task (kinds, statuses and flags cycle by index).

    Args:
        task_id: The new task's ID.
        index: Its position among seeded tasks.
        kind: Overrides the cycling kind.

    Returns:
        The task record.
    """
    status = TASK_STATUSES[index % 3]
    state: JsonObject
    if status == "terminal":
        state = {"status": status, "outcome": {"status": "completed", "result": {"n": index}}}
    else:
        state = {"status": status, "checkpoint": {"phase": "work", "n": index}}
    return TaskRecord(
        id=task_id,
        conversation_id=ROOT,
        kind=kind or (FILTERED_KIND if index % 4 == 0 else OTHER_KIND),
        version=1,
        input={"n": index},
        state=state,
        background=index % 5 == 0,
        abort_requested=index % 7 == 0,
    )


def is_filtered_pending_background(index: int) -> bool:
    """Whether the ``index``-th seeded task matches the filtered task scan."""
    return index % 4 == 0 and index % 3 == 0 and index % 5 == 0


def family_document(document_id: int, index: int) -> CreateDocument:
    """Return the creation of the session family document ``key-<index>``."""
    key = f"key-{index}"
    return CreateDocument(
        document_id, FAMILY_KIND, SessionScope(), 1, {"key": key, "n": index}, key=key
    )


def queued_input(submission_id: int, request_id: str) -> SubmissionRecord:
    """Return a queued input submission to the root conversation."""
    return SubmissionRecord(submission_id, ROOT, "input", "queued", request_id=request_id)


def step_ops(step: int) -> list[Op]:
    """Return the delta a document gets at a seeding step: a ``set`` and an ``append``."""
    return [
        {"op": "set", "path": ["n"], "value": step},
        {"op": "append", "path": ["log"], "text": f"step {step}\n"},
    ]


async def seed_root(storage: Storage) -> None:
    """Commit the root conversation."""
    await storage.commit([PutConversation(ConversationRecord(ROOT))])


@dataclass(slots=True)
class Bulk:
    """What ``seed_bulk`` stored."""

    entry_ids: list[int] = field(default_factory=list)
    """Root entries in ID order."""
    family: list[int] = field(default_factory=list)
    """Document IDs of ``key-0``, ``key-1``, ..."""
    task_count: int = 0
    filtered_matches: int = 0
    """Tasks matching kind ``benchmark.filtered`` + ``pending`` + background."""


async def seed_bulk(storage: Storage, entries: int, tasks: int, documents: int) -> Bulk:
    """Seed root entries in batches of 100 with tasks and documents spread over them.

    Args:
        storage: A store holding the root conversation.
        entries: Entries to add.
        tasks: Tasks to add.
        documents: Session family documents to add.

    Returns:
        What was stored.
    """
    bulk = Bulk()
    batches = max(1, -(-entries // BATCH))
    for number in range(batches):
        writes: list[Write] = []
        for n in range(number * BATCH, min(entries, (number + 1) * BATCH)):
            entry_id = storage.mint_id()
            writes.append(PutEntry(note(entry_id, ROOT, n, head=entry_id if n == 0 else None)))
            bulk.entry_ids.append(entry_id)
        for index in range(tasks * number // batches, tasks * (number + 1) // batches):
            writes.append(PutTask(task(storage.mint_id(), index)))
            bulk.task_count += 1
            bulk.filtered_matches += is_filtered_pending_background(index)
        for index in range(documents * number // batches, documents * (number + 1) // batches):
            document_id = storage.mint_id()
            writes.append(family_document(document_id, index))
            bulk.family.append(document_id)
        await storage.commit(writes)
    return bulk


@dataclass(slots=True)
class Documents:
    """What ``seed_documents`` stored."""

    tails: dict[int, int] = field(default_factory=dict)
    """Document ID by delta-tail length."""
    history: int = 0
    """The history document's ID."""
    step_seqs: list[int] = field(default_factory=list)
    """The seq of each step's commit; index 0 is the creating commit."""


def tail_value(step: int) -> JsonObject:
    """Return a seeded document's value after ``step`` deltas from its creation."""
    return {"n": step, "log": "".join(f"step {k}\n" for k in range(1, step + 1))}


HISTORY_BASE_STEP = HISTORY_HALF + 1
"""The step at which the history document gets its second base."""
HISTORY_STEPS = 2 * HISTORY_HALF + 1


def history_value(step: int) -> JsonObject:
    """Return the history document's value after ``step`` seeding steps."""
    if step < HISTORY_BASE_STEP:
        return tail_value(step)
    log = "".join(f"step {k}\n" for k in range(HISTORY_BASE_STEP + 1, step + 1))
    return {"n": step, "log": log, "rebased": True}


async def seed_documents(storage: Storage, tails: tuple[int, ...] = TAIL_LENGTHS) -> Documents:
    """Seed the delta-tail documents and the history document, one step per commit.

    Args:
        storage: A store holding the root conversation.
        tails: Delta-tail lengths, one document each.

    Returns:
        Their IDs and the seq of every step.
    """
    seeded = Documents()
    creates: list[Write] = []
    for length in tails:
        seeded.tails[length] = storage.mint_id()
        creates.append(
            CreateDocument(
                seeded.tails[length], TAIL_KIND, REWINDABLE, 1, tail_value(0), key=f"tail-{length}"
            )
        )
    seeded.history = storage.mint_id()
    creates.append(
        CreateDocument(seeded.history, TAIL_KIND, REWINDABLE, 1, tail_value(0), key="history")
    )
    seeded.step_seqs.append(await storage.commit(creates))
    for step in range(1, max(*tails, HISTORY_STEPS) + 1):
        writes: list[Write] = [
            ChangeDocument(document_id, 1, ops=step_ops(step))
            for length, document_id in seeded.tails.items()
            if step <= length
        ]
        if step == HISTORY_BASE_STEP:
            writes.append(ChangeDocument(seeded.history, 1, base=history_value(step)))
        elif step <= HISTORY_STEPS:
            writes.append(ChangeDocument(seeded.history, 1, ops=step_ops(step)))
        seeded.step_seqs.append(await storage.commit(writes))
    return seeded


@dataclass(slots=True)
class ForkChain:
    """What ``seed_fork_chain`` stored."""

    tip: int = 0
    """The deepest fork."""
    first_entry: int = 0
    """The chain root's first entry, its only head marker."""
    entry_ids: list[int] = field(default_factory=list)
    """Every chain entry in ID order (all visible from the tip)."""


async def seed_fork_chain(
    storage: Storage, depth: int = FORK_DEPTH, per_fork: int = FORK_ENTRIES
) -> ForkChain:
    """Seed a conversation forked ``depth`` times at its last entry, one commit per level.

    Args:
        storage: Any store.
        depth: Forks below the chain root.
        per_fork: Entries in the root and in each fork.

    Returns:
        The tip, the head marker and the entries.
    """
    chain = ForkChain()
    parent: ForkPoint | None = None
    for level in range(depth + 1):
        conversation = storage.mint_id()
        writes: list[Write] = [PutConversation(ConversationRecord(conversation, parent))]
        for n in range(per_fork):
            entry_id = storage.mint_id()
            head = entry_id if level == 0 and n == 0 else None
            writes.append(PutEntry(note(entry_id, conversation, n, head=head)))
            chain.entry_ids.append(entry_id)
        await storage.commit(writes)
        parent = ForkPoint(conversation, chain.entry_ids[-1])
        chain.tip = conversation
    chain.first_entry = chain.entry_ids[0]
    return chain


@dataclass(slots=True)
class TimingStore:
    """A store seeded for the read and write workloads, and what it holds."""

    storage: Storage
    bulk: Bulk
    documents: Documents
    chain: ForkChain
    mixed_document: int
    """A session document the mixed write batch changes."""


async def seed_timing_store(
    storage: Storage, entries: int, tasks: int, documents: int, *, for_reads: bool = True
) -> TimingStore:
    """Seed the store the read and write workloads run against.

    Args:
        storage: An empty store.
        entries: Root entries.
        tasks: Tasks.
        documents: Session family documents.
        for_reads: Also seed the delta-tail documents and the fork chain (about
            1,040 more commits, which only the read workloads need).

    Returns:
        The store and what it holds.
    """
    await seed_root(storage)
    bulk = await seed_bulk(storage, entries, tasks, documents)
    seeded_documents = await seed_documents(storage) if for_reads else Documents()
    chain = await seed_fork_chain(storage) if for_reads else ForkChain()
    mixed = storage.mint_id()
    await storage.commit([CreateDocument(mixed, MIXED_KIND, SessionScope(), 1, {"n": 0})])
    return TimingStore(storage, bulk, seeded_documents, chain, mixed)


async def seed_scale_store(storage: Storage, entries: int) -> Bulk:
    """Seed a store to a scale: root entries with tasks and documents at a fifth each.

    These are the proportions of the reference's memory scales (1k: 1,000
    entries, 200 tasks, 200 documents; 10k: 10,000 / 2,000 / 2,000).

    Args:
        storage: An empty store.
        entries: Root entries.

    Returns:
        What was stored.
    """
    await seed_root(storage)
    return await seed_bulk(storage, entries, entries // 5, entries // 5)


def mixed_batch(storage: Storage, mixed_document: int, n: int) -> list[Write]:
    """Return a mixed batch: an entry, a new task, a new submission and a document delta.

    Args:
        storage: The store whose IDs are minted.
        mixed_document: The live session document to change.
        n: A counter, unique per store, for the request ID and values.

    Returns:
        The batch.
    """
    return [
        PutEntry(note(storage.mint_id(), ROOT, n)),
        PutTask(task(storage.mint_id(), n, MIXED_KIND)),
        PutSubmission(queued_input(storage.mint_id(), f"mixed-{n}")),
        ChangeDocument(mixed_document, 1, ops=[{"op": "set", "path": ["n"], "value": n}]),
    ]
