"""Assembling a streamed response: the message, its events, and the run loop.

Owns ``MessageAssembly`` (builds one ``AssistantMessage`` block by block and
emits the matching stream events), the ``WireParser`` protocol every HTTP
provider's event parser implements, ``run_sse_provider``, the loop that
connects an SSE request to a parser and guarantees the event contract of
model-layer.md 1.3 and 1.4 (one ``start``, block events with content indexes,
exactly one terminal ``done``/``error``, failures and aborts that end the
stream instead of raising), and ``SseProvider``, the base class of the three
wire APIs (each supplies ``prepare`` and ``parser``).

REMINDER: every event's ``partial`` is the message being assembled, shared
and mutated in place as the stream advances (copying it per delta would make a
long response quadratic). A consumer that keeps a snapshot must copy it. The
terminal event's message is the same object, complete. Text and thinking
deltas wait in a per-block buffer and are joined into the block when something
reads it (``current``, a delta event's ``partial``, ``text_block``,
``thinking``, ``close``): a ``str`` cannot grow in place, so joining per delta
would copy the whole text once per token.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import httpx
from httpx_sse import ServerSentEvent

from pi_durable_tui.ai._events import (
    AssistantEvent,
    AssistantStream,
    DoneEvent,
    ErrorEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from pi_durable_tui.ai._partial_json import RAW_ARGUMENTS_FIELD, PartialJson, parse_tool_arguments
from pi_durable_tui.ai._pricing import calculate_cost
from pi_durable_tui.ai._protocol import KeyResolver
from pi_durable_tui.ai._types import (
    AssistantMessage,
    Context,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
)
from pi_durable_tui.ai.providers._transport import (
    StreamAborted,
    StreamFailure,
    create_client,
    redact,
    stream_sse,
)

ABORTED_MESSAGE = "Request was aborted"
EMPTY_ANSWER_MESSAGE = "The model returned an empty answer"

DoneReason = Literal["stop", "length", "toolUse"]
"""Stop reasons that end a stream with a ``done`` event."""


class MessageAssembly:
    """One assistant message under construction, and the events that describe it.

    Args:
        model: The model answering; names the message and prices its usage.
    """

    def __init__(self, model: Model) -> None:
        self.model = model
        self.message = AssistantMessage(
            api=model.api,
            provider=model.provider,
            model=model.id,
            timestamp=int(time.time() * 1000),
        )
        self.cost_multiplier = 1.0
        self._pending: dict[int, list[str]] = {}
        """Text and thinking deltas not yet joined into their block, by content index."""
        self._arguments: dict[int, PartialJson] = {}
        self._open: dict[int, None] = {}
        """Indexes of blocks started and not yet ended, in start order."""

    def start(self) -> StartEvent:
        """Return the ``start`` event."""
        return StartEvent(partial=self.message)

    def current(self) -> AssistantMessage:
        """Join every buffered delta into its block and return the message so far."""
        for index in list(self._pending):
            self._join(index)
        return self.message

    def _join(self, index: int) -> None:
        pieces = self._pending.pop(index, None)
        if not pieces:
            return
        block = self.message.content[index]
        if isinstance(block, TextContent):
            block.text += "".join(pieces)
        elif isinstance(block, ThinkingContent):
            block.thinking += "".join(pieces)

    def is_open(self, index: int) -> bool:
        """Tell whether the block at ``index`` was started and not yet ended."""
        return index in self._open

    def open_text(self, *, signature: str | None = None) -> tuple[int, TextStartEvent]:
        """Start a text block.

        Args:
            signature: Provider metadata to keep for replay (a Responses message id).

        Returns:
            The block's content index and its start event.
        """
        index = self._append(TextContent(text="", text_signature=signature))
        return index, TextStartEvent(content_index=index, partial=self.current())

    def add_text(self, index: int, delta: str) -> TextDeltaEvent:
        """Append text to the text block at ``index`` and return the delta event."""
        assert isinstance(self.message.content[index], TextContent)
        self._pending.setdefault(index, []).append(delta)
        return TextDeltaEvent(content_index=index, delta=delta, source=self.current)

    def text_block(self, index: int) -> TextContent:
        """Return the text block at ``index``, its buffered deltas joined."""
        self._join(index)
        block = self.message.content[index]
        assert isinstance(block, TextContent)
        return block

    def open_thinking(
        self, *, text: str = "", signature: str | None = None, redacted: bool = False
    ) -> tuple[int, ThinkingStartEvent]:
        """Start a thinking block.

        Args:
            text: Initial reasoning text (a placeholder for redacted thinking).
            signature: The provider's replay signature, when already known.
            redacted: Whether the reasoning is encrypted and not readable.

        Returns:
            The block's content index and its start event.
        """
        block = ThinkingContent(thinking=text, thinking_signature=signature, redacted=redacted)
        index = self._append(block)
        return index, ThinkingStartEvent(content_index=index, partial=self.current())

    def add_thinking(self, index: int, delta: str) -> ThinkingDeltaEvent:
        """Append reasoning text to the thinking block at ``index``."""
        assert isinstance(self.message.content[index], ThinkingContent)
        self._pending.setdefault(index, []).append(delta)
        return ThinkingDeltaEvent(content_index=index, delta=delta, source=self.current)

    def thinking(self, index: int) -> ThinkingContent:
        """Return the thinking block at ``index``, its buffered deltas joined."""
        self._join(index)
        block = self.message.content[index]
        assert isinstance(block, ThinkingContent)
        return block

    def open_tool_call(
        self, call_id: str, name: str, arguments: dict[str, Any] | None = None
    ) -> tuple[int, ToolCallStartEvent]:
        """Start a tool-call block.

        Args:
            call_id: The provider's call id.
            name: The tool name.
            arguments: Arguments already given whole (some servers do), if any.

        Returns:
            The block's content index and its start event.
        """
        index = self._append(ToolCall(id=call_id, name=name, arguments=dict(arguments or {})))
        self._arguments[index] = PartialJson()
        return index, ToolCallStartEvent(content_index=index, partial=self.current())

    def tool_call(self, index: int) -> ToolCall:
        """Return the tool-call block at ``index``."""
        block = self.message.content[index]
        assert isinstance(block, ToolCall)
        return block

    def add_tool_arguments(self, index: int, fragment: str) -> ToolCallDeltaEvent:
        """Append a raw JSON fragment to a tool call and refresh its live arguments."""
        block = self.tool_call(index)
        block.arguments = self._arguments[index].feed(fragment)
        return ToolCallDeltaEvent(content_index=index, delta=fragment, source=self.current)

    def tool_arguments_text(self, index: int) -> str:
        """Return the raw argument text received so far for the tool call at ``index``."""
        return self._arguments[index].text

    def replace_tool_arguments(self, index: int, raw: str) -> None:
        """Replace the raw argument text with the server's final version (no event)."""
        parser = PartialJson()
        parser.feed(raw)
        self._arguments[index] = parser
        self.tool_call(index).arguments = parser.value

    def close(self, index: int) -> AssistantEvent:
        """End the block at ``index`` and return its end event.

        A tool call's arguments get their final parse here; text that is not a
        JSON object becomes ``{}`` and is kept in the ``raw_arguments`` extra field.
        """
        del self._open[index]
        message = self.current()
        block = message.content[index]
        if isinstance(block, TextContent):
            return TextEndEvent(content_index=index, content=block.text, partial=message)
        if isinstance(block, ThinkingContent):
            return ThinkingEndEvent(content_index=index, content=block.thinking, partial=message)
        raw = self._arguments.pop(index).text
        if raw.strip() or not block.arguments:
            arguments, invalid = parse_tool_arguments(raw)
            block.arguments = arguments
            if invalid is not None:
                setattr(block, RAW_ARGUMENTS_FIELD, invalid)
        return ToolCallEndEvent(content_index=index, tool_call=block, partial=message)

    def close_all(self) -> list[AssistantEvent]:
        """End every open block, in start order."""
        return [self.close(index) for index in list(self._open)]

    def set_usage(
        self, *, input: int, output: int, cache_read: int = 0, cache_write: int = 0
    ) -> None:
        """Record normalized usage (``input`` excludes cache reads and writes) and price it."""
        usage = self.message.usage
        usage.input = max(0, input)
        usage.output = max(0, output)
        usage.cache_read = max(0, cache_read)
        usage.cache_write = max(0, cache_write)
        usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write
        usage.cost = calculate_cost(self.model, usage, multiplier=self.cost_multiplier)

    def finish(self, reason: DoneReason) -> list[AssistantEvent]:
        """End the response normally, unless the answer is empty.

        A ``stop`` with no text (or only whitespace) and no tool call is not an
        answer: a local server that emits one end-of-text token would otherwise
        "answer" with nothing. It ends with a non-retryable ``error``
        (``EMPTY_ANSWER_MESSAGE``), which the harness classifies as any other
        error (R86: the input is left unanswered with ``model_error``).

        Args:
            reason: ``stop``, ``length`` or ``toolUse``.

        Returns:
            End events for blocks still open, then the ``done`` event (or the
            ``error`` event of an empty answer).
        """
        events = self.close_all()
        message = self.current()
        if reason == "stop" and not message.text().strip() and not message.tool_calls():
            events.append(self.fail(EMPTY_ANSWER_MESSAGE, retryable=False))
            return events
        message.stop_reason = reason
        events.append(DoneEvent(reason=reason, message=message))
        return events

    def fail(
        self,
        text: str,
        *,
        aborted: bool = False,
        status: int | None = None,
        retry_after_ms: int | None = None,
        retryable: bool | None = None,
    ) -> ErrorEvent:
        """End the response with an error, keeping the partial content and usage.

        Args:
            text: The error message (free of secrets).
            aborted: Whether the caller aborted (stop reason ``aborted``).
            status: The HTTP status, when there was one.
            retry_after_ms: The server's requested wait, when given.
            retryable: The provider's retry verdict, when it has one.

        Returns:
            The terminal ``error`` event.
        """
        message = self.current()
        message.stop_reason = "aborted" if aborted else "error"
        message.error_message = text
        message.error_status = status
        message.retry_after_ms = retry_after_ms
        message.retryable = retryable
        return ErrorEvent(reason=message.stop_reason, error=message)

    def _append(self, block: TextContent | ThinkingContent | ToolCall) -> int:
        content = self.message.content
        content.append(block)
        index = len(content) - 1
        self._open[index] = None
        return index


class WireParser(Protocol):
    """Turns one API's server-sent events into stream events."""

    @property
    def finished(self) -> bool:
        """Whether the terminal event was produced (stop reading)."""
        ...

    def feed(self, event: ServerSentEvent) -> Iterable[AssistantEvent]:
        """Handle one server-sent event.

        Raises:
            StreamFailure: When the server reported an error inside the stream.
        """
        ...

    def end(self) -> Iterable[AssistantEvent]:
        """Handle the end of the body before ``finished``.

        Raises:
            StreamFailure: When the stream ended before the API's terminal event.
        """
        ...


async def run_sse_provider(
    *,
    client: httpx.AsyncClient,
    url: str,
    headers: dict[str, str],
    body: dict[str, Any],
    assembly: MessageAssembly,
    parser: WireParser,
    options: StreamOptions,
    abort: asyncio.Event | None,
    secrets: tuple[str, ...],
) -> AsyncIterator[AssistantEvent]:
    """Send one request and yield its events, ending with exactly one terminal event.

    Args:
        client: The HTTP client.
        url: The endpoint.
        headers: Request headers, credentials included.
        body: The JSON body.
        assembly: The message under construction (also used by ``parser``).
        parser: The API's event parser.
        options: Request options (idle timeout).
        abort: The caller's abort event.
        secrets: Values that must never appear in a message.

    Yields:
        ``start``, block events, then ``done`` or ``error``.
    """
    yield assembly.start()
    try:
        events = stream_sse(
            client,
            url,
            headers=headers,
            body=body,
            idle_timeout_s=options.idle_timeout_s,
            abort=abort,
            secrets=secrets,
        )
        async with aclosing(events):
            async for server_event in events:
                for event in parser.feed(server_event):
                    yield event
                if parser.finished:
                    return
        for event in parser.end():
            yield event
    except StreamAborted:
        yield assembly.fail(ABORTED_MESSAGE, aborted=True)
    except StreamFailure as failure:
        yield assembly.fail(
            redact(failure.message, secrets),
            status=failure.status,
            retry_after_ms=failure.retry_after_ms,
            retryable=failure.retryable,
        )
    except Exception as error:  # a malformed event or a parser bug must still end the stream
        yield assembly.fail(redact(f"{type(error).__name__}: {error}", secrets))


async def failed_stream(assembly: MessageAssembly, text: str) -> AsyncIterator[AssistantEvent]:
    """Yield a stream that starts and fails at once (nothing is sent).

    Args:
        assembly: The (empty) message.
        text: Why the request could not be made.

    Yields:
        The two events ``start`` and ``error``.
    """
    yield assembly.start()
    yield assembly.fail(text, retryable=False)


def output_limit(model: Model, options: StreamOptions, *, cap: int | None = None) -> int | None:
    """The output token limit a request sends on any wire API.

    The options' ``max_tokens`` wins; otherwise the model's declared
    ``max_tokens``, so a model that loops stops at its limit instead of
    streaming until the server's context is full.

    Args:
        model: The model (its declared ``max_tokens``; ``0`` means unknown).
        options: The request options.
        cap: A ceiling for the model's own limit (not for an explicit option).

    Returns:
        The limit, or ``None`` when neither says.
    """
    if options.max_tokens:
        return options.max_tokens
    if model.max_tokens > 0:
        return min(model.max_tokens, cap) if cap else model.max_tokens
    return None


@dataclass(frozen=True, slots=True)
class PreparedRequest:
    """Everything one provider request sends."""

    url: str
    headers: dict[str, str]
    body: dict[str, Any]
    secrets: tuple[str, ...]
    """Values that must never appear in a message (the API key, auth headers)."""


class SseProvider:
    """Base of the HTTP providers: one client, one key resolver, one request per stream.

    A subclass names its ``api`` and implements ``prepare`` (build the request,
    or raise ``StreamFailure`` to refuse it: no API key, a model of another api)
    and ``parser`` (the API's wire parser). A request that cannot be prepared
    becomes a stream of ``start`` and ``error`` instead of an exception.

    Args:
        keys: Resolves the API key of a provider name at request time.
        client: The shared HTTP client; a new one is created when ``None``.
    """

    api: str = ""

    def __init__(self, keys: KeyResolver, client: httpx.AsyncClient | None = None) -> None:
        self._keys = keys
        self._client = client if client is not None else create_client()

    def stream(
        self,
        model: Model,
        context: Context,
        options: StreamOptions,
        *,
        abort: asyncio.Event | None = None,
    ) -> AssistantStream:
        """Start one request (see ``Provider.stream``); nothing is sent before iteration.

        Args:
            model: The model; its ``api`` must be this provider's.
            context: System prompt, messages and tools.
            options: Per-request options.
            abort: When set, the stream ends promptly with an ``aborted`` error.

        Returns:
            The stream of events.
        """
        assembly = MessageAssembly(model)
        try:
            if model.api != self.api:
                raise StreamFailure(
                    f"Model {model.provider}/{model.id} uses api {model.api!r}, not {self.api}"
                )
            request = self.prepare(model, context, options)
        except StreamFailure as failure:
            return AssistantStream(failed_stream(assembly, failure.message))
        except Exception as error:  # a conversion bug must not raise to the consumer
            return AssistantStream(failed_stream(assembly, f"{type(error).__name__}: {error}"))
        return AssistantStream(
            run_sse_provider(
                client=self._client,
                url=request.url,
                headers=request.headers,
                body=request.body,
                assembly=assembly,
                parser=self.parser(assembly),
                options=options,
                abort=abort,
                secrets=request.secrets,
            )
        )

    def api_key(self, model: Model) -> str | None:
        """Return the key for a model's provider, looked up now."""
        return self._keys(model.provider)

    def prepare(self, model: Model, context: Context, options: StreamOptions) -> PreparedRequest:
        """Build the HTTP request of one stream.

        Raises:
            StreamFailure: When the request cannot be sent.
        """
        raise NotImplementedError

    def parser(self, assembly: MessageAssembly) -> WireParser:
        """Return the wire parser that fills ``assembly``."""
        raise NotImplementedError


def parse_event_data(event: ServerSentEvent) -> dict[str, Any]:
    """Decode the JSON object of a server-sent event.

    Args:
        event: The event.

    Returns:
        The decoded object.

    Raises:
        StreamFailure: When the data is not a JSON object.
    """
    try:
        data = json.loads(event.data)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise StreamFailure(f"Malformed event from the server: {event.data[:200]!r}")
    return data
