"""Everything a store answers, read through the public ``Storage`` API only.

``snapshot`` walks a store the way a careful reader would: every conversation,
each one's visible entries and newest head marker, which of its parent's entries
``entry(id, conversation_id)`` finds from it (the fork cap), every task and
submission, the
request-ID index, the documents of every scope at every point, and each
document's content at every point (or the error the read raised). Two stores
that give equal snapshots answer every read alike, which is what the suite's
"a rejected commit changes nothing" checks and the differential stateful test
compare. ``canonical`` turns a snapshot into text that tells ``1``, ``1.0`` and
``true`` apart, so a backend that loses a JSON type shows up as a difference.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from pi_durable_tui.storage.errors import StorageError
from pi_durable_tui.storage.json_ops import Json, JsonObject
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.records import (
    DocumentRead,
    Page,
    ScopeRef,
    StoredEntry,
)

T = TypeVar("T")
PAGE = 50


async def every_item(
    scan: Callable[..., Awaitable[Page[T]]], *args: Any, page_size: int = PAGE, **filters: Any
) -> AsyncIterator[T]:
    """Yield every item of a scan, following cursors (round-tripped through JSON).

    Args:
        scan: A scan method of a store.
        *args: Its positional arguments.
        page_size: The ``limit`` of each page.
        **filters: Its keyword arguments other than ``limit`` and ``cursor``.
    """
    cursor: JsonObject | None = None
    while True:
        page = await scan(*args, limit=page_size, cursor=cursor, **filters)
        for item in page.items:
            yield item
        if page.cursor is None:
            return
        cursor = json.loads(json.dumps(page.cursor))


def stored_entry_json(stored: StoredEntry | None) -> Json:
    """Return an entry lookup's result as JSON (``None`` stays ``None``)."""
    if stored is None:
        return None
    return {"entry": stored.entry.to_json(), "commit_seq": stored.commit_seq}


def document_read_json(read: DocumentRead | None) -> Json:
    """Return a document read's result as JSON (``None`` stays ``None``)."""
    if read is None:
        return None
    return {
        "record": read.record.to_json(),
        "version": read.version,
        "value": read.value,
        "deltas_since_base": read.deltas_since_base,
    }


async def outcome(call: Awaitable[Json]) -> Json:
    """Return what a read gives, or the storage error it raises, as JSON."""
    try:
        return {"ok": await call}
    except StorageError as error:
        return {"error": type(error).__name__, "message": str(error)}


async def _document_json(storage: Storage, document_id: int, at: int | None) -> Json:
    return document_read_json(await storage.document(document_id, at))


async def snapshot(
    storage: Storage, *, history: bool = True, page_size: int = PAGE
) -> dict[str, Any]:
    """Read everything the store answers, as plain JSON-compatible data.

    Args:
        storage: The store to read.
        history: Also read document scans and contents at every past seq (the
            cost grows with documents times seqs); otherwise only the current ones.
        page_size: The ``limit`` of every scan; a small one makes every scan
            follow cursors.

    Returns:
        A dictionary of results keyed by what was asked.
    """
    last = storage.last_seq
    points: list[int | None] = [None, *range(0, last + 1)] if history else [None]
    result: dict[str, Any] = {"last_seq": last}
    size = {"page_size": page_size}

    conversations = [record async for record in every_item(storage.scan_conversations, **size)]
    result["conversations"] = [record.to_json() for record in conversations]
    visible: dict[int, list[int]] = {}
    for record in conversations:
        cid = record.id
        stored = [s async for s in every_item(storage.scan_entries, cid, order="asc", **size)]
        visible[cid] = [s.entry.id for s in stored]
        result[f"entries/{cid}"] = [stored_entry_json(s) for s in stored]
        result[f"head/{cid}"] = stored_entry_json(await storage.find_latest_head_marker(cid))
    for record in conversations:
        # Keyed lookups are fork-aware on their own: ask a fork about every entry its
        # parent sees, which finds exactly those up to the fork point.
        if record.parent is not None:
            cid = record.id
            asked = visible.get(record.parent.conversation_id, [])
            result[f"entry-lookups/{cid}"] = [
                e for e in asked if await storage.entry(e, cid) is not None
            ]

    tasks = [t async for t in every_item(storage.scan_tasks, **size)]
    result["tasks"] = [t.to_json() for t in tasks]
    submissions = [s async for s in every_item(storage.scan_submissions, **size)]
    result["submissions"] = [s.to_json() for s in submissions]
    for sub in submissions:
        if sub.request_id is not None:
            found = await storage.submission_by_request(sub.conversation_id, sub.request_id)
            key = f"request/{sub.conversation_id}/{sub.request_id}"
            result[key] = None if found is None else found.id

    scopes = [
        ScopeRef("session"),
        *(ScopeRef("conversation", record.id) for record in conversations),
        *(ScopeRef("task", t.id) for t in tasks),
    ]
    document_ids: set[int] = set()
    for scope in scopes:
        for at in points:
            records = [r async for r in every_item(storage.scan_documents, scope, at=at, **size)]
            document_ids.update(r.id for r in records)
            result[f"documents/{scope.kind}/{scope.id}/{at}"] = [r.to_json() for r in records]
    for document_id in sorted(document_ids):
        for at in points:
            result[f"document/{document_id}/{at}"] = await outcome(
                _document_json(storage, document_id, at)
            )
    return result


def canonical(value: Any) -> str:
    """Return JSON text of ``value`` with sorted keys, telling ``1``, ``1.0``, ``true`` apart."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)
