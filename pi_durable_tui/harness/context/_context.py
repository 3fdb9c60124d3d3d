"""Model context derivation: the active range, context edits and tool-result order (R71-R76).

Owns ``ContextView`` and the functions that turn a conversation's committed
entries into the messages a model request is built from:

- ``active_range`` (R71): the newest head marker followed by the non-marker
  entries from its ``head`` through the cutoff (the whole history without one).
- ``derive_range`` (R72-R76): context edits (newest edit per target wins),
  exclusion of aborted, failed and deferred assistant messages, tool results
  placed right after their call (a missing one synthesized), and a system
  message preceded only by user messages moved to the front; the derivation is
  kept ready to grow, and ``extend_range`` grows it, ordering only its end
  (R127). It is the one derivation: a turn's preparation and its request read
  the same ``RangeCache`` entry (``_loading``), the second extending it by the
  entries the first commit appended (issue 14). Each view keeps what its system
  messages replay to (``ContextView.prompt``).

Messages are the stored JSON dicts of ``pi_durable_tui.ai`` messages
(``model_dump(mode="json", exclude_none=True)``) plus the harness's system
messages (``role: "system"``); nothing here validates them into pydantic types.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pi_durable_tui.ai import TextContent, ToolResultMessage
from pi_durable_tui.harness.context._prompt_state import PromptState, replay_prompt
from pi_durable_tui.storage import EntryRecord, Json, JsonObject

MISSING_RESULT_TEXT = "Tool result unavailable: history ends before this call completed."
"""The text of a tool result synthesized for a call without one (R74)."""

EXCLUDED_STOP_REASONS = frozenset({"aborted", "error", "deferred"})
"""Assistant messages that never reach a later request (R73)."""


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
        prompt: What its system messages replay to (grown with the view, issue 14).
    """

    head: EntryRecord | None
    entries: list[EntryRecord]
    contributions: dict[int, list[JsonObject]]
    messages: list[JsonObject]
    prompt: PromptState
    """What the system messages among ``messages`` replay to (R79), shared: read-only."""


EMPTY_CONTEXT = ContextView(
    head=None, entries=[], contributions={}, messages=[], prompt=PromptState()
)


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


@dataclass(frozen=True, slots=True)
class DerivedRange:
    """A derived context and what extending it by newer entries needs (R127).

    The view's messages are ``prefix`` followed by the ordered messages from
    ``flat[settled]``, the last assistant message, on. R74 moves a result only up
    to the next assistant message and R75 hoists only before the first one, so
    the messages before the last assistant are final whatever entries follow:
    ``extend_range`` orders only the messages from there on.
    """

    view: ContextView
    edits: dict[int, JsonObject]
    """The context edits of the range by target (R72)."""
    flat: list[JsonObject]
    """Every contribution in committed order, before R74 and R75."""
    settled: int
    """The index in ``flat`` of its last assistant message; -1 without one."""
    prefix: list[JsonObject]
    """The final messages before ``flat[settled]``."""


def derive_range(active: Sequence[EntryRecord]) -> DerivedRange:
    """Derive the model context of an active range, ready to be extended (R72-R76).

    Args:
        active: The output of ``active_range``.

    Returns:
        The derivation; its ``view`` is the context.

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
    settled = _last_assistant(flat, 0)
    if settled < 0:
        prefix: list[JsonObject] = []
        messages = hoist_leading_system(order_tool_results(flat))
    else:
        prefix = hoist_leading_system(order_tool_results(flat[:settled]))
        messages = [*prefix, *order_tool_results(flat[settled:])]
    view = ContextView(
        head=head,
        entries=list(active),
        contributions=contributions,
        messages=messages,
        prompt=replay_prompt(flat),
    )
    return DerivedRange(view, edits, flat, settled, prefix)


def extend_range(derived: DerivedRange, added: Sequence[EntryRecord]) -> DerivedRange | None:
    """Derive the context of a range grown by newer entries, ordering only its end (R127).

    The result equals ``derive_range`` of the whole grown range; the work is
    proportional to what was added and to the messages since the last assistant
    message, not to the range.

    Args:
        derived: The derivation of the range so far.
        added: Newer visible entries, ascending, all after the range's newest.

    Returns:
        The grown derivation, or ``None`` when it must be derived whole: an added
        entry is a head marker (a new range), edits an entry of the old range, or
        is out of order, or the old range had no assistant message yet.
    """
    if not added:
        return derived
    old = derived.view
    if derived.settled < 0 or not old.entries:
        return None
    newest = max(old.entries[0].id, old.entries[-1].id)
    ids = {entry.id for entry in added}
    # REMINDER: copied before the first change: the old derivation stays valid.
    edits = dict(derived.edits) if any(entry.edits for entry in added) else derived.edits
    for entry in added:
        if entry.head is not None or entry.id <= newest:
            return None
        newest = entry.id
        for raw in entry.edits or ():
            edit = _checked_edit(entry, raw)
            if edit["target"] not in ids:
                return None
            edits[edit["target"]] = edit
    contributions = {entry.id: _contribution(entry, edits.get(entry.id)) for entry in added}
    flat = [*derived.flat, *(message for entry in added for message in contributions[entry.id])]
    settled, prefix = derived.settled, derived.prefix
    latest = _last_assistant(flat, len(derived.flat))
    if latest > settled:
        prefix = [*prefix, *order_tool_results(flat[settled:latest])]
        settled = latest
    view = ContextView(
        head=old.head,
        entries=[*old.entries, *added],
        contributions=old.contributions | contributions,
        messages=[*prefix, *order_tool_results(flat[settled:])],
        # R74 and R75 move tool results and hoist system messages past users only:
        # the system messages keep their order, so the replay grows with ``flat``.
        prompt=old.prompt.extended(flat[len(derived.flat) :]),
    )
    return DerivedRange(view, edits, flat, settled, prefix)


def _last_assistant(messages: Sequence[JsonObject], start: int) -> int:
    """The index of the last assistant message at or after ``start``; -1 without one."""
    for index in range(len(messages) - 1, start - 1, -1):
        if messages[index].get("role") == "assistant":
            return index
    return -1


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
    # Two linear passes (every request derives the whole range): first the results
    # of each assistant, found before the next assistant; then the new order.
    results_of: dict[int, dict[str, JsonObject]] = {}
    current: dict[str, JsonObject] | None = None
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            current = results_of[index] = {}
        elif role == "toolResult" and current is not None:
            current.setdefault(message.get("tool_call_id", ""), message)
    ordered: list[JsonObject] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "toolResult":
            continue
        ordered.append(message)
        if role != "assistant":
            continue
        results = results_of[index]
        for call in tool_calls(message):
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
