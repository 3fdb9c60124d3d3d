"""Stream events and the ``AssistantStream`` every provider returns.

A stream is an async iterator of events: one ``StartEvent``; then for each
content block its ``*_start``, ``*_delta`` and ``*_end`` events carrying the
block's ``content_index``; then exactly one terminal ``DoneEvent`` or
``ErrorEvent``. Provider failures and aborts never raise to the consumer: they end
the stream with an ``ErrorEvent`` whose message has stop reason ``error`` or
``aborted`` and keeps the partial content and usage (model-layer.md 1.3, 1.4).

Delta events read their ``partial`` on demand (``source``, a zero-argument
callable): a provider appends each delta to a buffer and builds the growing text
only when a consumer reads the partial, so a consumer that reads it every 100 ms
(the harness's partial commits, R85) pays for the text once per read, not once
per delta; copying a growing string per delta would make a long answer
quadratic in its size.

Cancelling the task that iterates a stream is different from aborting it: the
``CancelledError`` propagates to the consumer, and the provider's generator is
closed, which closes the HTTP response at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Literal

from pi_durable_tui.ai._types import AssistantMessage, ToolCall


@dataclass(frozen=True, slots=True)
class StartEvent:
    """The response has begun; ``partial`` is the (empty) message so far."""

    partial: AssistantMessage
    type: Literal["start"] = "start"


@dataclass(frozen=True, slots=True)
class TextStartEvent:
    """A text block opened at ``content_index``."""

    content_index: int
    partial: AssistantMessage
    type: Literal["text_start"] = "text_start"


@dataclass(frozen=True, slots=True)
class TextDeltaEvent:
    """More text for the block at ``content_index``.

    ``partial`` is read on demand from ``source`` (see the module docstring).
    """

    content_index: int
    delta: str
    source: Callable[[], AssistantMessage] = field(repr=False, compare=False)
    type: Literal["text_delta"] = "text_delta"

    @property
    def partial(self) -> AssistantMessage:
        """The message so far (built when read)."""
        return self.source()


@dataclass(frozen=True, slots=True)
class TextEndEvent:
    """The text block at ``content_index`` is complete."""

    content_index: int
    content: str
    partial: AssistantMessage
    type: Literal["text_end"] = "text_end"


@dataclass(frozen=True, slots=True)
class ThinkingStartEvent:
    """A thinking block opened at ``content_index``."""

    content_index: int
    partial: AssistantMessage
    type: Literal["thinking_start"] = "thinking_start"


@dataclass(frozen=True, slots=True)
class ThinkingDeltaEvent:
    """More reasoning text for the block at ``content_index``.

    ``partial`` is read on demand from ``source`` (see the module docstring).
    """

    content_index: int
    delta: str
    source: Callable[[], AssistantMessage] = field(repr=False, compare=False)
    type: Literal["thinking_delta"] = "thinking_delta"

    @property
    def partial(self) -> AssistantMessage:
        """The message so far (built when read)."""
        return self.source()


@dataclass(frozen=True, slots=True)
class ThinkingEndEvent:
    """The thinking block at ``content_index`` is complete."""

    content_index: int
    content: str
    partial: AssistantMessage
    type: Literal["thinking_end"] = "thinking_end"


@dataclass(frozen=True, slots=True)
class ToolCallStartEvent:
    """A tool-call block opened at ``content_index`` (its name is known)."""

    content_index: int
    partial: AssistantMessage
    type: Literal["toolcall_start"] = "toolcall_start"


@dataclass(frozen=True, slots=True)
class ToolCallDeltaEvent:
    """A raw JSON fragment of the arguments of the tool call at ``content_index``.

    ``partial`` is read on demand from ``source`` (see the module docstring).
    """

    content_index: int
    delta: str
    source: Callable[[], AssistantMessage] = field(repr=False, compare=False)
    type: Literal["toolcall_delta"] = "toolcall_delta"

    @property
    def partial(self) -> AssistantMessage:
        """The message so far (built when read)."""
        return self.source()


@dataclass(frozen=True, slots=True)
class ToolCallEndEvent:
    """The tool call at ``content_index`` is complete, arguments parsed."""

    content_index: int
    tool_call: ToolCall
    partial: AssistantMessage
    type: Literal["toolcall_end"] = "toolcall_end"


@dataclass(frozen=True, slots=True)
class DoneEvent:
    """Terminal: the response ended normally (``stop``, ``length`` or ``toolUse``)."""

    reason: Literal["stop", "length", "toolUse"]
    message: AssistantMessage
    type: Literal["done"] = "done"


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """Terminal: the response failed or was aborted; ``error`` is the final partial message."""

    reason: Literal["error", "aborted"]
    error: AssistantMessage
    type: Literal["error"] = "error"


AssistantEvent = (
    StartEvent
    | TextStartEvent
    | TextDeltaEvent
    | TextEndEvent
    | ThinkingStartEvent
    | ThinkingDeltaEvent
    | ThinkingEndEvent
    | ToolCallStartEvent
    | ToolCallDeltaEvent
    | ToolCallEndEvent
    | DoneEvent
    | ErrorEvent
)


class StreamProtocolError(RuntimeError):
    """A provider implementation broke the event contract (a bug, not a provider error)."""


class AssistantStream:
    """The events of one model response, and its final message.

    Iterate it for events, or ``await stream.result()`` for the final message
    (which drains any events not yet read). The stream ends after its one
    terminal event.

    Args:
        events: The provider's event generator. It must yield exactly one terminal
            event, last.
    """

    def __init__(self, events: AsyncIterator[AssistantEvent]) -> None:
        self._events = events
        self._final: AssistantMessage | None = None

    def __aiter__(self) -> AssistantStream:
        return self

    async def __anext__(self) -> AssistantEvent:
        if self._final is not None:
            raise StopAsyncIteration
        try:
            event = await self._events.__anext__()
        except StopAsyncIteration:
            raise StreamProtocolError(
                "provider stream ended without a done or error event"
            ) from None
        if isinstance(event, DoneEvent):
            self._final = event.message
        elif isinstance(event, ErrorEvent):
            self._final = event.error
        if self._final is not None:
            await self.aclose()
        return event

    async def result(self) -> AssistantMessage:
        """Return the final message, reading the remaining events first.

        Returns:
            The message of the terminal event.
        """
        async for _ in self:
            pass
        assert self._final is not None
        return self._final

    async def aclose(self) -> None:
        """Close the provider's generator (and with it the HTTP response)."""
        aclose = getattr(self._events, "aclose", None)
        if aclose is not None:
            await aclose()
