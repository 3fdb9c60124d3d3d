"""How the examples print a transcript: one short line per entry, as a screen might list it."""

from __future__ import annotations

from typing import Any

from pi_durable_tui.harness import SYSTEM
from pi_durable_tui.storage import EntryRecord


def block_text(block: dict[str, Any]) -> str:
    """The visible text of one content block (a tool call as ``name(arguments)``)."""
    if block.get("type") == "tool_call":
        return f"{block['name']}({block['arguments']})"
    return str(block.get("text") or block.get("thinking") or "")


def message_text(message: dict[str, Any]) -> str:
    """The text of a stored message, blocks joined, whitespace folded to single spaces."""
    content = message.get("content")
    if isinstance(content, list):
        content = " ".join(block_text(block) for block in content)
    return " ".join(str(content or "").split())


def message_of(entry: EntryRecord) -> dict[str, Any]:
    """The entry's first model message (``{}`` for an entry that gives the model nothing)."""
    message = entry.model[0] if entry.model else None
    return message if isinstance(message, dict) else {}


def entry_line(entry: EntryRecord) -> str:
    """One line for an entry: its kind, what it says, and a stop reason other than the usual."""
    message = message_of(entry)
    if not message:
        return f"{entry.kind}: {entry.data}"
    text = message_text(message)
    reason = message.get("stop_reason")
    if reason not in (None, "stop", "toolUse"):
        text = f"[{reason}] {text} {message.get('error_message') or ''}".strip()
    return f"{entry.kind}: {text}"


def print_transcript(entries: list[EntryRecord], indent: str = "  ") -> None:
    """Print entries oldest first, leaving out system prompt entries."""
    for entry in sorted(entries, key=lambda e: e.id):
        if entry.kind != SYSTEM:
            print(indent + entry_line(entry))
