"""The Anthropic Messages provider (api ``anthropic-messages``).

Owns ``AnthropicProvider``: the request (system prompt, tools, thinking,
prompt-caching breakpoints, messages converted after the handoff rewrite) and
the parser of the named SSE events. Implements model-layer.md 2.4, with the stop
reasons and errors of 1.4, the usage of 1.5, the thinking of 1.8 and the
handoff of 1.10.

Prompt caching: with ``cache_retention`` ``short`` (5 minutes) or ``long``
(``ttl: 1h``), breakpoints go on the system prompt (on the last tool when
there is no system prompt) and on the last block of each of the two newest
user-role messages, so a request reads the cache the previous one wrote even
after a long tool round. ``none`` sends no marker.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from httpx_sse import ServerSentEvent

from pi_durable_tui.ai._events import AssistantEvent
from pi_durable_tui.ai._handoff import transform_messages
from pi_durable_tui.ai._thinking import anthropic_thinking, compat_value, is_adaptive_anthropic
from pi_durable_tui.ai._types import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolResultMessage,
    UserContent,
)
from pi_durable_tui.ai.providers._sse import (
    DoneReason,
    MessageAssembly,
    PreparedRequest,
    SseProvider,
    WireParser,
    output_limit,
    parse_event_data,
)
from pi_durable_tui.ai.providers._transport import StreamFailure, secrets_of

API = "anthropic-messages"
DEFAULT_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 32000
"""Output budget when neither the options nor the model say (capped by the model)."""
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
REDACTED_THINKING_TEXT = "[Reasoning redacted]"
MAX_MESSAGE_BREAKPOINTS = 2

_STOP_REASONS: dict[str, DoneReason] = {
    "end_turn": "stop",
    "pause_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "toolUse",
}

_ERROR_STATUSES = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


class AnthropicProvider(SseProvider):
    """Streams Anthropic Messages responses over HTTP.

    Args:
        keys: Resolves the API key of a provider name at request time.
        client: The shared HTTP client; a new one is created when ``None``.
    """

    api = API

    def parser(self, assembly: MessageAssembly) -> WireParser:
        """Return the AnthropicParser of one response."""
        return AnthropicParser(assembly)

    def prepare(self, model: Model, context: Context, options: StreamOptions) -> PreparedRequest:
        """Build the HTTP request (see ``SseProvider.prepare``)."""
        base_url = (model.base_url or DEFAULT_BASE_URL).rstrip("/")
        key = self.api_key(model)
        if not key and base_url == DEFAULT_BASE_URL:
            raise StreamFailure(
                f"No API key for provider {model.provider!r}: set ANTHROPIC_API_KEY"
            )
        body, betas = build_request_body(model, context, options)
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            "anthropic-version": ANTHROPIC_VERSION,
        }
        if key:
            headers["x-api-key"] = key
        if betas:
            headers["anthropic-beta"] = ",".join(betas)
        headers.update(model.headers)
        url = base_url + ("/messages" if base_url.endswith("/v1") else "/v1/messages")
        return PreparedRequest(url=url, headers=headers, body=body, secrets=secrets_of(headers))


def build_request_body(
    model: Model, context: Context, options: StreamOptions
) -> tuple[dict[str, Any], list[str]]:
    """Build the JSON body of a Messages request.

    Args:
        model: The target model.
        context: System prompt, messages and tools.
        options: Per-request options (thinking level, caching, limits).

    Returns:
        The body and the ``anthropic-beta`` flags it needs.
    """
    base_max = output_limit(model, options, cap=DEFAULT_MAX_TOKENS) or DEFAULT_MAX_TOKENS
    thinking = anthropic_thinking(model, options.reasoning, base_max)
    marker = cache_marker(options.cache_retention)
    body: dict[str, Any] = {
        "model": model.id,
        "max_tokens": thinking.max_tokens,
        "stream": True,
        "messages": convert_messages(transform_messages(context.messages, model), marker),
    }
    if context.system_prompt:
        system: dict[str, Any] = {"type": "text", "text": context.system_prompt}
        if marker:
            system["cache_control"] = marker
        body["system"] = [system]
    if context.tools:
        tools: list[dict[str, Any]] = [
            {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}
            for tool in context.tools
        ]
        if marker and not context.system_prompt:
            tools[-1]["cache_control"] = marker
        body["tools"] = tools
    if thinking.thinking is not None:
        body["thinking"] = thinking.thinking
    if thinking.output_config is not None:
        body["output_config"] = thinking.output_config
    if options.temperature is not None and not thinking.enabled:
        body["temperature"] = options.temperature
    betas = list(compat_value(model, "anthropic_betas", []))
    if thinking.enabled and not is_adaptive_anthropic(model) and context.tools:
        betas.append(INTERLEAVED_THINKING_BETA)
    return body, betas


def cache_marker(retention: str) -> dict[str, Any] | None:
    """Return the ``cache_control`` value for a retention, or ``None`` for ``none``."""
    if retention == "none":
        return None
    if retention == "long":
        return {"type": "ephemeral", "ttl": "1h"}
    return {"type": "ephemeral"}


def convert_messages(
    messages: Iterable[Message], marker: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """Convert (already transformed) messages to Anthropic's wire messages.

    Consecutive tool results are grouped into one user message; empty text is
    skipped (the API refuses it); thinking without a signature is sent as text.

    Args:
        messages: Messages after ``transform_messages``.
        marker: The ``cache_control`` value for the newest user-role messages.

    Returns:
        The wire messages.
    """
    wire: list[dict[str, Any]] = []
    grouping_results = False
    for message in messages:
        if isinstance(message, ToolResultMessage):
            block = _tool_result_block(message)
            if grouping_results:
                wire[-1]["content"].append(block)
            else:
                wire.append({"role": "user", "content": [block]})
                grouping_results = True
            continue
        grouping_results = False
        if isinstance(message, AssistantMessage):
            blocks = _assistant_blocks(message)
            if blocks:
                wire.append({"role": "assistant", "content": blocks})
        else:
            parts = (
                [TextContent(text=message.content)]
                if isinstance(message.content, str)
                else message.content
            )
            blocks = _user_blocks(parts)
            if blocks:
                wire.append({"role": "user", "content": blocks})
    if marker:
        marked = 0
        for entry in reversed(wire):
            if marked == MAX_MESSAGE_BREAKPOINTS:
                break
            if entry["role"] == "user":
                entry["content"][-1]["cache_control"] = marker
                marked += 1
    return wire


def _user_blocks(parts: Iterable[UserContent]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, ImageContent):
            blocks.append(
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": part.mime_type, "data": part.data},
                }
            )
        elif part.text:
            blocks.append({"type": "text", "text": part.text})
    return blocks


def _tool_result_block(message: ToolResultMessage) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
    content = _user_blocks(message.content)
    if content:
        block["content"] = content
    if message.is_error:
        block["is_error"] = True
    return block


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text:
                blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent):
            if block.redacted:
                if block.thinking_signature:
                    blocks.append({"type": "redacted_thinking", "data": block.thinking_signature})
            elif block.thinking_signature:
                blocks.append(
                    {
                        "type": "thinking",
                        "thinking": block.thinking,
                        "signature": block.thinking_signature,
                    }
                )
            elif block.thinking.strip():
                # An unsigned block (cut off by an abort) cannot be replayed as thinking.
                blocks.append({"type": "text", "text": block.thinking})
        else:
            blocks.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.arguments}
            )
    return blocks


class AnthropicParser:
    """Turns Anthropic's named SSE events into stream events.

    Args:
        assembly: The message under construction.
    """

    def __init__(self, assembly: MessageAssembly) -> None:
        self._assembly = assembly
        self._blocks: dict[int, int | None] = {}
        """Wire block index to content index (``None``: a block type we skip)."""
        self._stop_reason: str | None = None
        self._usage = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
        self.finished = False

    def feed(self, event: ServerSentEvent) -> list[AssistantEvent]:
        """Handle one server-sent event (see ``WireParser.feed``)."""
        if event.event == "ping":
            return []
        data = parse_event_data(event)
        kind = data.get("type") or event.event
        if kind == "content_block_delta":
            return self._delta(data)
        if kind == "content_block_start":
            return self._block_start(data)
        if kind == "content_block_stop":
            content_index = self._blocks.get(int(data.get("index", 0)))
            if content_index is None or not self._assembly.is_open(content_index):
                return []
            return [self._assembly.close(content_index)]
        if kind == "message_start":
            message = data.get("message") or {}
            if isinstance(message.get("id"), str):
                self._assembly.message.response_id = message["id"]
            self._update_usage(message.get("usage"))
            return []
        if kind == "message_delta":
            delta = data.get("delta") or {}
            if delta.get("stop_reason"):
                self._stop_reason = str(delta["stop_reason"])
            self._update_usage(data.get("usage"))
            return []
        if kind == "message_stop":
            return self._finish()
        if kind == "error":
            raise _error_event_failure(data.get("error"))
        return []  # ping and event types newer than this parser

    def end(self) -> list[AssistantEvent]:
        """Fail: the body ended before ``message_stop``."""
        raise StreamFailure(
            "The stream ended before message_stop: the response is incomplete", retryable=True
        )

    def _block_start(self, data: dict[str, Any]) -> list[AssistantEvent]:
        assembly = self._assembly
        wire_index = int(data.get("index", len(self._blocks)))
        block = data.get("content_block") or {}
        kind = block.get("type")
        if kind == "text":
            index, event = assembly.open_text()
            self._blocks[wire_index] = index
            events: list[AssistantEvent] = [event]
            if block.get("text"):
                events.append(assembly.add_text(index, str(block["text"])))
            return events
        if kind == "thinking":
            index, thinking_start = assembly.open_thinking(signature=block.get("signature") or None)
            self._blocks[wire_index] = index
            return [thinking_start]
        if kind == "redacted_thinking":
            index, thinking_start = assembly.open_thinking(
                text=REDACTED_THINKING_TEXT, signature=str(block.get("data", "")), redacted=True
            )
            self._blocks[wire_index] = index
            return [thinking_start]
        if kind == "tool_use":
            given = block.get("input")
            index, call_start = assembly.open_tool_call(
                str(block.get("id", "")),
                str(block.get("name", "")),
                given if isinstance(given, dict) else None,
            )
            self._blocks[wire_index] = index
            return [call_start]
        self._blocks[wire_index] = None  # server tools, citations...: not ours to show
        return []

    def _delta(self, data: dict[str, Any]) -> list[AssistantEvent]:
        content_index = self._blocks.get(int(data.get("index", 0)))
        if content_index is None or not self._assembly.is_open(content_index):
            return []
        delta = data.get("delta") or {}
        kind = delta.get("type")
        assembly = self._assembly
        if kind == "text_delta":
            return [assembly.add_text(content_index, str(delta.get("text", "")))]
        if kind == "input_json_delta":
            fragment = str(delta.get("partial_json", ""))
            return [assembly.add_tool_arguments(content_index, fragment)] if fragment else []
        if kind == "thinking_delta":
            return [assembly.add_thinking(content_index, str(delta.get("thinking", "")))]
        if kind == "signature_delta":
            block = assembly.thinking(content_index)
            block.thinking_signature = (block.thinking_signature or "") + str(
                delta.get("signature", "")
            )
        return []

    def _update_usage(self, usage: Any) -> None:
        # REMINDER: message_delta usage is cumulative: each present field replaces
        # the value from message_start, it is never added to it.
        if not isinstance(usage, dict):
            return
        for wire_name, name in (
            ("input_tokens", "input"),
            ("output_tokens", "output"),
            ("cache_read_input_tokens", "cache_read"),
            ("cache_creation_input_tokens", "cache_write"),
        ):
            value = usage.get(wire_name)
            if isinstance(value, int):
                self._usage[name] = value
        self._assembly.set_usage(**self._usage)

    def _finish(self) -> list[AssistantEvent]:
        self.finished = True
        reason = self._stop_reason or "end_turn"
        mapped = _STOP_REASONS.get(reason)
        if mapped is not None:
            return self._assembly.finish(mapped)
        if reason in ("refusal", "sensitive"):
            text = f"The model declined to respond (stop reason {reason})"
        else:
            text = f"Unknown stop reason from the Anthropic API: {reason}"
        raise StreamFailure(text, retryable=False)


def _error_event_failure(error: Any) -> StreamFailure:
    if not isinstance(error, dict):
        return StreamFailure(f"Error event from the Anthropic API: {error!r}")
    kind = str(error.get("type", "error"))
    text = str(error.get("message", "")) or kind
    return StreamFailure(f"{kind}: {text}", status=_ERROR_STATUSES.get(kind))
