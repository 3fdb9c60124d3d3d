"""Building the entries the harness appends (reference 1.4, R98).

Messages are stored as the model layer's pydantic types dumped to JSON; a
``pi.tool-result`` message carries the tool's diagnostics twice: as data
(``{"diagnostics": [...]}``, for applications) and as one final text item (the
``<harness>`` block, for the model), so the stored message is exactly what the
model sees (R98).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pi_durable_tui.ai import AssistantMessage, ToolResultMessage, UserMessage
from pi_durable_tui.harness.extensions import Diagnostic
from pi_durable_tui.harness.state._docs import ASSISTANT, TOOL_RESULT, USER
from pi_durable_tui.kernel import Tx
from pi_durable_tui.storage.json_ops import Json, JsonObject
from pi_durable_tui.storage.records import EntryRecord


def dump(message: UserMessage | AssistantMessage | ToolResultMessage) -> JsonObject:
    """Return a message as stored in an entry."""
    return message.model_dump(mode="json", exclude_none=True)


def user_message(content: Json, timestamp_ms: float) -> JsonObject:
    """Return a stored user message with ``content`` (text or block dicts)."""
    return {"role": "user", "content": content, "timestamp": int(timestamp_ms)}


def append_user(tx: Tx, conversation_id: int, content: Json, timestamp_ms: float) -> EntryRecord:
    """Append a ``pi.user`` entry; its timestamp is the clock at placement (R62)."""
    return tx.append(conversation_id, USER, model=[user_message(content, timestamp_ms)])


def append_assistant(tx: Tx, conversation_id: int, message: JsonObject) -> EntryRecord:
    """Append a ``pi.assistant`` entry holding one message (any stop reason)."""
    return tx.append(conversation_id, ASSISTANT, model=[message])


def render_diagnostics(diagnostics: Sequence[Diagnostic]) -> str:
    """Return the ``<harness>`` block the model reads (R98)."""
    lines = [f"[{d.severity}] {d.message}" for d in diagnostics]
    return "<harness>\n" + "\n".join(lines) + "\n</harness>"


def tool_result_message(
    *,
    call_id: str,
    tool_name: str,
    content: list[JsonObject],
    diagnostics: Sequence[Diagnostic],
    is_error: bool,
    timestamp_ms: float,
    details: Json = None,
    usage: JsonObject | None = None,
    duration_ms: int | None = None,
) -> JsonObject:
    """Return a stored tool-result message (R98)."""
    items = list(content)
    if diagnostics:
        items.append({"type": "text", "text": render_diagnostics(diagnostics)})
    message: dict[str, Any] = {
        "role": "toolResult",
        "tool_call_id": call_id,
        "tool_name": tool_name,
        "content": items,
        "is_error": is_error,
        "timestamp": int(timestamp_ms),
    }
    if details is not None:
        message["details"] = details
    if usage is not None:
        message["usage"] = usage
    if duration_ms is not None:
        message["duration_ms"] = duration_ms
    return message


def append_tool_result(
    tx: Tx, conversation_id: int, message: JsonObject, diagnostics: Sequence[Diagnostic]
) -> EntryRecord:
    """Append a ``pi.tool-result`` entry with its diagnostics as data (R98)."""
    return tx.append(
        conversation_id,
        TOOL_RESULT,
        model=[message],
        data={"diagnostics": [d.to_json() for d in diagnostics]},
    )


def message_of(entry: EntryRecord) -> JsonObject | None:
    """Return the single message an entry contributes, if any."""
    if entry.model and isinstance(entry.model[0], dict):
        return entry.model[0]
    return None


def text_of(message: JsonObject | None) -> str:
    """Return the text of a stored message's text blocks (or its string content)."""
    if message is None:
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            block.get("text", "")
            for block in content
            if isinstance(block, dict) and block.get("type") == "text"
        )
    return ""
