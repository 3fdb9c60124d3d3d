"""The OpenAI Chat Completions provider (api ``openai-completions``).

Owns ``OpenAICompletionsProvider``: the request for OpenAI and the
OpenAI-compatible servers (llama.cpp, Ollama, vLLM, LM Studio), and the parser
of its ``data:`` chunks. Implements model-layer.md 2.2 and 2.5, with the stop
reasons of 1.4, the usage normalization of 1.5 (``input`` excludes cached
tokens), the reasoning effort of 1.8, the handoff of 1.10 and the ``compat``
switches of 1.11.

``model.compat`` switches (snake_case, camelCase accepted), with their defaults
for the official endpoint / any other server:

- ``supports_developer_role`` (reasoning models on the official endpoint / no):
  the system prompt's role, ``developer`` or ``system``.
- ``max_tokens_field`` (``max_completion_tokens`` / ``max_tokens``).
- ``supports_usage_in_streaming`` (yes / yes): send
  ``stream_options.include_usage``; a missing usage chunk is tolerated anyway.
- ``supports_reasoning_effort`` (yes / yes): send ``reasoning_effort`` for
  reasoning models when the level is not ``off``.
- ``supports_prompt_cache_key`` (yes / no): send ``session_id`` as
  ``prompt_cache_key``.
- ``requires_tool_result_name``, ``requires_thinking_as_text``,
  ``requires_reasoning_content_on_assistant_messages`` (no / no).

Tool calls keep their blocks open until the choice finishes: fragments are
keyed by ``index`` (by ``id`` when a server omits the index or reuses it for a
new call), so interleaved fragments still land in the right call.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from httpx_sse import ServerSentEvent

from pi_durable_tui.ai._events import AssistantEvent
from pi_durable_tui.ai._handoff import transform_messages
from pi_durable_tui.ai._thinking import clamp_thinking_level, compat_value, openai_reasoning_effort
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

API = "openai-completions"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
TOOL_IMAGES_TEXT = "Images returned by the tool calls above:"

_FINISH_REASONS: dict[str, DoneReason] = {
    "stop": "stop",
    "end": "stop",
    "eos": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
}


def is_official_openai(model: Model) -> bool:
    """Tell whether a model is served by OpenAI itself (not a compatible server)."""
    return not model.base_url or "api.openai.com" in model.base_url


class OpenAICompletionsProvider(SseProvider):
    """Streams Chat Completions responses over HTTP.

    Args:
        keys: Resolves the API key of a provider name at request time.
        client: The shared HTTP client; a new one is created when ``None``.
    """

    api = API

    def parser(self, assembly: MessageAssembly) -> WireParser:
        """Return the ChatCompletionsParser of one response."""
        return ChatCompletionsParser(assembly)

    def prepare(self, model: Model, context: Context, options: StreamOptions) -> PreparedRequest:
        """Build the HTTP request (see ``SseProvider.prepare``)."""
        return openai_request(
            self, model, "/chat/completions", build_request_body(model, context, options)
        )


def openai_request(
    provider: SseProvider, model: Model, path: str, body: dict[str, Any]
) -> PreparedRequest:
    """Build an OpenAI-style request: bearer key (required by OpenAI itself), JSON, SSE.

    Args:
        provider: The provider, for the key lookup.
        model: The model; local servers (another ``base_url``) may go without a key.
        path: The endpoint below the base URL, for example ``/responses``.
        body: The JSON body.

    Returns:
        The request.

    Raises:
        StreamFailure: When OpenAI itself is the server and no key is set.
    """
    key = provider.api_key(model)
    if not key and is_official_openai(model):
        raise StreamFailure(f"No API key for provider {model.provider!r}: set OPENAI_API_KEY")
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    headers.update(model.headers)
    url = (model.base_url or DEFAULT_BASE_URL).rstrip("/") + path
    return PreparedRequest(url=url, headers=headers, body=body, secrets=secrets_of(headers))


def build_request_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """Build the JSON body of a Chat Completions request.

    Args:
        model: The target model (its ``compat`` switches shape the body).
        context: System prompt, messages and tools.
        options: Per-request options.

    Returns:
        The body.
    """
    official = is_official_openai(model)
    messages: list[dict[str, Any]] = []
    if context.system_prompt:
        developer = compat_value(model, "supports_developer_role", official and model.reasoning)
        role = "developer" if developer else "system"
        messages.append({"role": role, "content": context.system_prompt})
    messages.extend(convert_messages(transform_messages(context.messages, model), model))
    body: dict[str, Any] = {"model": model.id, "messages": messages, "stream": True}
    if compat_value(model, "supports_usage_in_streaming", True):
        body["stream_options"] = {"include_usage": True}
    limit = output_limit(model, options)
    if limit:
        default_field = "max_completion_tokens" if official else "max_tokens"
        body[str(compat_value(model, "max_tokens_field", default_field))] = limit
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if context.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                },
            }
            for tool in context.tools
        ]
    if model.reasoning and compat_value(model, "supports_reasoning_effort", True):
        effort = openai_reasoning_effort(model, options.reasoning)
        explicit_off = isinstance(compat_value(model, "thinking_effort_map"), dict) and (
            "off" in compat_value(model, "thinking_effort_map")
        )
        if effort and (clamp_thinking_level(model, options.reasoning) != "off" or explicit_off):
            body["reasoning_effort"] = effort
    if (
        options.session_id
        and options.cache_retention != "none"
        and compat_value(model, "supports_prompt_cache_key", official)
    ):
        body["prompt_cache_key"] = options.session_id
    return body


def convert_messages(messages: Iterable[Message], model: Model) -> list[dict[str, Any]]:
    """Convert (already transformed) messages to Chat Completions messages.

    Args:
        messages: Messages after ``transform_messages``.
        model: The target model (compat switches).

    Returns:
        The wire messages.
    """
    wire: list[dict[str, Any]] = []
    tool_images: list[dict[str, Any]] = []
    with_name = compat_value(model, "requires_tool_result_name", False)
    for message in messages:
        if not isinstance(message, ToolResultMessage) and tool_images:
            wire.append(_tool_images_message(tool_images))
            tool_images = []
        if isinstance(message, ToolResultMessage):
            text = "".join(p.text for p in message.content if isinstance(p, TextContent))
            entry: dict[str, Any] = {
                "role": "tool",
                "tool_call_id": message.tool_call_id,
                "content": text,
            }
            if with_name:
                entry["name"] = message.tool_name
            wire.append(entry)
            tool_images.extend(
                _image_part(p) for p in message.content if isinstance(p, ImageContent)
            )
        elif isinstance(message, AssistantMessage):
            converted = _assistant_message(message, model)
            if converted is not None:
                wire.append(converted)
        elif isinstance(message.content, str):
            wire.append({"role": "user", "content": message.content})
        else:
            wire.append({"role": "user", "content": _user_content(message.content)})
    if tool_images:
        wire.append(_tool_images_message(tool_images))
    return wire


def _image_part(image: ImageContent) -> dict[str, Any]:
    url = f"data:{image.mime_type};base64,{image.data}"
    return {"type": "image_url", "image_url": {"url": url}}


def _tool_images_message(images: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": TOOL_IMAGES_TEXT}, *images]}


def _user_content(parts: list[UserContent]) -> str | list[dict[str, Any]]:
    if not any(isinstance(part, ImageContent) for part in parts):
        # Plain text is the form every compatible server understands.
        return "\n".join(part.text for part in parts if isinstance(part, TextContent))
    return [
        _image_part(part) if isinstance(part, ImageContent) else {"type": "text", "text": part.text}
        for part in parts
    ]


def _assistant_message(message: AssistantMessage, model: Model) -> dict[str, Any] | None:
    thinking_as_text = compat_value(model, "requires_thinking_as_text", False)
    texts: list[str] = []
    thinking: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            texts.append(block.text)
        elif isinstance(block, ThinkingContent):
            if not block.redacted and block.thinking:
                (texts if thinking_as_text else thinking).append(block.thinking)
        else:
            calls.append(
                {
                    "id": block.id,
                    "type": "function",
                    "function": {"name": block.name, "arguments": json.dumps(block.arguments)},
                }
            )
    text = "".join(texts)
    if not text and not calls:
        return None
    entry: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        entry["tool_calls"] = calls
    if compat_value(model, "requires_reasoning_content_on_assistant_messages", False):
        entry["reasoning_content"] = "\n\n".join(thinking)
    return entry


class ChatCompletionsParser:
    """Turns Chat Completions chunks into stream events.

    Args:
        assembly: The message under construction.
    """

    def __init__(self, assembly: MessageAssembly) -> None:
        self._assembly = assembly
        self._current: int | None = None
        """The open text or thinking block (they never overlap)."""
        self._tools: dict[tuple[str, Any], int] = {}
        self._synthetic_ids: set[int] = set()
        self._last_tool: tuple[str, Any] | None = None
        self._finish_reason: str | None = None
        self.finished = False

    def feed(self, event: ServerSentEvent) -> list[AssistantEvent]:
        """Handle one chunk (see ``WireParser.feed``)."""
        if event.data.strip() == "[DONE]":
            return self._complete()
        data = parse_event_data(event)
        error = data.get("error")
        if error:
            raise _error_failure(error)
        if isinstance(data.get("id"), str) and not self._assembly.message.response_id:
            self._assembly.message.response_id = data["id"]
        choices = data.get("choices") or []
        choice = choices[0] if choices and isinstance(choices[0], dict) else {}
        usage = data.get("usage") or choice.get("usage")
        if isinstance(usage, dict):
            self._set_usage(usage)
        events: list[AssistantEvent] = []
        delta = choice.get("delta") or {}
        reasoning = next(
            (
                delta[name]
                for name in ("reasoning_content", "reasoning", "reasoning_text")
                if isinstance(delta.get(name), str) and delta[name]
            ),
            None,
        )
        if reasoning:
            events.extend(self._stream_into(ThinkingContent, reasoning))
        content = delta.get("content")
        if isinstance(content, str) and content:
            events.extend(self._stream_into(TextContent, content))
        for fragment in delta.get("tool_calls") or []:
            if isinstance(fragment, dict):
                events.extend(self._tool_fragment(fragment))
        reason = choice.get("finish_reason")
        if reason and self._finish_reason is None:
            self._finish_reason = str(reason)
            events.extend(self._assembly.close_all())
            self._current = None
        return events

    def end(self) -> list[AssistantEvent]:
        """Finish without ``[DONE]`` if a finish reason came; fail otherwise."""
        if self._finish_reason is None:
            raise StreamFailure(
                "The stream ended before a finish_reason: the response is incomplete",
                retryable=True,
            )
        return self._complete()

    def _stream_into(
        self, kind: type[TextContent] | type[ThinkingContent], delta: str
    ) -> list[AssistantEvent]:
        assembly = self._assembly
        events: list[AssistantEvent] = []
        current = self._current
        if current is None or not isinstance(assembly.message.content[current], kind):
            if current is not None:
                events.append(assembly.close(current))
            if kind is TextContent:
                current, start = assembly.open_text()
                events.append(start)
            else:
                current, thinking_start = assembly.open_thinking()
                events.append(thinking_start)
            self._current = current
        if kind is TextContent:
            events.append(assembly.add_text(current, delta))
        else:
            events.append(assembly.add_thinking(current, delta))
        return events

    def _tool_fragment(self, fragment: dict[str, Any]) -> list[AssistantEvent]:
        assembly = self._assembly
        events: list[AssistantEvent] = []
        position = fragment.get("index")
        call_id = fragment.get("id") if isinstance(fragment.get("id"), str) else None
        function = fragment.get("function") or {}
        name = function.get("name") if isinstance(function.get("name"), str) else None
        key: tuple[str, Any]
        if isinstance(position, int):
            key = ("index", position)
            known = self._tools.get(key)
            if (
                known is not None
                and call_id
                and known not in self._synthetic_ids
                and assembly.tool_call(known).id != call_id
            ):
                key = ("id", call_id)  # a server that reuses index 0 for every call
        elif call_id:
            key = ("id", call_id)
        else:
            key = self._last_tool or ("index", 0)
        index = self._tools.get(key)
        if index is None:
            if self._current is not None:
                events.append(assembly.close(self._current))
                self._current = None
            index, start = assembly.open_tool_call(
                call_id or f"call_{len(self._tools)}", name or ""
            )
            if call_id is None:
                self._synthetic_ids.add(index)
            self._tools[key] = index
            events.append(start)
        else:
            block = assembly.tool_call(index)
            if name and not block.name:
                block.name = name
            if call_id and index in self._synthetic_ids:
                block.id = call_id
                self._synthetic_ids.discard(index)
        self._last_tool = key
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # some servers send the object itself
            arguments = json.dumps(arguments)
        if isinstance(arguments, str) and arguments and assembly.is_open(index):
            events.append(assembly.add_tool_arguments(index, arguments))
        return events

    def _set_usage(self, usage: dict[str, Any]) -> None:
        prompt = int(usage.get("prompt_tokens") or 0)
        details = usage.get("prompt_tokens_details") or {}
        cached = int(details.get("cached_tokens") or 0)
        cache_write = int(details.get("cache_write_tokens") or 0)
        # REMINDER: input excludes cache hits (model-layer.md 1.5). Servers that
        # report cache writes (OpenRouter) count them inside cached_tokens too.
        cache_read = max(0, cached - cache_write) if cache_write > 0 else cached
        self._assembly.set_usage(
            input=prompt - cache_read - cache_write,
            output=int(usage.get("completion_tokens") or 0),
            cache_read=cache_read,
            cache_write=cache_write,
        )

    def _complete(self) -> list[AssistantEvent]:
        self.finished = True
        reason = self._finish_reason or "stop"
        mapped = _FINISH_REASONS.get(reason)
        if mapped is None:
            raise StreamFailure(
                f"The provider stopped the response: finish_reason {reason}", retryable=False
            )
        if mapped == "stop" and self._assembly.message.tool_calls():
            mapped = "toolUse"  # servers that say "stop" after calling tools
        return self._assembly.finish(mapped)


def _error_failure(error: Any) -> StreamFailure:
    if isinstance(error, dict):
        text = str(error.get("message") or error)
        code = error.get("code")
        status = code if isinstance(code, int) else None
        return StreamFailure(f"Error from the server: {text}", status=status)
    return StreamFailure(f"Error from the server: {error}")
