"""Lookups and scans of a JSONL store, answered from its index (R17, R71, R128).

Each function takes the store's ``JsonlIndex`` and answers one Storage read the
way ``MemoryStorage`` does. Filters run on the index's columns; only the
records a page returns are read from ``main.jsonl``, in as few positioned reads
as their offsets allow (``jsonl_reader.Reader.records``). Every scan starts by
bisection after its cursor, and an entry scan takes at most ``limit + 1`` IDs
from each member of the fork chain instead of building the whole visible
history.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Callable, Sequence
from typing import TypeVar

from pi_durable_tui.storage._backend_base import TaskFilters
from pi_durable_tui.storage._scans import (
    check_limit,
    check_order,
    make_cursor,
    no_history,
    read_cursor,
    status_filter,
    unknown_conversation,
    visible_chain,
)
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.jsonl._documents import scope_key
from pi_durable_tui.storage.jsonl._index import JsonlIndex
from pi_durable_tui.storage.protocol import ScanOrder
from pi_durable_tui.storage.records import (
    ConversationRecord,
    DocAddress,
    DocumentRead,
    DocumentRecord,
    EntryRecord,
    Page,
    ScopeRef,
    StoredEntry,
    SubmissionRecord,
    TaskRecord,
)

T = TypeVar("T")


def page(
    scan: str,
    ids: Sequence[int],
    order: ScanOrder | None,
    cursor: JsonObject | None,
    limit: int,
    match: Callable[[int], bool],
    load: Callable[[list[int]], list[T]],
) -> Page[T]:
    """Return one page of an ascending ID sequence, in either order, after the cursor.

    Args:
        scan: The scan's name, carried by its cursors.
        ids: Sorted IDs of every candidate.
        order: The order asked for (``None``: the cursor's, or ascending).
        cursor: The caller's cursor, or ``None``.
        limit: The page size.
        match: Whether the candidate at a position passes the filters.
        load: Returns the items at the given positions.
    """
    check_limit(limit)
    check_order(order)
    after, order = read_cursor(cursor, scan, order, "asc")
    if order == "asc":
        candidates = range(0 if after is None else bisect.bisect_right(ids, after), len(ids))
    else:
        end = len(ids) if after is None else bisect.bisect_left(ids, after)
        candidates = range(end - 1, -1, -1)
    positions: list[int] = []
    more = False
    for position in candidates:
        if not match(position):
            continue
        if len(positions) == limit:
            more = True
            break
        positions.append(position)
    items = load(positions)
    return Page(items, make_cursor(scan, ids[positions[-1]], order) if more else None)


def _codes(values: set[str] | None, lookup: Callable[[str], int]) -> set[int] | None:
    return None if values is None else {lookup(value) for value in values}


# -- conversations and entries -------------------------------------------------------


def scan_conversations(
    index: JsonlIndex,
    owner_conversation_id: int | None,
    owner_task_id: int | None,
    order: ScanOrder | None,
    limit: int,
    cursor: JsonObject | None,
) -> Page[ConversationRecord]:
    """Scan conversations by ID, optionally by owner."""
    table = index.conversations

    def match(row: int) -> bool:
        owner = table.owner_conversation[row]
        if owner_conversation_id is not None and (not owner or owner != owner_conversation_id):
            return False
        return owner_task_id is None or (bool(owner) and table.owner_task[row] == owner_task_id)

    return page(
        "conversations",
        table.ids,
        order,
        cursor,
        limit,
        match,
        lambda rows: [table.record(row) for row in rows],
    )


Located = tuple[int, int, int]
"""An entry's ``(ID, line offset, line length)``; offset -1: not looked up yet."""


def stored_entries(index: JsonlIndex, located: Sequence[Located]) -> list[StoredEntry]:
    """Read entries from ``main.jsonl``, in the order given."""
    items = []
    for entry_id, at, length in located:
        if at < 0:
            found = index.entries.locate(entry_id)
            assert found is not None
            _, at, length = found
        items.append((entry_id, at, length))
    return [
        StoredEntry(EntryRecord.from_json(record), seq)
        for seq, record in index.read().records("entry", items)
    ]


def need_conversation(index: JsonlIndex, conversation_id: int) -> None:
    """Refuse a read in a conversation that was never committed.

    Raises:
        StorageRejected: ``Unknown conversation <n>``.
    """
    if index.conversations.row(conversation_id) < 0:
        raise unknown_conversation(conversation_id)


def entry(index: JsonlIndex, entry_id: int, conversation_id: int | None) -> StoredEntry | None:
    """Return an entry, or only if visible from ``conversation_id``."""
    if conversation_id is not None:
        need_conversation(index, conversation_id)
    located = index.entries.locate(entry_id)
    if located is None:
        return None
    owner, at, length = located
    if conversation_id is not None:
        for member, cap in visible_chain(conversation_id, index.parent_of):
            if member == owner:
                if cap is not None and entry_id > cap:
                    return None
                break
        else:
            return None
    return stored_entries(index, [(entry_id, at, length)])[0]


def visible_window(
    index: JsonlIndex,
    conversation_id: int,
    heads: bool,
    low: int | None,
    high: int | None,
    order: ScanOrder,
    count: int,
) -> list[Located]:
    """Return up to ``count`` visible entries (or head markers) within bounds, in scan order.

    Raises:
        StorageRejected: ``Unknown conversation <n>``.
    """
    need_conversation(index, conversation_id)
    if count <= 0:
        return []
    found: list[Located] = []
    for member, cap in visible_chain(conversation_id, index.parent_of):
        top = cap if high is None else (high if cap is None else min(cap, high))
        table = index.entries.by_conversation.get(member)
        ids: array[int] | None = index.entries.heads.get(member) if heads else None
        if not heads and table is not None:
            ids = table.ids
        if not ids:
            continue
        start = 0 if low is None else bisect.bisect_left(ids, low)
        stop = len(ids) if top is None else bisect.bisect_right(ids, top)
        if start >= stop:
            continue
        if order == "asc":
            stop = min(stop, start + count)
        else:
            start = max(start, stop - count)
        if heads or table is None:
            found.extend((entry_id, -1, 0) for entry_id in ids[start:stop])
        else:
            found.extend(
                zip(ids[start:stop], table.at[start:stop], table.length[start:stop], strict=True)
            )
    found.sort(reverse=order == "desc")
    return found[:count]


def scan_entries(
    index: JsonlIndex,
    conversation_id: int,
    low: int | None,
    high: int | None,
    order: ScanOrder | None,
    limit: int,
    cursor: JsonObject | None,
) -> Page[StoredEntry]:
    """Return one page of a conversation's visible history."""
    check_limit(limit)
    check_order(order)
    after, order = read_cursor(cursor, "entries", order, "desc")
    if after is not None and order == "asc":
        low = after + 1 if low is None else max(low, after + 1)
    elif after is not None:
        high = after - 1 if high is None else min(high, after - 1)
    found = visible_window(index, conversation_id, False, low, high, order, limit + 1)
    items = stored_entries(index, found[:limit])
    more = len(found) > limit
    return Page(items, make_cursor("entries", found[limit - 1][0], order) if more else None)


def latest_head_marker(
    index: JsonlIndex, conversation_id: int, at_or_before: int | None
) -> StoredEntry | None:
    """Return the newest visible head marker at or before an entry ID."""
    found = visible_window(index, conversation_id, True, None, at_or_before, "desc", 1)
    return stored_entries(index, found)[0] if found else None


# -- tasks and submissions -------------------------------------------------------------


def scan_tasks(
    index: JsonlIndex,
    filters: TaskFilters,
    order: ScanOrder | None,
    limit: int,
    cursor: JsonObject | None,
) -> Page[TaskRecord]:
    """Scan tasks by ID; every given filter must match."""
    conversation_id, kind, status, abort_requested, background = filters
    statuses = status_filter(status)
    table = index.tasks
    kind_code = None if kind is None else table.kinds.lookup(kind)
    status_codes = _codes(statuses, table.statuses.lookup)
    abort = None if abort_requested is None else int(abort_requested)
    back = None if background is None else int(background)

    def match(row: int) -> bool:
        return not (
            (conversation_id is not None and table.conversation[row] != conversation_id)
            or (kind_code is not None and table.kind[row] != kind_code)
            or (status_codes is not None and table.status[row] not in status_codes)
            or (abort is not None and table.abort[row] != abort)
            or (back is not None and table.background[row] != back)
        )

    def load(rows: list[int]) -> list[TaskRecord]:
        items = [(table.ids[row], table.at[row], table.length[row]) for row in rows]
        return [TaskRecord.from_json(record) for _, record in index.read().records("task", items)]

    return page("tasks", table.ids, order, cursor, limit, match, load)


def scan_submissions(
    index: JsonlIndex,
    conversation_id: int | None,
    statuses: set[str] | None,
    order: ScanOrder | None,
    limit: int,
    cursor: JsonObject | None,
) -> Page[SubmissionRecord]:
    """Scan submissions by ID; every given filter must match."""
    table = index.submissions
    status_codes = _codes(statuses, table.statuses.lookup)

    def match(row: int) -> bool:
        if conversation_id is not None and table.conversation[row] != conversation_id:
            return False
        return status_codes is None or table.status[row] in status_codes

    def load(rows: list[int]) -> list[SubmissionRecord]:
        items = [(table.ids[row], table.at[row], table.length[row]) for row in rows]
        records = index.read().records("submission", items)
        return [SubmissionRecord.from_json(record) for _, record in records]

    return page("submissions", table.ids, order, cursor, limit, match, load)


# -- documents ---------------------------------------------------------------------------


def scan_documents(
    index: JsonlIndex,
    scope: ScopeRef,
    at: int | None,
    kind: str | None,
    limit: int,
    cursor: JsonObject | None,
) -> Page[DocumentRecord]:
    """Scan, in ID order, the documents of exactly this scope alive at ``at``."""
    documents = index.documents
    key = scope_key(scope)
    ids: Sequence[int] = []
    if key is not None:
        low, high = documents.by_scope.span(key)
        ids = documents.by_scope.values[low:high]
    kind_code = None if kind is None else documents.kinds.lookup(kind)

    def match(position: int) -> bool:
        row = documents.row(ids[position])
        if kind_code is not None and documents.kind[row] != kind_code:
            return False
        return documents.alive_at(row, at)

    def load(positions: list[int]) -> list[DocumentRecord]:
        return [documents.record(documents.row(ids[position])) for position in positions]

    return page("documents", ids, "asc", cursor, limit, match, load)


def find_document(index: JsonlIndex, address: DocAddress, at: int | None) -> DocumentRecord | None:
    """Return the incarnation at an address alive at ``at``."""
    row = index.documents.find(address, at)
    return None if row < 0 else index.documents.record(row)


def document(index: JsonlIndex, document_id: int, at: int | None) -> DocumentRead | None:
    """Return a document's content at ``at`` (``None``: now) as a fresh copy."""
    documents = index.documents
    row = documents.row(document_id)
    if row < 0:
        return None
    if at is not None and documents.current_only(row):
        raise no_history(documents.record(row))
    if not documents.alive_at(row, at):
        return None
    record = documents.record(row)
    point = index.seq if at is None else at
    if not documents.retired[row] and point >= documents.last_seq[row]:
        value = documents.fresh_value(row)
        return DocumentRead(record, documents.version[row], value, documents.deltas[row])
    content = index.content(document_id, point)
    return DocumentRead(record, content.version, content.value, content.deltas)
