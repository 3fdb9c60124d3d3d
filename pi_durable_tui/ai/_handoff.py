"""Cross-provider handoff: rewriting a history so the target model accepts it.

Owns ``transform_messages`` and ``normalize_tool_call_id``. Every HTTP
provider applies ``transform_messages`` before converting messages to its wire
format. Implements model-layer.md 1.10:

- errored and aborted assistant turns are dropped (with any results of their
  tool calls, which would otherwise be orphans the APIs reject);
- thinking from the same model (same provider, api and model id) keeps its
  signature for replay; thinking from another model becomes plain text, and
  redacted or empty thinking is dropped;
- tool-call ids are normalized to what the target accepts, and tool results are
  remapped to the new ids;
- a tool call left without a result gets a synthetic error result ("No result
  provided") before the next user or assistant turn, or at the end;
- images become a text placeholder for a model without image input.

The input messages are never mutated; changed messages are copies.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from pi_durable_tui.ai._types import (
    AssistantContent,
    AssistantMessage,
    ImageContent,
    Message,
    Model,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
)

NO_RESULT_TEXT = "No result provided"
IMAGE_PLACEHOLDER = "(image omitted: this model does not accept images)"

ANTHROPIC_ID_LIMIT = 64
CHAT_ID_LIMIT = 40
RESPONSES_CALL_ID_LIMIT = 64

_INVALID_ID_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def _digest(text: str, size: int) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:size]


def _safe_id(original: str, part: str, limit: int) -> str:
    """Restrict ``part`` to ``[A-Za-z0-9_-]`` and ``limit`` characters, staying unique."""
    cleaned = _INVALID_ID_CHARS.sub("_", part)
    if not cleaned:
        return "call_" + _digest(original, 16)
    if len(cleaned) <= limit:
        return cleaned
    # A cut id could collide with another cut id: keep a digest of the original.
    return cleaned[: limit - 9] + "_" + _digest(original, 8)


def normalize_tool_call_id(call_id: str, target: Model, *, same_model: bool) -> str:
    """Return the id a tool call gets when sent to ``target``.

    Args:
        call_id: The stored id (for OpenAI Responses: ``call_id|item_id``).
        target: The model the history is sent to.
        same_model: Whether the call was made by ``target`` itself.

    Returns:
        Anthropic: ``[A-Za-z0-9_-]{1,64}``. Chat Completions: the call part, at
        most 40 characters. Responses: ``call_id|item_id``, keeping the item id
        only for the same model and otherwise deriving ``fc_<digest>``. Other
        APIs: unchanged.
    """
    call_part = call_id.split("|", 1)[0]
    if target.api == "anthropic-messages":
        return _safe_id(call_id, call_part, ANTHROPIC_ID_LIMIT)
    if target.api == "openai-completions":
        return _safe_id(call_id, call_part, CHAT_ID_LIMIT)
    if target.api == "openai-responses":
        if same_model and "|" in call_id:
            return call_id
        # REMINDER: a foreign item id must not be replayed: OpenAI ties fc_ items to
        # the reasoning items that preceded them, which other models do not send.
        safe_call = _safe_id(call_id, call_part, RESPONSES_CALL_ID_LIMIT)
        return f"{safe_call}|fc_{_digest(call_id, 24)}"
    return call_id


def is_same_model(message: AssistantMessage, target: Model) -> bool:
    """Tell whether ``message`` was produced by ``target`` (provider, api and id)."""
    return (
        message.provider == target.provider
        and message.api == target.api
        and message.model == target.id
    )


def transform_messages(messages: Sequence[Message], target: Model) -> list[Message]:
    """Rewrite a history for ``target`` (model-layer.md 1.10).

    Args:
        messages: The conversation, oldest first.
        target: The model the next request goes to.

    Returns:
        A new list; unchanged messages are the same objects, changed ones copies.
    """
    accepts_images = "image" in target.input
    id_map: dict[str, str] = {}
    pending: dict[str, ToolCall] = {}
    pending_timestamp = 0
    result: list[Message] = []

    def flush_pending() -> None:
        for call in pending.values():
            result.append(
                ToolResultMessage(
                    tool_call_id=call.id,
                    tool_name=call.name,
                    content=[TextContent(text=NO_RESULT_TEXT)],
                    is_error=True,
                    timestamp=pending_timestamp,
                )
            )
        pending.clear()

    for message in messages:
        if isinstance(message, UserMessage):
            flush_pending()
            result.append(_user_for(message, accepts_images))
        elif isinstance(message, AssistantMessage):
            flush_pending()
            if message.stop_reason in ("error", "aborted"):
                continue
            converted = _assistant_for(message, target, id_map)
            if converted is None:
                continue
            for block in converted.content:
                if isinstance(block, ToolCall):
                    pending[block.id] = block
            pending_timestamp = message.timestamp
            result.append(converted)
        else:
            new_id = id_map.get(message.tool_call_id)
            if new_id is None or new_id not in pending:
                continue  # its call was dropped, or it is a duplicate result
            del pending[new_id]
            result.append(_tool_result_for(message, new_id, accepts_images))
    flush_pending()
    return result


def _assistant_for(
    message: AssistantMessage, target: Model, id_map: dict[str, str]
) -> AssistantMessage | None:
    same_model = is_same_model(message, target)
    blocks: list[AssistantContent] = []
    changed = False
    for block in message.content:
        if isinstance(block, ThinkingContent):
            if same_model and (
                block.redacted or block.thinking_signature or block.thinking.strip()
            ):
                blocks.append(block)
                continue
            changed = True
            if not same_model and not block.redacted and block.thinking.strip():
                blocks.append(TextContent(text=block.thinking))
        elif isinstance(block, TextContent):
            if not same_model and block.text_signature is not None:
                changed = True
                blocks.append(block.model_copy(update={"text_signature": None}))
            else:
                blocks.append(block)
        else:
            new_id = normalize_tool_call_id(block.id, target, same_model=same_model)
            id_map[block.id] = new_id
            if new_id != block.id:
                changed = True
                blocks.append(block.model_copy(update={"id": new_id}))
            else:
                blocks.append(block)
    if not blocks:
        return None
    return message.model_copy(update={"content": blocks}) if changed else message


def _content_for(
    content: list[UserContent], accepts_images: bool
) -> tuple[list[UserContent], bool]:
    if accepts_images or not any(isinstance(part, ImageContent) for part in content):
        return content, False
    replaced: list[UserContent] = [
        TextContent(text=IMAGE_PLACEHOLDER) if isinstance(part, ImageContent) else part
        for part in content
    ]
    return replaced, True


def _user_for(message: UserMessage, accepts_images: bool) -> UserMessage:
    if isinstance(message.content, str):
        return message
    content, changed = _content_for(message.content, accepts_images)
    return message.model_copy(update={"content": content}) if changed else message


def _tool_result_for(
    message: ToolResultMessage, new_id: str, accepts_images: bool
) -> ToolResultMessage:
    content, changed = _content_for(message.content, accepts_images)
    if not changed and new_id == message.tool_call_id:
        return message
    return message.model_copy(update={"content": content, "tool_call_id": new_id})
