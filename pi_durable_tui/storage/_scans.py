"""Pieces every backend's reads share: cursors, limits, fork visibility, refusals.

A cursor is a small JSON object naming the scan, its order and the last ID
returned; every scan orders by ID (ascending or descending), so the position is
an ID. Backends validate a cursor before using it, so a forged, truncated or
foreign one fails with ``InvalidCursor`` rather than returning a wrong page, and
a query that omits ``order`` continues in the cursor's order. Validation runs in
one order everywhere: limit, order, cursor, then what the scan names.

A conversation's visible history (R17, R71) is described as a *chain*: the
conversation itself without a cap, then each ancestor with the highest entry ID
visible through the fork points below it.

Reads refuse the caller's mistakes alike in every backend: an entry lookup or
scan in a conversation never committed (``unknown_conversation``), and a
historical read of a document that keeps only its current value (``no_history``,
R20).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pi_durable_tui.storage.errors import InvalidCursor, StorageRejected, readable
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.protocol import ScanOrder
from pi_durable_tui.storage.records import DocumentRecord, ForkPoint

CURSOR_VERSION = 1
ORDERS = ("asc", "desc")


def make_cursor(scan: str, after: int, order: ScanOrder) -> JsonObject:
    """Return the cursor that continues ``scan`` in ``order`` after the item with ID ``after``."""
    return {"v": CURSOR_VERSION, "scan": scan, "order": order, "after": after}


def check_order(order: object) -> None:
    """Check a scan's ``order`` argument (``None``: the cursor's, or the scan's default).

    Raises:
        ValueError: When it is neither ``"asc"``, ``"desc"`` nor ``None``.
    """
    if order is not None and order not in ORDERS:
        raise ValueError(f"order must be 'asc' or 'desc' (or omitted), got {order!r}")


def read_cursor(
    cursor: JsonObject | None, scan: str, order: ScanOrder | None, default: ScanOrder
) -> tuple[int | None, ScanOrder]:
    """Return where a scan continues from, and in which order it runs.

    A cursor carries the order of the scan that made it: a query that omits
    ``order`` continues in that order, and one that asks for the other order is
    refused rather than answered from the wrong end.

    Args:
        cursor: The cursor given by the caller (``None`` for a first page).
        scan: The scan being continued (``entries``, ``tasks``...).
        order: The order the query asks for, or ``None``.
        default: The scan's order when neither the query nor a cursor says.

    Returns:
        ``(after, order)``: the ID of the last item already returned (``None`` for
        a first page) and the order to scan in.

    Raises:
        InvalidCursor: When the cursor was not made by this scan, or was made by a
            scan in the other order than the one asked for.
    """
    if cursor is None:
        return None, default if order is None else order
    if not isinstance(cursor, dict) or set(cursor) != {"v", "scan", "order", "after"}:
        raise InvalidCursor(f"Invalid cursor: {cursor!r} was not made by a {scan} scan")
    after, made_in = cursor["after"], cursor["order"]
    if cursor["v"] != CURSOR_VERSION or cursor["scan"] != scan:
        raise InvalidCursor(f"Invalid cursor: made by a {cursor['scan']!r} scan, not {scan}")
    if made_in not in ORDERS:
        raise InvalidCursor(f"Invalid cursor: its order {made_in!r} is not 'asc' or 'desc'")
    if order is not None and made_in != order:
        raise InvalidCursor(
            f"Invalid cursor: the cursor continues a {scan} scan in {made_in!r} order, but the "
            f"query asks for {order!r}; omit order to continue it, or drop the cursor to "
            "start a new scan"
        )
    if not isinstance(after, int) or isinstance(after, bool) or after < 0:
        raise InvalidCursor(f"Invalid cursor: position {after!r} is not an ID")
    return after, made_in


def unknown_conversation(conversation_id: int) -> StorageRejected:
    """Return the refusal of an entry lookup or scan in a conversation never committed."""
    return StorageRejected(f"Unknown conversation {conversation_id}")


def no_history(record: DocumentRecord) -> StorageRejected:
    """Return the refusal of a numeric (historical) read of a current-only document (R20)."""
    return StorageRejected(
        f"Document {record.id} ({readable(record.kind)}) does not retain historical content: "
        "it keeps only its current value; read it with at=None"
    )


def status_filter(status: str | Sequence[str] | None) -> set[str] | None:
    """Return a scan's status filter as a set (``None``: no filter; a string: one status)."""
    if status is None:
        return None
    return {status} if isinstance(status, str) else set(status)


def check_limit(limit: int) -> int:
    """Return ``limit`` after checking that it is a positive integer.

    Raises:
        ValueError: When it is not.
    """
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ValueError(f"limit must be a positive integer, got {limit!r}")
    return limit


def visible_chain(
    conversation_id: int, parent_of: Callable[[int], ForkPoint | None]
) -> list[tuple[int, int | None]]:
    """Return the fork chain of a conversation: ``[(conversation_id, cap), ...]``.

    Args:
        conversation_id: The conversation whose history is read.
        parent_of: Returns a conversation's fork point, or ``None`` for a root.

    Returns:
        The conversation with cap ``None``, then each ancestor with the highest
        entry ID visible from the first conversation.
    """
    chain: list[tuple[int, int | None]] = [(conversation_id, None)]
    cap: int | None = None
    current = conversation_id
    seen = {conversation_id}
    while (parent := parent_of(current)) is not None:
        cap = parent.at if cap is None else min(cap, parent.at)
        current = parent.conversation_id
        if current in seen:  # a cycle can only come from damaged data
            break
        seen.add(current)
        chain.append((current, cap))
    return chain
