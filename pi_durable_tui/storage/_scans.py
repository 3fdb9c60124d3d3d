"""Pieces every backend's scans share: cursors, limits and fork visibility.

A cursor is a small JSON object naming the scan, its order and the last ID
returned; every scan orders by ID, so the position is an ID. Backends validate a
cursor before using it, so a forged, truncated or foreign one fails with
``InvalidCursor`` rather than returning a wrong page.

A conversation's visible history (R17, R71) is described as a *chain*: the
conversation itself without a cap, then each ancestor with the highest entry ID
visible through the fork points below it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pi_durable_tui.storage.errors import InvalidCursor
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.records import ForkPoint

CURSOR_VERSION = 1


def make_cursor(scan: str, after: int, order: str = "asc") -> JsonObject:
    """Return the cursor that continues ``scan`` after the item with ID ``after``."""
    return {"v": CURSOR_VERSION, "scan": scan, "order": order, "after": after}


def read_cursor(cursor: JsonObject | None, scan: str, order: str = "asc") -> int | None:
    """Return the position a cursor continues from, or ``None`` for a first page.

    Args:
        cursor: The cursor given by the caller.
        scan: The scan being continued (``entries``, ``tasks``...).
        order: The order of the scan being continued.

    Returns:
        The ID of the last item already returned, or ``None``.

    Raises:
        InvalidCursor: When the cursor was not made by this scan in this order.
    """
    if cursor is None:
        return None
    if not isinstance(cursor, dict) or set(cursor) != {"v", "scan", "order", "after"}:
        raise InvalidCursor(f"Invalid cursor: {cursor!r} was not made by a {scan} scan")
    after = cursor["after"]
    if cursor["v"] != CURSOR_VERSION or cursor["scan"] != scan:
        raise InvalidCursor(f"Invalid cursor: made by a {cursor['scan']!r} scan, not {scan}")
    if cursor["order"] != order:
        raise InvalidCursor(f"Invalid cursor: made for order {cursor['order']!r}, not {order}")
    if not isinstance(after, int) or isinstance(after, bool) or after < 0:
        raise InvalidCursor(f"Invalid cursor: position {after!r} is not an ID")
    return after


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
