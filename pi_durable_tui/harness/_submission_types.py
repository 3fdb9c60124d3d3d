"""What a host submits to a conversation: an ``Input`` or a ``Write`` (reference 1.8).

- ``Input(content, request_id=None, when_busy="follow_up")``: user input. Idle, it
  is placed at once and starts a run; busy, it queues as a steer (placed after the
  current tool round) or a follow-up (placed when the run answers), or it is
  refused with ``ConversationBusy`` (``when_busy="reject"``) (R59, R60).
- ``Write(entry, request_id=None)``: an entry to append (a reset, a compaction
  summary, an application note). It never starts a run by itself (R60).

A ``request_id`` makes a submission idempotent in its conversation: submitting the
same ID again returns the existing submission and writes nothing (R59).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pi_durable_tui.ai import ImageContent, TextContent
from pi_durable_tui.storage.json_ops import Json, JsonObject

WhenBusy = Literal["steer", "follow_up", "reject"]
"""What an input does when the conversation is busy: steer, follow up, or refuse (R59)."""


@dataclass(frozen=True, slots=True)
class EntryDraft:
    """An entry to append, as plain JSON-compatible values (reference 1.4).

    Args:
        kind: The entry kind.
        model: Messages the entry contributes to model context.
        data: Application JSON.
        head: Makes the entry a head marker: an entry ID, or ``"self"``.
        edits: Context edits.
    """

    kind: str
    model: list[Any] | None = None
    data: Json = None
    head: int | Literal["self"] | None = None
    edits: list[Any] | None = None

    def to_json(self) -> JsonObject:
        """Return the draft as stored in an inbox item."""
        data: JsonObject = {"kind": self.kind}
        for key in ("model", "data", "head", "edits"):
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        return data

    @classmethod
    def from_json(cls, data: JsonObject) -> EntryDraft:
        """Build a draft from an inbox item's ``entry``."""
        return cls(
            kind=data["kind"],
            model=data.get("model"),
            data=data.get("data"),
            head=data.get("head"),
            edits=data.get("edits"),
        )


@dataclass(frozen=True, slots=True)
class Input:
    """User input for a conversation.

    Args:
        content: Text, or text and image blocks.
        request_id: Makes the submission idempotent in its conversation.
        when_busy: ``follow_up`` (default), ``steer`` or ``reject``.
    """

    content: str | Sequence[TextContent | ImageContent]
    request_id: str | None = None
    when_busy: WhenBusy = "follow_up"

    def content_json(self) -> Json:
        """Return the content as stored (a string, or a list of block dicts)."""
        if isinstance(self.content, str):
            return self.content
        return [block.model_dump(mode="json", exclude_none=True) for block in self.content]


@dataclass(frozen=True, slots=True)
class Write:
    """An entry to append when the conversation reaches a boundary.

    Args:
        entry: The entry draft.
        request_id: Makes the submission idempotent in its conversation.
    """

    entry: EntryDraft
    request_id: str | None = None
