"""Conformance tests of scans: paging, cursors, limits and filters.

Rules covered (protocol, Scans): every scan pages by ``limit`` and ``cursor``;
every page size yields every item exactly once and in order, ascending and
descending; a page's cursor is ``None`` exactly when nothing is left; cursors
survive a JSON round trip (and a reopen, in ``persistence``); a cursor continues
in the order of the scan that made it when the query omits ``order``, and a
query asking for the other order with it raises ``InvalidCursor`` naming the
cursor; forged, truncated and cross-scan cursors raise ``InvalidCursor``; a
limit that is not a positive integer, or an order that is neither ``asc`` nor
``desc``, raises ``ValueError``. Filters: tasks by conversation, kind, status (one or several),
``abort_requested`` and ``background``; submissions by conversation and status;
conversations by owner conversation and/or owner task; documents by exact scope
at a point and optional kind. Every filter given must match.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from pi_durable_tui.storage._conformance.base import (
    ConformanceBase,
    conversation,
    create,
    entry,
    submission,
    task,
)
from pi_durable_tui.storage.errors import InvalidCursor
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.records import (
    LIVE_TASK_STATUSES,
    ConversationScope,
    Page,
    ScopeRef,
    SessionScope,
    StoredEntry,
    TaskScope,
)
from pi_durable_tui.storage.writes import RetireDocument

Fetch = Callable[[int, "JsonObject | None"], Awaitable[Page[Any]]]
"""One page of a scan with its filters bound: ``fetch(limit, cursor)``."""


def fetcher(scan: Callable[..., Awaitable[Page[Any]]], *args: Any, **filters: Any) -> Fetch:
    """Bind a scan method's arguments, leaving ``limit`` and ``cursor``."""

    def fetch(limit: int, cursor: JsonObject | None) -> Awaitable[Page[Any]]:
        return scan(*args, limit=limit, cursor=cursor, **filters)

    return fetch


def item_id(item: Any) -> int:
    """Return the ID of a scanned item (an entry's own ID for a ``StoredEntry``)."""
    return int(item.entry.id if isinstance(item, StoredEntry) else item.id)


SCANS: dict[str, tuple[Callable[[Storage], Fetch], list[int]]] = {
    "conversations": (lambda s: fetcher(s.scan_conversations), [1, 40, 41, 42, 43]),
    "owned-conversations": (
        lambda s: fetcher(s.scan_conversations, owner_task_id=10),
        [40, 42, 43],
    ),
    "entries-desc": (lambda s: fetcher(s.scan_entries, 1), [8, 7, 6, 5, 4, 3, 2]),
    "entries-asc": (lambda s: fetcher(s.scan_entries, 1, order="asc"), [2, 3, 4, 5, 6, 7, 8]),
    "entries-bounded": (
        lambda s: fetcher(s.scan_entries, 1, min_entry_id=3, max_entry_id=7),
        [7, 6, 5, 4, 3],
    ),
    "conversations-desc": (
        lambda s: fetcher(s.scan_conversations, order="desc"),
        [43, 42, 41, 40, 1],
    ),
    "owned-conversations-desc": (
        lambda s: fetcher(s.scan_conversations, owner_task_id=10, order="desc"),
        [43, 42, 40],
    ),
    "tasks": (lambda s: fetcher(s.scan_tasks), [10, 11, 12, 13, 14]),
    "tasks-asc": (lambda s: fetcher(s.scan_tasks, order="asc"), [10, 11, 12, 13, 14]),
    "tasks-desc": (lambda s: fetcher(s.scan_tasks, order="desc"), [14, 13, 12, 11, 10]),
    "running-tasks": (lambda s: fetcher(s.scan_tasks, status="running"), [11, 13]),
    "running-tasks-desc": (
        lambda s: fetcher(s.scan_tasks, status="running", order="desc"),
        [13, 11],
    ),
    "submissions": (lambda s: fetcher(s.scan_submissions), [20, 21, 22, 23, 24]),
    "submissions-desc": (
        lambda s: fetcher(s.scan_submissions, order="desc"),
        [24, 23, 22, 21, 20],
    ),
    "documents": (
        lambda s: fetcher(s.scan_documents, ScopeRef("session")),
        [30, 31, 32, 33, 34],
    ),
}
"""Each scan of ``populate``'s store and the IDs it yields, in order."""

ORDERED: dict[str, tuple[Callable[..., Fetch], list[int], str]] = {
    "conversations": (
        lambda s, **o: fetcher(s.scan_conversations, **o),
        [1, 40, 41, 42, 43],
        "asc",
    ),
    "entries": (lambda s, **o: fetcher(s.scan_entries, 1, **o), [8, 7, 6, 5, 4, 3, 2], "desc"),
    "tasks": (lambda s, **o: fetcher(s.scan_tasks, **o), [10, 11, 12, 13, 14], "asc"),
    "submissions": (lambda s, **o: fetcher(s.scan_submissions, **o), [20, 21, 22, 23, 24], "asc"),
}
"""The scans that take ``order``: how to bind one (with or without ``order``), the IDs
``populate``'s store yields in its default order, and that order."""

CROSS = {
    "conversations": "tasks",
    "entries-desc": "submissions",
    "tasks": "documents",
    "submissions": "conversations",
    "documents": "entries-asc",
}
"""For each scan family, a scan of another family whose cursor it must refuse."""


async def populate(storage: Storage) -> None:
    """Store a few of every kind of record for the paging tests (see ``SCANS``)."""
    await storage.commit(
        [
            conversation(1),
            *(entry(i, 1) for i in range(2, 9)),
            *(task(i, 1, "running" if i % 2 else "pending") for i in range(10, 15)),
            *(submission(i, 1) for i in range(20, 25)),
            *(create(i, SessionScope(), {"i": i}, kind=f"k{i}") for i in range(30, 35)),
            conversation(40, owner=(1, 10)),
            conversation(41, owner=(1, 11)),
            conversation(42, owner=(1, 10)),
            conversation(43, owner=(1, 10)),
        ]
    )


async def pages(fetch: Fetch, limit: int) -> list[list[int]]:
    """Page through a scan, round-tripping every cursor through JSON text."""
    result: list[list[int]] = []
    cursor: JsonObject | None = None
    while True:
        page = await fetch(limit, cursor)
        assert len(page.items) <= limit
        result.append([item_id(item) for item in page.items])
        if page.cursor is None:
            return result
        cursor = json.loads(json.dumps(page.cursor))
        assert len(result) <= 100, "the scan does not end"


async def a_cursor(storage: Storage, name: str) -> JsonObject:
    """Return the cursor after the first item of a scan."""
    page = await SCANS[name][0](storage)(1, None)
    assert page.cursor is not None
    return page.cursor


class PagingRules(ConformanceBase):
    """Pages and cursors (protocol, Scans)."""

    @pytest.mark.parametrize("name", list(SCANS))
    async def test_every_page_size_yields_every_item_once_in_order(
        self, storage: Storage, name: str
    ) -> None:
        """Protocol, Scans: page sizes 1 to n+1, cursors round-tripped through JSON."""
        await populate(storage)
        make, expected = SCANS[name]
        for limit in range(1, len(expected) + 2):
            result = await pages(make(storage), limit)
            assert [i for page in result for i in page] == expected, limit
            assert all(result[1:]), f"an empty page followed a cursor at limit {limit}"
            if limit >= len(expected):
                assert len(result) == 1, "a cursor was returned with nothing left"

    @pytest.mark.parametrize("name", list(CROSS))
    async def test_truncated_or_forged_cursors_raise_invalid_cursor(
        self, storage: Storage, name: str
    ) -> None:
        """Protocol, Scans: a cursor the backend did not make raises ``InvalidCursor``."""
        await populate(storage)
        scan = SCANS[name][0](storage)
        real = await a_cursor(storage, name)
        forged: list[Any] = [{}, [], "cursor", 7, {"forged": True}]
        for key in real:
            forged.append({k: v for k, v in real.items() if k != key})
            forged.append({**real, key: {"forged": [1]}})
        for cursor in forged:
            with pytest.raises(InvalidCursor):
                await scan(2, cursor)
        assert (await scan(100, real)).items, "the real cursor stopped working"

    @pytest.mark.parametrize("name", list(CROSS))
    async def test_a_cursor_of_another_scan_raises_invalid_cursor(
        self, storage: Storage, name: str
    ) -> None:
        """Protocol, Scans: cursors are not interchangeable between scans."""
        await populate(storage)
        foreign = await a_cursor(storage, CROSS[name])
        with pytest.raises(InvalidCursor):
            await SCANS[name][0](storage)(2, foreign)

    @pytest.mark.parametrize("name", list(ORDERED))
    async def test_a_cursor_continues_its_order_when_the_query_omits_order(
        self, storage: Storage, name: str
    ) -> None:
        """Protocol, Scans: the order asked for on the first page carries on in the cursor."""
        await populate(storage)
        make, default_ids, _ = ORDERED[name]
        for order, expected in (("asc", sorted(default_ids)), ("desc", sorted(default_ids)[::-1])):
            first = await make(storage, order=order)(2, None)
            assert first.cursor is not None
            got = [item_id(item) for item in first.items]
            cursor: JsonObject | None = json.loads(json.dumps(first.cursor))
            while cursor is not None:
                page = await make(storage)(2, cursor)
                got += [item_id(item) for item in page.items]
                cursor = page.cursor
            assert got == expected, order

    @pytest.mark.parametrize("name", list(ORDERED))
    async def test_a_cursor_of_the_other_order_raises_invalid_cursor_naming_the_cursor(
        self, storage: Storage, name: str
    ) -> None:
        """Protocol, Scans: cursors carry the scan order; asking for the other one is refused."""
        await populate(storage)
        make, _, _ = ORDERED[name]
        for made, asked in (("asc", "desc"), ("desc", "asc")):
            page = await make(storage, order=made)(1, None)
            assert page.cursor is not None
            with pytest.raises(InvalidCursor, match="cursor") as caught:
                await make(storage, order=asked)(1, page.cursor)
            assert made in str(caught.value)
            assert asked in str(caught.value)

    @pytest.mark.parametrize("name", list(ORDERED))
    async def test_without_order_or_cursor_a_scan_runs_in_its_default_order(
        self, storage: Storage, name: str
    ) -> None:
        """Protocol, Scans: entries newest first, conversations, tasks, submissions ascending."""
        await populate(storage)
        make, expected, default = ORDERED[name]
        for fetch in (make(storage), make(storage, order=default)):
            assert [i for page in await pages(fetch, 3) for i in page] == expected

    @pytest.mark.parametrize("order", ["up", "ASC", "", 1])
    async def test_an_order_other_than_asc_or_desc_raises_value_error(
        self, storage: Storage, order: Any
    ) -> None:
        """Protocol, Scans: ``order`` is ``"asc"``, ``"desc"`` or omitted."""
        await populate(storage)
        for make, _, _ in ORDERED.values():
            with pytest.raises(ValueError, match="order must be"):
                await make(storage, order=order)(2, None)

    async def test_a_cursor_is_checked_even_when_nothing_is_left_to_scan(
        self, storage: Storage
    ) -> None:
        """Protocol, Scans: an invalid cursor fails rather than giving an empty page."""
        await populate(storage)
        with pytest.raises(InvalidCursor):
            await storage.scan_entries(99, cursor={"forged": True})
        with pytest.raises(InvalidCursor):
            await storage.scan_tasks(conversation_id=99, cursor={"forged": True})

    @pytest.mark.parametrize("limit", [0, -1])
    async def test_a_limit_must_be_a_positive_integer(self, storage: Storage, limit: int) -> None:
        """Protocol, Scans: ``limit`` is a positive integer; anything else is a ``ValueError``."""
        await populate(storage)
        for make, _ in SCANS.values():
            with pytest.raises(ValueError):
                await make(storage)(limit, None)


class FilterRules(ConformanceBase):
    """Filtered scans (protocol, Scans; reference 1.9 Queries)."""

    async def test_tasks_are_filtered_by_every_given_field(
        self, storage: Storage, phase: str
    ) -> None:
        """Reference 1.9: tasks by conversation, kind, status, abort mark and background."""
        await storage.commit(
            [
                conversation(1),
                conversation(2),
                task(10, 1, "pending"),
                task(11, 1, "running", abort_requested=True),
                task(12, 1, "waiting", kind="tool", background=True),
                task(13, 2, "terminal"),
                task(14, 2, "completing", kind="tool", abort_requested=True, background=True),
                task(15, 1, "pending", kind="tool"),
            ]
        )
        await storage.commit([task(15, 1, "terminal", kind="tool")])
        storage = await self.checkpoint(storage)
        cases: list[tuple[dict[str, Any], list[int]]] = [
            ({}, [10, 11, 12, 13, 14, 15]),
            ({"conversation_id": 1}, [10, 11, 12, 15]),
            ({"conversation_id": 3}, []),
            ({"kind": "tool"}, [12, 14, 15]),
            ({"status": "pending"}, [10]),
            ({"status": ["pending", "running"]}, [10, 11]),
            ({"status": ("terminal",)}, [13, 15]),
            ({"status": LIVE_TASK_STATUSES}, [10, 11, 12, 14]),
            ({"status": []}, []),
            ({"abort_requested": True}, [11, 14]),
            ({"abort_requested": False}, [10, 12, 13, 15]),
            ({"background": True}, [12, 14]),
            ({"background": False}, [10, 11, 13, 15]),
            ({"conversation_id": 1, "kind": "tool", "background": False}, [15]),
            ({"conversation_id": 2, "status": "terminal", "abort_requested": True}, []),
        ]
        for filters, expected in cases:
            for limit in (1, 100):
                result = await pages(fetcher(storage.scan_tasks, **filters), limit)
                assert [i for page in result for i in page] == expected, (filters, limit)

    async def test_submissions_are_filtered_by_conversation_and_status(
        self, storage: Storage, phase: str
    ) -> None:
        """Reference 1.9: submissions by conversation and status (one or several)."""
        await storage.commit(
            [
                conversation(1),
                conversation(2),
                submission(20, 1),
                submission(21, 1, status="placed"),
                submission(22, 2, status="done"),
                submission(23, 2, type="write", status="unanswered"),
                submission(24, 1, type="write"),
            ]
        )
        await storage.commit([submission(24, 1, type="write", status="done")])
        storage = await self.checkpoint(storage)
        cases: list[tuple[dict[str, Any], list[int]]] = [
            ({"conversation_id": 1}, [20, 21, 24]),
            ({"status": "done"}, [22, 24]),
            ({"status": ["queued", "placed"]}, [20, 21]),
            ({"conversation_id": 2, "status": "done"}, [22]),
            ({"conversation_id": 1, "status": "unanswered"}, []),
        ]
        for filters, expected in cases:
            for limit in (1, 100):
                result = await pages(fetcher(storage.scan_submissions, **filters), limit)
                assert [i for page in result for i in page] == expected, (filters, limit)

    async def test_conversations_are_filtered_by_owner_conversation_and_or_task(
        self, storage: Storage, phase: str
    ) -> None:
        """Reference 1.9: conversations by ``owner_conversation_id`` and/or ``owner_task_id``."""
        await storage.commit(
            [
                conversation(1),
                conversation(2),
                task(10, 1),
                task(11, 1),
                task(13, 2),
                conversation(30, owner=(1, 10)),
                conversation(31, owner=(1, 11)),
                conversation(32, owner=(2, 13)),
            ]
        )
        storage = await self.checkpoint(storage)
        cases: list[tuple[dict[str, Any], list[int]]] = [
            ({}, [1, 2, 30, 31, 32]),
            ({"owner_conversation_id": 1}, [30, 31]),
            ({"owner_task_id": 11}, [31]),
            ({"owner_conversation_id": 1, "owner_task_id": 11}, [31]),
            ({"owner_conversation_id": 2, "owner_task_id": 11}, []),
            ({"owner_conversation_id": 1, "owner_task_id": 13}, []),
            ({"owner_conversation_id": 30}, []),
        ]
        for filters, expected in cases:
            for limit in (1, 100):
                result = await pages(fetcher(storage.scan_conversations, **filters), limit)
                assert [i for page in result for i in page] == expected, (filters, limit)

    async def test_documents_are_scanned_by_exact_scope_at_a_point_and_kind(
        self, storage: Storage, phase: str
    ) -> None:
        """Reference 1.9: documents by exact scope at a point, optional kind."""
        first = await storage.commit(
            [
                conversation(1),
                entry(2, 1),
                task(10, 1),
                create(40, SessionScope(), kind="a"),
                create(41, SessionScope(), kind="b", key="k"),
                create(42, ConversationScope(1), kind="a"),
                create(43, ConversationScope(1), kind="b"),
                create(45, TaskScope(10), kind="a"),
            ]
        )
        second = await storage.commit(
            [conversation(5, parent=1, at=2), create(44, ConversationScope(5), kind="a")]
        )
        third = await storage.commit(
            [RetireDocument(42), create(46, ConversationScope(1), kind="a")]
        )
        storage = await self.checkpoint(storage)
        cases: list[tuple[ScopeRef, int | None, str | None, list[int]]] = [
            (ScopeRef("session"), None, None, [40, 41]),
            (ScopeRef("session"), None, "a", [40]),
            (ScopeRef("session"), 0, None, []),
            (ScopeRef("conversation", 1), None, None, [43, 46]),
            (ScopeRef("conversation", 1), first, None, [42, 43]),
            (ScopeRef("conversation", 1), second, "a", [42]),
            (ScopeRef("conversation", 1), third, "a", [46]),
            (ScopeRef("conversation", 5), None, None, [44]),
            (ScopeRef("conversation", 5), first, None, []),
            (ScopeRef("task", 10), None, None, [45]),
            (ScopeRef("task", 11), None, None, []),
            (ScopeRef("conversation", 99), None, None, []),
        ]
        for scope, at, kind, expected in cases:
            for limit in (1, 100):
                fetch = fetcher(storage.scan_documents, scope, at=at, kind=kind)
                result = await pages(fetch, limit)
                assert [i for page in result for i in page] == expected, (scope, at, kind, limit)
