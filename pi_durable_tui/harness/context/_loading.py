"""Reading a conversation's context from storage, and the cache that spares reads (R71, R127).

- ``load_context``: the active range read through a ``ContextReader`` (two storage
  reads), never the whole history, and with a ``RangeCache`` only the entries
  newer than the last read, or none when the cached range is current;
- ``RangeCache``: the newest range read per conversation and its derivation,
  grown by later reads and, when observed, by every entry this process's commits
  store (issue 14).

The derivation itself is ``_context``'s.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from pi_durable_tui.harness.context._context import (
    EMPTY_CONTEXT,
    ContextView,
    DerivedRange,
    EntryNotVisible,
    active_range,
    derive_range,
    extend_range,
)
from pi_durable_tui.storage import EntryRecord, JsonObject, Page, StoredEntry
from pi_durable_tui.storage.protocol import DEFAULT_PAGE, EntryOrder

SCAN_PAGE_SIZE = 256


class ContextReader(Protocol):
    """The two storage reads ``load_context`` needs (a ``Storage`` provides both)."""

    async def find_latest_head_marker(
        self, conversation_id: int, at_or_before: int | None = None
    ) -> StoredEntry | None:
        """Return the newest visible entry carrying ``head`` with ID at most ``at_or_before``."""
        ...

    async def scan_entries(
        self,
        conversation_id: int,
        *,
        min_entry_id: int | None = None,
        max_entry_id: int | None = None,
        order: EntryOrder = "desc",
        limit: int = DEFAULT_PAGE,
        cursor: JsonObject | None = None,
    ) -> Page[StoredEntry]:
        """Scan the visible history of a conversation between inclusive bounds."""
        ...


class RangeCache:
    """The newest visible range read of each conversation and its derivation (R127).

    Entries are immutable, so a later read of the same active range (same head
    marker) needs only the entries after the cached tail, and its context is the
    cached derivation extended by them (``extend_range``): a turn of a long
    conversation reads and orders a few new messages instead of the whole range.

    An ``observed`` cache is also told every entry the process's commits store
    (``observe``), and grows its ranges with them: a range read while nothing was
    committed, and grown by every commit since, is ``current`` (no newer visible
    entry exists), so reading it again reads nothing (issue 14). Observable only
    as speed.

    Args:
        kept: How many conversations to remember (the least recently read go first).
        observed: Whether every stored commit's entries reach ``observe``.
    """

    def __init__(self, kept: int = 64, *, observed: bool = False) -> None:
        self._kept = kept
        self._observed = observed
        self._commits = 0
        """Commits observed so far: a read during which it moved is not current."""
        self._ranges: OrderedDict[int, CachedRange] = OrderedDict()

    def mark(self) -> int | None:
        """A token to pass to ``put`` when a read begins; ``None`` when not observed."""
        return self._commits if self._observed else None

    def observe(self, entries: Sequence[EntryRecord]) -> None:
        """Grow the current ranges by the entries one stored commit appended.

        # REMINDER: a range is current only because this process is the store's one
        # writer (the single-writer lock): every entry of the conversation since the
        # range was read passes through here, in commit order. A fork's parent
        # entries are older than the fork, so a conversation's new visible entries
        # are its own. tests/harness/test_committed_reads.py compares what memory
        # served with a reopened store.
        """
        self._commits += 1
        try:
            self._grow(entries)
        except BaseException:
            # A commit this cache could not take in breaks what ``current`` rests on,
            # and its listener is dropped after this: trust no range from now on.
            self._observed = False
            self._ranges.clear()
            raise

    def _grow(self, entries: Sequence[EntryRecord]) -> None:
        added: dict[int, list[EntryRecord]] = {}
        for entry in entries:
            cached = self._ranges.get(entry.conversation_id)
            # REMINDER: a backend can hold a commit a loop iteration before the session
            # publishes it (SQLite), so a read may have taken its entries in already:
            # those at or below the tail are in the range (entry IDs only grow).
            if cached is not None and entry.id > cached.tail:
                added.setdefault(entry.conversation_id, []).append(entry)
        for conversation_id, newer in added.items():
            cached = self._ranges[conversation_id]
            if any(entry.head is not None for entry in newer):
                del self._ranges[conversation_id]  # a new range: read it whole next time
                continue
            if not cached.current:
                continue  # entries may be missing before these: the next read grows it
            visible = [*cached.visible, *newer]
            derived = extend_range(cached.derived, newer) or derive_range(active_range(visible))
            self._ranges[conversation_id] = CachedRange(
                cached.start, newer[-1].id, visible, derived, current=True
            )

    def latest(self, conversation_id: int) -> CachedRange | None:
        """The cached range of this conversation, whatever its start."""
        found = self._ranges.get(conversation_id)
        if found is not None:
            self._ranges.move_to_end(conversation_id)
        return found

    def put(self, conversation_id: int, cached: CachedRange, mark: int | None = None) -> None:
        """Remember a range read and derived through its tail.

        Args:
            conversation_id: The conversation.
            cached: The range.
            mark: ``mark()`` from before the read: when no commit was observed
                since, the range read is the newest and becomes ``current``.
        """
        if mark is not None and mark == self._commits and not cached.current:
            cached = dataclasses.replace(cached, current=True)
        self._ranges[conversation_id] = cached
        self._ranges.move_to_end(conversation_id)
        while len(self._ranges) > self._kept:
            self._ranges.popitem(last=False)


@dataclass(frozen=True, slots=True)
class CachedRange:
    """One conversation's range read through ``tail`` from ``start``, and its derivation."""

    start: int | None
    tail: int
    visible: list[EntryRecord]
    derived: DerivedRange
    current: bool = False
    """No newer visible entry exists: grown by every commit since it was read."""


async def load_context(
    reader: ContextReader,
    conversation_id: int,
    cutoff: int | None = None,
    cache: RangeCache | None = None,
) -> ContextView:
    """Read the active range of a conversation from storage and derive its context (R71-R76).

    Reads the newest entry (when no cutoff is given), the newest head marker at or
    before it, and the entries from the marker's ``head`` through it, ascending and
    page by page; entries before the range are never read. With a ``cache`` that
    holds the conversation, a later read is one scan of the newer entries, unless
    one of them is a head marker. Fork-aware visibility is the storage's job.

    Args:
        reader: The storage (or anything with its two reads).
        conversation_id: The conversation.
        cutoff: The newest entry to include (``None``: the newest visible entry).
        cache: Remembers ranges and their derivations between reads, so only newer
            entries are scanned and ordered.

    Returns:
        The view; an empty one for a conversation without entries.

    Raises:
        EntryNotVisible: When ``cutoff`` is not visible from the conversation.
    """
    latest = cache.latest(conversation_id) if cache is not None else None
    if latest is not None and (cutoff == latest.tail or (cutoff is None and latest.current)):
        return latest.derived.view  # entries are immutable and later ones have larger IDs
    mark = cache.mark() if cache is not None else None
    if latest is not None and (cutoff is None or cutoff > latest.tail):
        grown = await _grow(reader, latest, conversation_id, cutoff)
        if grown is not None:
            assert cache is not None
            if grown is not latest or cutoff is None:
                cache.put(conversation_id, grown, mark if cutoff is None else None)
            return grown.derived.view
    tail = cutoff
    if tail is None:
        newest = await reader.scan_entries(conversation_id, order="desc", limit=1)
        if not newest.items:
            if cache is not None and mark is not None:  # observed from now on
                cache.put(conversation_id, CachedRange(None, 0, [], derive_range([])), mark)
            return EMPTY_CONTEXT
        # REMINDER: the tail is fixed before the marker is looked up, so an entry or
        # marker committed meanwhile cannot slip into a range computed without it.
        tail = newest.items[0].entry.id
    marker = await reader.find_latest_head_marker(conversation_id, tail)
    start = marker.entry.head if marker is not None else None
    if latest is not None and latest.start == start and tail < latest.tail:
        # An older cutoff in the cached range: derived from it, not cached.
        visible = [entry for entry in latest.visible if entry.id <= tail]
        _check_cutoff(visible, cutoff, conversation_id)
        return derive_range(active_range(visible)).view
    visible = await _scan(reader, conversation_id, start, tail)
    _check_cutoff(visible, cutoff, conversation_id)
    derived = derive_range(active_range(visible))
    if cache is not None and (latest is None or tail > latest.tail):
        # Read through the newest entry (no cutoff): current unless a commit landed.
        current_mark = mark if cutoff is None else None
        cache.put(conversation_id, CachedRange(start, tail, visible, derived), current_mark)
    return derived.view


async def _grow(
    reader: ContextReader, cached: CachedRange, conversation_id: int, cutoff: int | None
) -> CachedRange | None:
    """The cached range grown by the entries after it, when no head marker came (R127).

    Without a new head marker the newest one is still the cached range's, so one
    scan of the newer entries is all the read there is: neither the newest entry
    nor the marker needs looking up.

    Returns:
        The grown range (``cached`` itself when nothing is newer), or ``None`` when
        a newer entry is a head marker and the range must be read anew.

    Raises:
        EntryNotVisible: When ``cutoff`` is not visible from the conversation.
    """
    newer = await _scan(reader, conversation_id, cached.tail + 1, cutoff)
    if any(entry.head is not None for entry in newer):
        return None
    _check_cutoff(newer, cutoff, conversation_id)  # the cutoff is newer than the cached tail
    if not newer:
        return cached
    visible = [*cached.visible, *newer]
    derived = extend_range(cached.derived, newer) or derive_range(active_range(visible))
    return CachedRange(cached.start, newer[-1].id, visible, derived)


async def _scan(
    reader: ContextReader, conversation_id: int, scan_from: int | None, tail: int | None
) -> list[EntryRecord]:
    """The visible entries from ``scan_from`` through ``tail`` (or the newest), ascending."""
    found: list[EntryRecord] = []
    cursor: JsonObject | None = None
    while True:
        page = await reader.scan_entries(
            conversation_id,
            min_entry_id=scan_from,
            max_entry_id=tail,
            order="asc",
            limit=SCAN_PAGE_SIZE,
            cursor=cursor,
        )
        found.extend(stored.entry for stored in page.items)
        if page.cursor is None:
            return found
        cursor = page.cursor


def _check_cutoff(visible: list[EntryRecord], cutoff: int | None, conversation_id: int) -> None:
    if cutoff is not None and (not visible or visible[-1].id != cutoff):
        raise EntryNotVisible(cutoff, conversation_id)
