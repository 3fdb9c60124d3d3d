"""Builders of stored messages and entries for the harness's pure-function tests.

Messages are made with the ``pi_durable_tui.ai`` types and stored the way the
harness stores them (``model_dump(mode="json", exclude_none=True)``), so the tests
read the same dicts the harness will.
"""

from __future__ import annotations

from typing import Any

from pi_durable_tui.ai import (
    AssistantMessage,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from pi_durable_tui.harness.context._context import ContextView, active_range, derive_range
from pi_durable_tui.storage import EntryRecord, Json, JsonObject


def user(text: str, timestamp: int = 1) -> JsonObject:
    return UserMessage(content=[TextContent(text=text)], timestamp=timestamp).model_dump(
        mode="json", exclude_none=True
    )


def assistant(
    text: str = "",
    *,
    calls: tuple[tuple[str, str], ...] | list[tuple[str, str]] = (),
    arguments: dict[str, Any] | None = None,
    thinking: str = "",
    stop_reason: StopReason | str = "stop",
    usage: Usage | None = None,
    timestamp: int = 2,
) -> JsonObject:
    """An assistant message; ``calls`` are ``(call id, tool name)`` pairs."""
    content: list[Any] = []
    if thinking:
        content.append(ThinkingContent(thinking=thinking))
    if text:
        content.append(TextContent(text=text))
    content += [ToolCall(id=cid, name=name, arguments=arguments or {}) for cid, name in calls]
    message = AssistantMessage(
        content=content, api="faux", provider="faux", model="m", usage=usage or Usage()
    ).model_dump(mode="json", exclude_none=True)
    # set after validation: "deferred" (R73) is not an ai StopReason
    message["stop_reason"] = "toolUse" if calls and stop_reason == "stop" else stop_reason
    message["timestamp"] = timestamp
    return message


def result(call_id: str, name: str = "read", text: str = "ok", timestamp: int = 3) -> JsonObject:
    return ToolResultMessage(
        tool_call_id=call_id,
        tool_name=name,
        content=[TextContent(text=text)],
        timestamp=timestamp,
    ).model_dump(mode="json", exclude_none=True)


def entry(
    entry_id: int,
    kind: str,
    *messages: JsonObject,
    head: int | None = None,
    edits: list[JsonObject] | None = None,
    conversation_id: int = 1,
) -> EntryRecord:
    return EntryRecord(
        entry_id,
        conversation_id,
        kind,
        model=list[Json](messages) if messages else None,
        head=head,
        edits=None if edits is None else list[Json](edits),
    )


def user_entry(entry_id: int, text: str) -> EntryRecord:
    return entry(entry_id, "pi.user", user(text))


def assistant_entry(entry_id: int, text: str = "", **options: Any) -> EntryRecord:
    return entry(entry_id, "pi.assistant", assistant(text, **options))


def result_entry(entry_id: int, call_id: str, name: str = "read", text: str = "ok") -> EntryRecord:
    return entry(entry_id, "pi.tool-result", result(call_id, name, text))


def system_entry(
    entry_id: int,
    sections: dict[str, str | None] | None = None,
    *,
    tools_added: list[JsonObject] | None = None,
    tools_removed: list[str] | None = None,
    edits: list[JsonObject] | None = None,
) -> EntryRecord:
    message: JsonObject = {
        "role": "system",
        "content": "",
        "sections": sections or {},
        "tools_added": tools_added or [],
        "tools_removed": [{"name": name} for name in tools_removed or []],
    }
    return entry(entry_id, "pi.system", message, edits=edits)


def tool(name: str, description: str = "", **properties: Any) -> JsonObject:
    return {
        "name": name,
        "description": description or f"The {name} tool.",
        "parameters": {"type": "object", "properties": properties},
    }


def texts(messages: list[JsonObject]) -> list[str]:
    """A compact rendering of messages for assertions: role and text (or tool call ids)."""
    rendered = []
    for message in messages:
        role = message["role"]
        if role == "system":
            rendered.append(f"system:{','.join(message.get('sections') or {})}")
        elif role == "toolResult":
            rendered.append(f"result:{message['tool_call_id']}")
        else:
            content = message["content"]
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            parts = [str(b.get("text") or b.get("id")) for b in blocks if b["type"] != "thinking"]
            rendered.append(f"{role}:{'+'.join(parts)}")
    return rendered


def view_of(*entries: EntryRecord) -> ContextView:
    """The context of a visible history, entries ascending (R71-R76)."""
    return derive_range(active_range(entries)).view
