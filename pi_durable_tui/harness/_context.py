"""Model context derivation: the active range, context edits and tool-result order (R71-R76).

Owns ``ContextView`` and the functions that turn a conversation's committed
entries into the messages a model request is built from:

- ``active_range`` (R71): the newest head marker followed by the non-marker
  entries from its ``head`` through the cutoff (the whole history without one).
- ``derive_context`` (R72-R76): context edits (newest edit per target wins),
  exclusion of aborted, failed and deferred assistant messages, tool results
  placed right after their call (a missing one synthesized), and a system
  message preceded only by user messages moved to the front.
- ``load_context``: the same through a ``ContextReader`` (two storage reads), which
  reads only the active range, never the whole history.

Messages are the stored JSON dicts of ``pi_durable_tui.ai`` messages
(``model_dump(mode="json", exclude_none=True)``) plus the harness's system
messages (``role: "system"``); nothing here validates them into pydantic types.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pi_durable_tui.ai import TextContent, ToolResultMessage
from pi_durable_tui.storage import EntryRecord, Json, JsonObject, Page, StoredEntry
from pi_durable_tui.storage.protocol import DEFAULT_PAGE, EntryOrder

MISSING_RESULT_TEXT = "Tool result unavailable: history ends before this call completed."
"""The text of a tool result synthesized for a call without one (R74)."""

EXCLUDED_STOP_REASONS = frozenset({"aborted", "error", "deferred"})
"""Assistant messages that never reach a later request (R73)."""

SCAN_PAGE_SIZE = 256


class EntryNotVisible(LookupError):
    """A context cutoff names an entry outside the conversation's visible history (R71)."""

    def __init__(self, entry_id: int, conversation_id: int) -> None:
        super().__init__(f"Entry {entry_id} is not visible from conversation {conversation_id}")
        self.entry_id = entry_id
        self.conversation_id = conversation_id


@dataclass(frozen=True, slots=True)
class ContextView:
    """The active transcript of a conversation and the model context derived from it (R76).

    ``messages`` shares its dicts with ``contributions`` (a message is the same
    object in both), so treat a view as read-only.

    Attributes:
        head: The head marker the range starts from, or ``None`` (whole history).
        entries: The raw active entries, ascending, the head marker first.
        contributions: Per entry ID, its messages after edits and R73, before the
            reordering of R74 and R75 (an empty list for an entry that contributes
            nothing).
        messages: The final model context; it may hold system messages.
    """

    head: EntryRecord | None
    entries: list[EntryRecord]
    contributions: dict[int, list[JsonObject]]
    messages: list[JsonObject]


EMPTY_CONTEXT = ContextView(head=None, entries=[], contributions={}, messages=[])


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


def active_range(visible: Sequence[EntryRecord]) -> list[EntryRecord]:
    """Select the active range of a visible history (R71).

    Args:
        visible: The conversation's visible entries in ascending ID order, already
            cut at the cutoff.

    Returns:
        The newest head marker followed by the non-marker entries from its
        ``head`` on; without a marker, every entry.

    Raises:
        ValueError: When ``visible`` is not in strictly ascending ID order.
    """
    _check_ascending(visible)
    for marker in reversed(visible):
        start = marker.head
        if start is not None:
            # REMINDER: older head markers inside the range are dropped here, edits
            # and all; that is safe because only pi.system entries carry edits.
            return [marker, *(e for e in visible if e.head is None and e.id >= start)]
    return list(visible)


def derive_context(active: Sequence[EntryRecord]) -> ContextView:
    """Derive the model context of an active range (R72-R76).

    Args:
        active: The output of ``active_range``: the head marker (if any) first,
            then non-marker entries in ascending ID order.

    Returns:
        The view: entries, per-entry contributions and the final messages.

    Raises:
        ValueError: When an entry other than the first carries ``head``, or the
            non-marker entries are not ascending.
    """
    head = active[0] if active and active[0].head is not None else None
    rest = active[1:] if head is not None else active
    if any(entry.head is not None for entry in rest):
        raise ValueError(
            "Only the first entry of an active range may be a head marker; "
            "pass the output of active_range()"
        )
    _check_ascending(rest)
    edits: dict[int, JsonObject] = {}
    # R72: edits apply in entry order (IDs), so the marker, which is newer than the
    # entries it keeps, is visited by ID rather than by its position.
    for entry in sorted(active, key=lambda record: record.id):
        for raw in entry.edits or ():
            edit = _checked_edit(entry, raw)
            edits[edit["target"]] = edit
    contributions = {entry.id: _contribution(entry, edits.get(entry.id)) for entry in active}
    flat = [message for entry in active for message in contributions[entry.id]]
    return ContextView(
        head=head,
        entries=list(active),
        contributions=contributions,
        messages=hoist_leading_system(order_tool_results(flat)),
    )


class RangeCache:
    """The newest visible range read of each conversation, kept in memory (R127).

    Entries are immutable, so a later read of the same active range (same head
    marker) needs only the entries after the cached tail: a turn of a long
    conversation reads a few new rows instead of the whole range. Observable only as
    speed.

    Args:
        kept: How many conversations to remember (the least recently read go first).
    """

    def __init__(self, kept: int = 64) -> None:
        self._kept = kept
        self._ranges: OrderedDict[int, tuple[int | None, int, list[EntryRecord]]] = OrderedDict()

    def get(self, conversation_id: int, start: int | None) -> tuple[int, list[EntryRecord]] | None:
        """The cached ``(tail, entries)`` of a range starting at ``start``, if any."""
        found = self._ranges.get(conversation_id)
        if found is None or found[0] != start:
            return None
        self._ranges.move_to_end(conversation_id)
        return found[1], found[2]

    def put(
        self, conversation_id: int, start: int | None, tail: int, entries: list[EntryRecord]
    ) -> None:
        """Remember a range read through ``tail``."""
        self._ranges[conversation_id] = (start, tail, entries)
        self._ranges.move_to_end(conversation_id)
        while len(self._ranges) > self._kept:
            self._ranges.popitem(last=False)


async def load_context(
    reader: ContextReader,
    conversation_id: int,
    cutoff: int | None = None,
    cache: RangeCache | None = None,
) -> ContextView:
    """Read the active range of a conversation from storage and derive its context (R71-R76).

    Reads the newest entry (when no cutoff is given), the newest head marker at or
    before it, and the entries from the marker's ``head`` through it, ascending and
    page by page; entries before the range are never read. Fork-aware visibility
    is the storage's job.

    Args:
        reader: The storage (or anything with its two reads).
        conversation_id: The conversation.
        cutoff: The newest entry to include (``None``: the newest visible entry).
        cache: Remembers ranges between reads, so only newer entries are scanned.

    Returns:
        The view; an empty one for a conversation without entries.

    Raises:
        EntryNotVisible: When ``cutoff`` is not visible from the conversation.
    """
    tail = cutoff
    if tail is None:
        newest = await reader.scan_entries(conversation_id, order="desc", limit=1)
        if not newest.items:
            return EMPTY_CONTEXT
        # REMINDER: the tail is fixed before the marker is looked up, so an entry or
        # marker committed meanwhile cannot slip into a range computed without it.
        tail = newest.items[0].entry.id
    marker = await reader.find_latest_head_marker(conversation_id, tail)
    start = marker.entry.head if marker is not None else None
    visible: list[EntryRecord] = []
    scan_from = start
    cached = cache.get(conversation_id, start) if cache is not None else None
    if cached is not None:
        cached_tail, cached_entries = cached
        if cached_tail >= tail:
            visible = [entry for entry in cached_entries if entry.id <= tail]
            scan_from = None
        else:
            visible = list(cached_entries)
            scan_from = cached_tail + 1
    cursor: JsonObject | None = None
    while cached is None or scan_from is not None:
        page = await reader.scan_entries(
            conversation_id,
            min_entry_id=scan_from,
            max_entry_id=tail,
            order="asc",
            limit=SCAN_PAGE_SIZE,
            cursor=cursor,
        )
        visible.extend(stored.entry for stored in page.items)
        if page.cursor is None:
            break
        cursor = page.cursor
    if cutoff is not None and (not visible or visible[-1].id != cutoff):
        raise EntryNotVisible(cutoff, conversation_id)
    if cache is not None and (cached is None or cached[0] < tail):
        cache.put(conversation_id, start, tail, visible)
    return derive_context(active_range(visible))


def is_stale_head(view: ContextView, head: int) -> bool:
    """Whether a head write with this ``head`` is stale against a context (R63, R113).

    A head older than the start of the active range (the newest head marker's
    ``head``) would resurrect entries a newer marker already replaced, so two
    competing compactions are ordered by this rule alone.

    Args:
        view: The current context.
        head: The numeric ``head`` of the write (a ``"self"`` head is never stale).

    Returns:
        True when ``head`` is older than the range start.
    """
    start = view.head.head if view.head is not None else None
    return start is not None and head < start


def order_tool_results(messages: Sequence[JsonObject]) -> list[JsonObject]:
    """Place each assistant's tool results right after it, in call order (R74).

    A result counts when it appears before the next assistant message; a call
    without one gets a synthesized error result; results without a preceding call
    are dropped. Other messages keep their order.

    Args:
        messages: Messages in committed order.

    Returns:
        The reordered messages (the same dicts, plus any synthesized results).
    """
    ordered: list[JsonObject] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "toolResult":
            continue
        ordered.append(message)
        if role != "assistant":
            continue
        calls = tool_calls(message)
        if not calls:
            continue
        results: dict[str, JsonObject] = {}
        for later in messages[index + 1 :]:
            if later.get("role") == "assistant":
                break
            if later.get("role") == "toolResult":
                results.setdefault(later.get("tool_call_id", ""), later)
        for call in calls:
            found = results.get(call.get("id", ""))
            ordered.append(found if found is not None else _missing_result(call, message))
    return ordered


def hoist_leading_system(messages: Sequence[JsonObject]) -> list[JsonObject]:
    """Move system messages preceded only by user messages to the front (R75).

    Providers treat only a leading system message as the initial prompt, and the
    first preparation of a conversation writes its system entry after the first
    user entry. System messages keep their relative order.

    Args:
        messages: Messages after ``order_tool_results``.

    Returns:
        The messages with such system messages first.
    """
    front: list[JsonObject] = []
    rest: list[JsonObject] = []
    only_users = True
    for message in messages:
        role = message.get("role")
        if role == "system" and only_users:
            front.append(message)
            continue
        if role != "user":
            only_users = False
        rest.append(message)
    return [*front, *rest]


def tool_calls(message: JsonObject) -> list[JsonObject]:
    """Return the tool-call blocks of a stored assistant message, in order.

    Args:
        message: A stored message dict.

    Returns:
        Its ``tool_call`` content blocks (none for other roles).
    """
    content = message.get("content")
    if message.get("role") != "assistant" or not isinstance(content, list):
        return []
    return [block for block in content if block.get("type") == "tool_call"]


def _contribution(entry: EntryRecord, edit: JsonObject | None) -> list[JsonObject]:
    if edit is not None and edit.get("action") == "omit":
        return []
    if edit is not None and edit.get("action") == "replace":
        messages: list[Any] = edit["messages"]
    else:
        messages = entry.model or []
    return [
        message
        for message in messages
        if message.get("role") != "assistant"
        or message.get("stop_reason") not in EXCLUDED_STOP_REASONS
    ]


def _missing_result(call: JsonObject, assistant: JsonObject) -> JsonObject:
    result = ToolResultMessage(
        tool_call_id=call.get("id", ""),
        tool_name=call.get("name", ""),
        content=[TextContent(text=MISSING_RESULT_TEXT)],
        is_error=True,
        details={"reason": "missing_result"},
        timestamp=assistant.get("timestamp", 0),
    )
    return result.model_dump(mode="json", exclude_none=True)


def _checked_edit(entry: EntryRecord, edit: Json) -> JsonObject:
    if (
        not isinstance(edit, dict)
        or not isinstance(edit.get("target"), int)
        or edit.get("action") not in ("omit", "replace")
        or (edit["action"] == "replace" and not isinstance(edit.get("messages"), list))
    ):
        raise ValueError(
            f"Entry {entry.id} has a malformed context edit {edit!r}: expected "
            '{"target": <entry id>, "action": "omit"} or '
            '{"target": <entry id>, "action": "replace", "messages": [...]}'
        )
    return edit


def _check_ascending(entries: Sequence[EntryRecord]) -> None:
    for before, after in itertools.pairwise(entries):
        if after.id <= before.id:
            raise ValueError(
                f"Entries must be in ascending ID order, but entry {after.id} "
                f"follows entry {before.id}"
            )
