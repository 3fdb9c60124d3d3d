"""The tables of a JSONL index: conversations, entries, tasks and submissions, as columns.

Each table keeps, per record, only what lookups, scans and batch checks need,
in ``_columns`` form; a record itself stays in ``main.jsonl`` and is read
back by its line's byte offset and length when asked for (``_reader``):

- ``Conversations``: the whole record (parent fork point and owner), since it
  is a handful of integers.
- ``Entries``: per conversation the sorted entry IDs with their line locations
  and the sorted IDs of its head markers, plus runs of IDs saying which
  conversation holds an entry ID. A page of a scan is a bisection and a slice;
  an entry's seq is read from its line (every line carries its commit's seq).
- ``Tasks`` and ``Submissions``: the latest record's line location and the
  fields scans filter on (conversation, kind, status, flags; type and a hash of
  the request ID for submissions, which ``requests`` indexes).

Strings that scans filter on (kinds, statuses, types) are kept as ``Codes``.
"""

from __future__ import annotations

import bisect
import zlib
from array import array
from collections.abc import Mapping
from typing import Any

from pi_durable_tui.storage.jsonl._columns import (
    Codes,
    HashIndex,
    Sections,
    Table,
    new_column,
)
from pi_durable_tui.storage.records import (
    ConversationOwner,
    ConversationRecord,
    ForkPoint,
    SubmissionRecord,
    TaskRecord,
)


def flag(value: object) -> int:
    """Return a boolean field as stored: 1 (true), 0 (false), 2 (anything else).

    ``MemoryStorage`` filters with ``!=``, so ``1`` passes a ``True`` filter and a
    value that is neither passes no boolean filter; 2 keeps that.
    """
    if value == 1:
        return 1
    return 0 if value == 0 else 2


class Conversations(Table):
    """Every conversation; ``0`` stands for "none" (no record has ID 0)."""

    COLUMNS = (
        ("parent", "q"),
        ("parent_at", "q"),
        ("owner_conversation", "q"),
        ("owner_task", "q"),
    )
    parent: array[int]
    parent_at: array[int]
    owner_conversation: array[int]
    owner_task: array[int]

    def add(self, record: ConversationRecord) -> None:
        """Store a new conversation."""
        row = self.insert(record.id)
        if record.parent is not None:
            self.parent[row] = record.parent.conversation_id
            self.parent_at[row] = record.parent.at
        if record.owner is not None:
            self.owner_conversation[row] = record.owner.conversation_id
            self.owner_task[row] = record.owner.task_id

    def record(self, row: int) -> ConversationRecord:
        """Return the record of a row."""
        parent = self.parent[row]
        owner = self.owner_conversation[row]
        return ConversationRecord(
            self.ids[row],
            ForkPoint(parent, self.parent_at[row]) if parent else None,
            ConversationOwner(owner, self.owner_task[row]) if owner else None,
        )

    def parent_of(self, conversation_id: int) -> ForkPoint | None:
        """Return a conversation's fork point."""
        row = self.row(conversation_id)
        if row < 0 or not self.parent[row]:
            return None
        return ForkPoint(self.parent[row], self.parent_at[row])


class ConversationEntries(Table):
    """The entries of one conversation: sorted IDs and where their lines are."""

    COLUMNS = (("at", "q"), ("length", "q"))
    at: array[int]
    length: array[int]


class Entries:
    """Every entry, by conversation, and which conversation holds an entry ID.

    The second is kept as *runs*: ``run_starts[i]`` is the lowest entry ID of a
    stretch of IDs whose entries all belong to ``run_conversations[i]``, up to
    the next run's start. Entries arrive mostly in ID order and in long
    stretches per conversation, so a store of 100,000 entries in a handful of
    conversations needs a handful of runs, not a column per entry.
    """

    def __init__(self) -> None:
        self.by_conversation: dict[int, ConversationEntries] = {}
        self.heads: dict[int, array[int]] = {}
        self.run_starts: array[int] = new_column()
        self.run_conversations: array[int] = new_column()
        self.newest = 0
        """The highest entry ID."""

    def add(self, entry_id: int, conversation_id: int, head: bool, at: int, length: int) -> None:
        """Store a new entry whose line is ``length`` bytes at offset ``at`` of ``main.jsonl``."""
        owners = self.run_conversations
        if entry_id > self.newest and owners and owners[-1] == conversation_id:
            self.newest = entry_id  # the common case: the newest run goes on
        else:
            self._own(entry_id, conversation_id)
        table = self.by_conversation.get(conversation_id)
        if table is None:
            table = self.by_conversation[conversation_id] = ConversationEntries()
        ids = table.ids
        if ids and entry_id > ids[-1]:
            ids.append(entry_id)
            table.at.append(at)
            table.length.append(length)
        else:
            table.set_row(entry_id, (at, length))
        if head:
            heads = self.heads.get(conversation_id)
            if heads is None:
                heads = self.heads[conversation_id] = new_column()
            if not heads or entry_id > heads[-1]:
                heads.append(entry_id)
            elif heads[bisect.bisect_left(heads, entry_id)] != entry_id:
                heads.insert(bisect.bisect_left(heads, entry_id), entry_id)

    def _own(self, entry_id: int, conversation_id: int) -> None:
        # REMINDER: every entry whose ID falls in a run belongs to the run's
        # conversation; ``owner`` trusts it (a run may also cover IDs of no entry).
        starts, owners = self.run_starts, self.run_conversations
        run = bisect.bisect_right(starts, entry_id) - 1
        if entry_id > self.newest:
            self.newest = entry_id
            if run < 0 or owners[run] != conversation_id:
                starts.append(entry_id)
                owners.append(conversation_id)
            return
        if run >= 0 and owners[run] == conversation_id:
            return
        # A new ID below the newest, inside another conversation's run (or below every
        # run): give this ID a run of its own, and the IDs after it back to their owner.
        previous = owners[run] if run >= 0 else None
        if run >= 0 and starts[run] == entry_id:
            owners[run] = conversation_id
        else:
            run += 1
            starts.insert(run, entry_id)
            owners.insert(run, conversation_id)
        following = run + 1
        if previous is not None and (following == len(starts) or starts[following] != entry_id + 1):
            starts.insert(following, entry_id + 1)
            owners.insert(following, previous)

    def owner(self, entry_id: int) -> int | None:
        """Return the conversation holding an entry, or ``None`` when there is no such entry."""
        run = bisect.bisect_right(self.run_starts, entry_id) - 1
        if run < 0:
            return None
        conversation_id = self.run_conversations[run]
        table = self.by_conversation.get(conversation_id)
        return conversation_id if table is not None and table.row(entry_id) >= 0 else None

    def locate(self, entry_id: int) -> tuple[int, int, int] | None:
        """Return ``(conversation_id, at, length)`` of an entry."""
        conversation_id = self.owner(entry_id)
        if conversation_id is None:
            return None
        table = self.by_conversation[conversation_id]
        position = table.row(entry_id)
        return conversation_id, table.at[position], table.length[position]

    def sections(self) -> Sections:
        """Return every column; per-conversation columns are concatenated in ID order."""
        out: Sections = {
            "entries.run_starts": self.run_starts,
            "entries.run_conversations": self.run_conversations,
            "entries.newest": array("q", [self.newest]),
        }
        _grouped(
            out, "entries.by", {c: [t.ids, t.at, t.length] for c, t in self.by_conversation.items()}
        )
        _grouped(out, "entries.heads", {c: [ids] for c, ids in self.heads.items()})
        return out

    def load(self, sections: Mapping[str, array[int]]) -> None:
        """Take the columns saved by ``sections``.

        Raises:
            ValueError: A column is missing or inconsistent.
        """
        starts = sections.get("entries.run_starts")
        owners = sections.get("entries.run_conversations")
        newest = sections.get("entries.newest")
        if starts is None or owners is None or newest is None or len(starts) != len(owners):
            raise ValueError("checkpoint columns entries.runs are missing")
        self.run_starts, self.run_conversations, self.newest = starts, owners, newest[0]
        self.by_conversation = {}
        for conversation_id, (ids, at, length) in _ungrouped(sections, "entries.by", 3):
            table = self.by_conversation[conversation_id] = ConversationEntries()
            table.ids, table.at, table.length = ids, at, length
            table.bind()
        self.heads = {c: ids for c, (ids,) in _ungrouped(sections, "entries.heads", 1)}


def _grouped(out: Sections, prefix: str, groups: dict[int, list[array[int]]]) -> None:
    keys = sorted(groups)
    out[f"{prefix}.keys"] = array("q", keys)
    out[f"{prefix}.counts"] = array("q", (len(groups[k][0]) for k in keys))
    width = len(next(iter(groups.values()))) if groups else 0
    for column in range(width):
        joined = new_column()
        for key in keys:
            joined.extend(groups[key][column])
        out[f"{prefix}.{column}"] = joined


def _ungrouped(
    sections: Mapping[str, array[int]], prefix: str, width: int
) -> list[tuple[int, list[array[int]]]]:
    keys = sections.get(f"{prefix}.keys")
    counts = sections.get(f"{prefix}.counts")
    if keys is None or counts is None or len(keys) != len(counts):
        raise ValueError(f"checkpoint columns {prefix} are missing")
    columns = [sections.get(f"{prefix}.{column}") for column in range(width)] if keys else []
    total = sum(counts)
    if any(column is None or len(column) != total for column in columns):
        raise ValueError(f"checkpoint columns {prefix} are inconsistent")
    groups: list[tuple[int, list[array[int]]]] = []
    start = 0
    for key, count in zip(keys, counts, strict=True):
        end = start + count
        groups.append((key, [column[start:end] for column in columns if column is not None]))
        start = end
    return groups


class Tasks(Table):
    """Every task: its latest line's location and the fields scans filter on."""

    COLUMNS = (
        ("conversation", "q"),
        ("kind", "i"),
        ("status", "i"),
        ("abort", "b"),
        ("background", "b"),
        ("at", "q"),
        ("length", "q"),
    )
    conversation: array[int]
    kind: array[int]
    status: array[int]
    abort: array[int]
    background: array[int]
    at: array[int]
    length: array[int]

    def __init__(self) -> None:
        super().__init__()
        self.kinds = Codes()
        self.statuses = Codes()

    def put(self, record: TaskRecord, at: int, length: int) -> None:
        """Create or replace a task whose line is ``length`` bytes at ``at``."""
        values = (
            record.conversation_id,
            self.kinds.code(record.kind),
            self.statuses.code(record.status),
            flag(record.abort_requested),
            flag(record.background),
            at,
            length,
        )
        self.set_row(record.id, values)

    def codes(self) -> dict[str, list[Any]]:
        """Return the values behind every code, for a checkpoint."""
        return {"task_kinds": self.kinds.values, "task_statuses": self.statuses.values}

    def load_codes(self, codes: Mapping[str, Any]) -> None:
        """Take the values saved by ``codes``."""
        self.kinds = Codes(list(codes["task_kinds"]))
        self.statuses = Codes(list(codes["task_statuses"]))


def request_hash(conversation_id: int, request_id: str) -> int:
    """Return the hash under which ``requests`` indexes a request ID (never 0).

    Like ``stable_hash``, with the conversation folded into the CRC's start value:
    every commit that writes a submission pays for it.
    """
    data = request_id.encode("utf-8", "surrogatepass")
    value = zlib.crc32(data, conversation_id & 0xFFFFFFFF) << 32 | zlib.adler32(data)
    return (value - (1 << 64) if value >= 1 << 63 else value) or 1


class Submissions(Table):
    """Every submission: its latest line's location and the fields scans filter on.

    ``request`` holds the hash of the submission's request ID (0: none), and
    ``requests`` maps that hash to the submissions holding it, so a lookup by
    request ID reads only the candidates' records.
    """

    COLUMNS = (
        ("conversation", "q"),
        ("type", "i"),
        ("status", "i"),
        ("request", "q"),
        ("at", "q"),
        ("length", "q"),
    )
    conversation: array[int]
    type: array[int]
    status: array[int]
    request: array[int]
    at: array[int]
    length: array[int]

    def __init__(self) -> None:
        super().__init__()
        self.types = Codes()
        self.statuses = Codes()
        self.requests = HashIndex()

    def put(self, record: SubmissionRecord, at: int, length: int) -> None:
        """Create or replace a submission whose line is ``length`` bytes at ``at``."""
        submission_id = record.id
        row = self.row(submission_id)
        hashed = 0
        if record.request_id is not None:
            hashed = request_hash(record.conversation_id, record.request_id)
        old = self.request[row] if row >= 0 else 0
        if old != hashed:
            # A replacement may drop or change its request ID: the old key stops
            # finding this submission.
            if old:
                self.requests.remove(old, submission_id)
            if hashed:
                self.requests.add(hashed, submission_id)
        values = (
            record.conversation_id,
            self.types.code(record.type),
            self.statuses.code(record.status),
            hashed,
            at,
            length,
        )
        self.set_row(record.id, values)

    def sections(self, prefix: str) -> Sections:
        """Return every column and the request index."""
        return {**super().sections(prefix), **self.requests.sections(f"{prefix}.requests")}

    def load(self, prefix: str, sections: Mapping[str, array[int]]) -> None:
        """Take the columns saved by ``sections``."""
        super().load(prefix, sections)
        self.requests.load(f"{prefix}.requests", sections)

    def codes(self) -> dict[str, list[Any]]:
        """Return the values behind every code, for a checkpoint."""
        return {"submission_types": self.types.values, "submission_statuses": self.statuses.values}

    def load_codes(self, codes: Mapping[str, Any]) -> None:
        """Take the values saved by ``codes``."""
        self.types = Codes(list(codes["submission_types"]))
        self.statuses = Codes(list(codes["submission_statuses"]))
