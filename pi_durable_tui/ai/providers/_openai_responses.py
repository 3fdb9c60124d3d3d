"""The OpenAI Responses provider (api ``openai-responses``).

Owns ``OpenAIResponsesProvider``: the stateless request (``store: false`` with
``include: ["reasoning.encrypted_content"]``, reasoning effort and summaries,
function tools, replayed reasoning/message/function-call items) and the parser
of the typed SSE events. Implements model-layer.md 2.3, with the status mapping
of 1.4, the usage and service-tier pricing of 1.5, the reasoning of 1.8 and
the handoff of 1.10.

Replay conventions: a thinking block's signature is the whole reasoning item as
JSON (sent back verbatim, encrypted content included); a text block's signature
is its message item id; a tool call's id is ``call_id|item_id``. Assistant text
is always sent as a ``message`` item of ``output_text`` parts (with its id when
signed), the one form both OpenAI and llama-server accept.

``model.compat`` switches, defaults for the official endpoint / other servers:
``supports_store`` (yes / no), ``supports_strict_mode`` (yes / no),
``supports_developer_role`` (reasoning models / no),
``supports_prompt_cache_key`` (yes / no).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from httpx_sse import ServerSentEvent

from pi_durable_tui.ai._events import AssistantEvent
from pi_durable_tui.ai._handoff import transform_messages
from pi_durable_tui.ai._thinking import compat_value, openai_reasoning_effort
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
from pi_durable_tui.ai.providers._openai_completions import is_official_openai, openai_request
from pi_durable_tui.ai.providers._sse import (
    MessageAssembly,
    PreparedRequest,
    SseProvider,
    WireParser,
    output_limit,
    parse_event_data,
)
from pi_durable_tui.ai.providers._transport import StreamFailure

API = "openai-responses"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
TOOL_IMAGES_TEXT = "Images returned by the tool calls above:"
SERVICE_TIER_MULTIPLIERS = {"flex": 0.5, "priority": 2.0}

_ERROR_STATUSES = {
    "rate_limit_exceeded": 429,
    "server_error": 500,
    "server_is_overloaded": 503,
    "slow_down": 503,
    "context_length_exceeded": 400,
    "invalid_prompt": 400,
}


class OpenAIResponsesProvider(SseProvider):
    """Streams OpenAI Responses API responses over HTTP.

    Args:
        keys: Resolves the API key of a provider name at request time.
        client: The shared HTTP client; a new one is created when ``None``.
    """

    api = API

    def parser(self, assembly: MessageAssembly) -> WireParser:
        """Return the ResponsesParser of one response."""
        return ResponsesParser(assembly)

    def prepare(self, model: Model, context: Context, options: StreamOptions) -> PreparedRequest:
        """Build the HTTP request (see ``SseProvider.prepare``)."""
        return openai_request(
            self, model, "/responses", build_request_body(model, context, options)
        )


def build_request_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """Build the JSON body of a Responses request.

    Args:
        model: The target model.
        context: System prompt, messages and tools.
        options: Per-request options.

    Returns:
        The body.
    """
    official = is_official_openai(model)
    items: list[dict[str, Any]] = []
    if context.system_prompt:
        developer = compat_value(model, "supports_developer_role", official and model.reasoning)
        items.append(
            {"role": "developer" if developer else "system", "content": context.system_prompt}
        )
    items.extend(convert_messages(transform_messages(context.messages, model)))
    body: dict[str, Any] = {"model": model.id, "input": items, "stream": True}
    if compat_value(model, "supports_store", official):
        body["store"] = False
    if model.reasoning:
        effort = openai_reasoning_effort(model, options.reasoning)
        if effort:
            reasoning: dict[str, Any] = {"effort": effort}
            if effort != "none":
                reasoning["summary"] = "auto"
            body["reasoning"] = reasoning
        # Without server-side state, reasoning can only be replayed encrypted.
        body["include"] = ["reasoning.encrypted_content"]
    limit = output_limit(model, options)
    if limit:
        body["max_output_tokens"] = limit
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if context.tools:
        strict = compat_value(model, "supports_strict_mode", official)
        tools = []
        for tool in context.tools:
            spec: dict[str, Any] = {
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            }
            if strict:
                spec["strict"] = False  # our schemas are not written for strict mode
            tools.append(spec)
        body["tools"] = tools
    if (
        options.session_id
        and options.cache_retention != "none"
        and compat_value(model, "supports_prompt_cache_key", official)
    ):
        body["prompt_cache_key"] = options.session_id
        if options.cache_retention == "long":
            body["prompt_cache_retention"] = "24h"
    return body


def convert_messages(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Convert (already transformed) messages to Responses input items.

    Args:
        messages: Messages after ``transform_messages``.

    Returns:
        The input items.
    """
    items: list[dict[str, Any]] = []
    tool_images: list[dict[str, Any]] = []
    for message in messages:
        if not isinstance(message, ToolResultMessage) and tool_images:
            items.append(_images_message(tool_images))
            tool_images = []
        if isinstance(message, ToolResultMessage):
            text = "".join(p.text for p in message.content if isinstance(p, TextContent))
            call_id = message.tool_call_id.split("|", 1)[0]
            items.append({"type": "function_call_output", "call_id": call_id, "output": text})
            tool_images.extend(
                _image_part(p) for p in message.content if isinstance(p, ImageContent)
            )
        elif isinstance(message, AssistantMessage):
            items.extend(_assistant_items(message))
        else:
            parts: list[UserContent] = (
                [TextContent(text=message.content)]
                if isinstance(message.content, str)
                else message.content
            )
            content = [
                _image_part(p) if isinstance(p, ImageContent) else _text_part(p.text) for p in parts
            ]
            if content:
                items.append({"role": "user", "content": content})
    if tool_images:
        items.append(_images_message(tool_images))
    return items


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "input_text", "text": text}


def _image_part(image: ImageContent) -> dict[str, Any]:
    url = f"data:{image.mime_type};base64,{image.data}"
    return {"type": "input_image", "detail": "auto", "image_url": url}


def _images_message(images: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": "user", "content": [_text_part(TOOL_IMAGES_TEXT), *images]}


def _assistant_items(message: AssistantMessage) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, ThinkingContent):
            reasoning = _reasoning_item(block.thinking_signature)
            if reasoning is not None:
                items.append(reasoning)
        elif isinstance(block, TextContent):
            if not block.text:
                continue
            # REMINDER: every assistant text goes as a typed message of output_text
            # parts, signed or not: llama-server's /v1/responses rejects an
            # assistant item without "type": "message" and reads string content
            # as input_text, which it refuses for the assistant role (issue 7).
            text: dict[str, Any] = {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": block.text, "annotations": []}],
            }
            if block.text_signature:
                text.update(id=block.text_signature, status="completed")
            items.append(text)
        else:
            call_id, _, item_id = block.id.partition("|")
            call: dict[str, Any] = {
                "type": "function_call",
                "call_id": call_id,
                "name": block.name,
                "arguments": json.dumps(block.arguments),
            }
            if item_id:
                call["id"] = item_id
            items.append(call)
    return items


def _reasoning_item(signature: str | None) -> dict[str, Any] | None:
    if not signature:
        return None
    try:
        item = json.loads(signature)
    except ValueError:
        return None
    return item if isinstance(item, dict) and item.get("type") == "reasoning" else None


class ResponsesParser:
    """Turns Responses API events into stream events.

    Args:
        assembly: The message under construction.
    """

    def __init__(self, assembly: MessageAssembly) -> None:
        self._assembly = assembly
        self._by_item: dict[str, int] = {}
        self._by_output: dict[int, int] = {}
        self.finished = False

    def feed(self, event: ServerSentEvent) -> list[AssistantEvent]:
        """Handle one event (see ``WireParser.feed``)."""
        data = parse_event_data(event)
        kind = str(data.get("type") or event.event)
        assembly = self._assembly
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            index = self._index(data)
            return [] if index is None else [assembly.add_text(index, str(data.get("delta", "")))]
        if kind == "response.function_call_arguments.delta":
            index = self._index(data)
            fragment = str(data.get("delta", ""))
            if index is None or not fragment:
                return []
            return [assembly.add_tool_arguments(index, fragment)]
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            index = self._index(data)
            return (
                [] if index is None else [assembly.add_thinking(index, str(data.get("delta", "")))]
            )
        if kind == "response.output_item.added":
            return self._item_added(data)
        if kind == "response.output_item.done":
            return self._item_done(data)
        if kind == "response.reasoning_summary_part.added":
            index = self._index(data)
            if index is not None and assembly.thinking(index).thinking:
                return [assembly.add_thinking(index, "\n\n")]
            return []
        if kind == "response.function_call_arguments.done":
            index = self._index(data)
            final = data.get("arguments")
            if (
                index is not None
                and isinstance(final, str)
                and final != assembly.tool_arguments_text(index)
            ):
                assembly.replace_tool_arguments(index, final)
            return []
        if kind in ("response.created", "response.in_progress"):
            response = data.get("response") or {}
            if isinstance(response.get("id"), str):
                assembly.message.response_id = response["id"]
            return []
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            return self._complete(data.get("response") or {})
        if kind == "error":
            code = str(data.get("code") or "error")
            text = str(data.get("message") or code)
            raise StreamFailure(f"{code}: {text}", status=_ERROR_STATUSES.get(code))
        return []

    def end(self) -> list[AssistantEvent]:
        """Fail: the body ended before ``response.completed``."""
        raise StreamFailure(
            "The stream ended before response.completed: the response is incomplete",
            retryable=True,
        )

    def _index(self, data: dict[str, Any]) -> int | None:
        item_id = data.get("item_id")
        index = self._by_item.get(item_id) if isinstance(item_id, str) else None
        if index is None and isinstance(data.get("output_index"), int):
            index = self._by_output.get(data["output_index"])
        if index is None or not self._assembly.is_open(index):
            return None
        return index

    def _register(self, data: dict[str, Any], item: dict[str, Any], index: int) -> None:
        if isinstance(item.get("id"), str):
            self._by_item[item["id"]] = index
        if isinstance(data.get("output_index"), int):
            self._by_output[data["output_index"]] = index

    def _item_added(self, data: dict[str, Any]) -> list[AssistantEvent]:
        item = data.get("item") or {}
        kind = item.get("type")
        assembly = self._assembly
        events: list[AssistantEvent] = []
        if kind == "reasoning":
            index, thinking_start = assembly.open_thinking()
            events.append(thinking_start)
        elif kind == "message":
            index, text_start = assembly.open_text()
            events.append(text_start)
        elif kind == "function_call":
            call_id = str(item.get("call_id") or item.get("id") or "")
            item_id = item.get("id")
            full_id = f"{call_id}|{item_id}" if isinstance(item_id, str) and item_id else call_id
            index, call_start = assembly.open_tool_call(full_id, str(item.get("name", "")))
            events.append(call_start)
            if isinstance(item.get("arguments"), str) and item["arguments"]:
                events.append(assembly.add_tool_arguments(index, item["arguments"]))
        else:
            return []  # web search calls and other hosted items are not shown
        self._register(data, item, index)
        return events

    def _item_done(self, data: dict[str, Any]) -> list[AssistantEvent]:
        item = data.get("item") or {}
        item_id = item.get("id")
        index = self._by_item.get(item_id) if isinstance(item_id, str) else None
        if index is None and isinstance(data.get("output_index"), int):
            index = self._by_output.get(data["output_index"])
        assembly = self._assembly
        if index is None or not assembly.is_open(index):
            return []
        events: list[AssistantEvent] = []
        kind = item.get("type")
        if kind == "reasoning":
            block = assembly.thinking(index)
            block.thinking_signature = json.dumps(item)
            if not block.thinking:
                summary = "\n\n".join(
                    str(part.get("text", ""))
                    for part in item.get("summary") or []
                    if isinstance(part, dict)
                )
                if summary:
                    events.append(assembly.add_thinking(index, summary))
        elif kind == "message":
            text_block = assembly.text_block(index)
            if isinstance(item_id, str):
                text_block.text_signature = item_id
            if not text_block.text:
                text = "".join(
                    str(part.get("text") or part.get("refusal") or "")
                    for part in item.get("content") or []
                    if isinstance(part, dict)
                )
                if text:
                    events.append(assembly.add_text(index, text))
        elif kind == "function_call":
            final = item.get("arguments")
            if isinstance(final, str) and final != assembly.tool_arguments_text(index):
                assembly.replace_tool_arguments(index, final)
        events.append(assembly.close(index))
        return events

    def _complete(self, response: dict[str, Any]) -> list[AssistantEvent]:
        self.finished = True
        assembly = self._assembly
        if isinstance(response.get("id"), str):
            assembly.message.response_id = response["id"]
        tier = response.get("service_tier")
        assembly.cost_multiplier = SERVICE_TIER_MULTIPLIERS.get(str(tier), 1.0)
        usage = response.get("usage")
        if isinstance(usage, dict):
            total_input = int(usage.get("input_tokens") or 0)
            cached = int((usage.get("input_tokens_details") or {}).get("cached_tokens") or 0)
            assembly.set_usage(
                input=total_input - cached,
                output=int(usage.get("output_tokens") or 0),
                cache_read=cached,
            )
        status = response.get("status") or "completed"
        if status == "completed":
            return assembly.finish("toolUse" if assembly.message.tool_calls() else "stop")
        if status == "incomplete":
            reason = str((response.get("incomplete_details") or {}).get("reason") or "")
            if reason == "content_filter":
                raise StreamFailure("The response was stopped by the content filter")
            return assembly.finish("length")
        error = response.get("error") or {}
        code = str(error.get("code") or status)
        text = str(error.get("message") or f"The response ended with status {status}")
        raise StreamFailure(f"{code}: {text}", status=_ERROR_STATUSES.get(code))
