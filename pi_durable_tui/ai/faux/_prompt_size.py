"""``PromptSizes``: the length of ``serialize_context`` without building it, per message cached.

The faux provider estimates a request's input tokens from the characters of its
serialised context. Serialising the whole context for every request cost 13 ms
of a 40 ms turn at 1,000 rounds (issue 14); a conversation's messages are the
same objects from one request to the next, so each message's share is counted
once and kept, keyed by the object (held, so its ``id`` cannot be reused), and the
messages and tools of the last request are remembered whole, so the next one that
repeats them (the same messages, equal tools: the harness copies its tool specs for
every request) counts only what it added.

# REMINDER: ``chars(context)`` must equal ``len(serialize_context(context))``
# (tests/ai/faux/test_prompt_size.py pins it); a message changed in place after it
# was counted keeps its old count, which only the estimate would notice.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from pi_durable_tui.ai._types import Context
from pi_durable_tui.ai.faux._steps import message_parts, tool_text

KEPT = 16_384
"""How many messages and tools the cache holds."""


class PromptSizes:
    """Counts the serialised characters of contexts, remembering each message's share."""

    def __init__(self) -> None:
        self._kept: OrderedDict[int, tuple[Any, int, int]] = OrderedDict()
        self._last: dict[str, tuple[list[Any], int, int]] = {}
        """Per kind (tools, messages): the last context's items, their characters and parts."""

    def _share(self, item: Any, measure: Any) -> tuple[int, int]:
        """``(characters, parts)`` of one message or tool."""
        key = id(item)
        found = self._kept.get(key)
        if found is not None and found[0] is item:
            return found[1], found[2]
        parts = measure(item)
        share = (sum(len(part) for part in parts), len(parts))
        self._kept[key] = (item, *share)
        while len(self._kept) > KEPT:
            self._kept.popitem(last=False)
        return share

    def _counted(self, kind: str, items: Any, measure: Any) -> tuple[int, int]:
        """``(characters, parts)`` of a context's tools or messages."""
        items = list(items)
        known, chars, parts = self._last.get(kind, ([], 0, 0))
        # A conversation's next request repeats the last one's items and adds some:
        # the list comparison (identity first, in C; tools are equal copies) finds
        # that prefix without a lookup per item, so a request costs its new ones.
        if not (len(known) <= len(items) and items[: len(known)] == known):
            known, chars, parts = [], 0, 0
        for item in items[len(known) :]:
            share, pieces = self._share(item, measure)
            chars, parts = chars + share, parts + pieces
        self._last[kind] = (items, chars, parts)
        return chars, parts

    def chars(self, context: Context) -> int:
        """Return ``len(serialize_context(context))``."""
        tools, tool_parts = self._counted("tools", context.tools, lambda t: [tool_text(t)])
        chars, parts = self._counted("messages", context.messages, message_parts)
        total = len(context.system_prompt or "") + tools + chars
        return total + 1 + tool_parts + parts - 1  # the newlines between the parts
