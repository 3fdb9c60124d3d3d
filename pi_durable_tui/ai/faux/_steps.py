"""Scripted steps of the faux provider: responses, match rules and their builders.

Owns the data a faux script is made of: ``FauxResponse`` (content, stop reason,
usage overrides, error, match rule), ``FauxMatch``, ``FauxError``, ``FauxUsage``,
the builders ``faux_text``, ``faux_thinking``, ``faux_tool_call``,
``faux_response``, ``faux_error`` and ``faux_model``, and the context readings
the match rules and the usage estimate use. ``_selection`` chooses among these
steps and ``_provider`` streams them. Implements the scripting half of
model-layer.md 1.6.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pi_durable_tui.ai._types import (
    AssistantContent,
    AssistantMessage,
    Context,
    InputKind,
    Model,
    ModelCost,
    StopReason,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

FAUX_API = "faux"
FAUX_PROVIDER = "faux"
DEFAULT_FAUX_MODEL_ID = "faux-1"
CHARS_PER_TOKEN = 4
"""The faux provider's token: 4 characters, for chunking, pacing and usage."""
IMAGE_CHARS = 4800
"""An image counts as this many characters (1200 tokens) in the usage estimate."""


@dataclass(frozen=True, slots=True)
class FauxMatch:
    """When a scripted response fits a request; every given field must fit.

    Each field is a case-sensitive substring.

    Attributes:
        user: Found in the text of the newest user message.
        system: Found in the system prompt.
        tool_result: Found in the text of the tool results that end the context
            (those after the last assistant message).
        text: Found in any of the three (a plain-string ``match`` in a script).
        history: Found in the text of any user message or tool result of the
            request, not only the newest (what earlier turns put in the context).
    """

    user: str | None = None
    system: str | None = None
    tool_result: str | None = None
    text: str | None = None
    history: str | None = None

    def fits(self, context: Context) -> bool:
        """Tell whether a request with this context fits the rule.

        Args:
            context: The request's context.

        Returns:
            True when every given field is found where it looks.
        """
        user = newest_user_text(context)
        system = context.system_prompt or ""
        results = trailing_tool_result_text(context)
        if self.user is not None and self.user not in user:
            return False
        if self.system is not None and self.system not in system:
            return False
        if self.tool_result is not None and self.tool_result not in results:
            return False
        if self.history is not None and self.history not in history_text(context):
            return False
        return self.text is None or any(self.text in part for part in (user, results, system))


@dataclass(frozen=True, slots=True)
class FauxError:
    """A scripted provider failure.

    Attributes:
        message: The ``error_message`` of the final message.
        status: An HTTP-like status (429, 500, 529...), if any.
        retryable: The provider's own verdict on retrying; ``None`` lets the
            harness classify from status and message.
        retry_after_ms: How long the "provider" asks to wait, if it says.
    """

    message: str
    status: int | None = None
    retryable: bool | None = None
    retry_after_ms: int | None = None


@dataclass(frozen=True, slots=True)
class FauxUsage:
    """Token counts that replace the estimates; a ``None`` field stays estimated."""

    input: int | None = None
    output: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None


@dataclass(frozen=True, slots=True)
class FauxResponse:
    """One scripted response, streamed as the events of a real one.

    Attributes:
        content: The blocks, in order. A ``ToolCall`` with an empty ``id`` gets
            one derived from the request's position (``call_<position>_<block>``).
        stop_reason: ``None`` means ``toolUse`` when there are tool calls, else
            ``stop``; ``error`` when ``error`` is set.
        usage: Token counts replacing the estimates.
        error: Ends the response with an error event after its content.
        match: The response serves only requests that fit this rule.
        response_id: The message's ``response_id``; ``faux-<position>`` when None.
    """

    content: tuple[AssistantContent, ...] = ()
    stop_reason: StopReason | None = None
    usage: FauxUsage | None = None
    error: FauxError | None = None
    match: FauxMatch | None = None
    response_id: str | None = None


FauxFactory = Callable[[Context, StreamOptions, int], "FauxResponse | AssistantMessage"]
"""Builds the response of one request from its context, options and call index
(the number of requests the provider received before it).

Exceptions raised by a factory propagate to whoever iterates the stream: they are
bugs in a test or script (a failed assertion on the request), not provider errors.
"""

FauxStep = FauxResponse | AssistantMessage | FauxFactory
"""What can be queued: a response, a finished message, or a factory."""


@dataclass(frozen=True, slots=True)
class FauxRequest:
    """A request the provider received, kept for assertions."""

    call_index: int
    model: Model
    context: Context
    options: StreamOptions


def faux_text(text: str) -> TextContent:
    """Build a text block.

    Args:
        text: The visible text.

    Returns:
        The block.
    """
    return TextContent(text=text)


def faux_thinking(text: str, *, signature: str | None = None) -> ThinkingContent:
    """Build a thinking block.

    Args:
        text: The reasoning text.
        signature: A replay signature, if the test needs one.

    Returns:
        The block.
    """
    return ThinkingContent(thinking=text, thinking_signature=signature)


def faux_tool_call(
    name: str, arguments: Mapping[str, object] | None = None, *, id: str | None = None
) -> ToolCall:
    """Build a tool-call block.

    Args:
        name: The tool's name.
        arguments: The arguments object; ``{}`` when omitted.
        id: The call id; derived from the request's position when omitted.

    Returns:
        The block (with an empty id when it is to be derived).
    """
    return ToolCall(id=id or "", name=name, arguments=dict(arguments or {}))


def faux_response(
    *content: str | AssistantContent,
    stop_reason: StopReason | None = None,
    usage: FauxUsage | None = None,
    match: FauxMatch | str | None = None,
    response_id: str | None = None,
) -> FauxResponse:
    """Build a scripted response.

    Args:
        *content: Blocks; a plain string is a text block.
        stop_reason: A custom stop reason (``length`` for a truncated answer...).
        usage: Token counts replacing the estimates.
        match: A rule, or a plain string found in the user text, the trailing
            tool results or the system prompt.
        response_id: A fixed response id.

    Returns:
        The response.
    """
    blocks = tuple(faux_text(item) if isinstance(item, str) else item for item in content)
    rule = FauxMatch(text=match) if isinstance(match, str) else match
    return FauxResponse(blocks, stop_reason, usage, None, rule, response_id)


def faux_error(
    message: str,
    *content: str | AssistantContent,
    status: int | None = None,
    retryable: bool | None = None,
    retry_after_ms: int | None = None,
    match: FauxMatch | str | None = None,
) -> FauxResponse:
    """Build a scripted failure.

    Args:
        message: The error message.
        *content: Partial content streamed before the failure.
        status: An HTTP-like status.
        retryable: The provider's verdict on retrying.
        retry_after_ms: The wait the provider asks for.
        match: As for ``faux_response``.

    Returns:
        A response ending with an error event.
    """
    base = faux_response(*content, stop_reason="error", match=match)
    error = FauxError(message, status, retryable, retry_after_ms)
    return FauxResponse(base.content, "error", None, error, base.match, None)


def faux_model(
    model_id: str = DEFAULT_FAUX_MODEL_ID,
    *,
    name: str | None = None,
    context_window: int = 128_000,
    max_tokens: int = 16_384,
    reasoning: bool = False,
    input: Iterable[InputKind] = ("text", "image"),
    cost: ModelCost | None = None,
    api: str = FAUX_API,
    provider: str = FAUX_PROVIDER,
) -> Model:
    """Build a faux model row.

    Args:
        model_id: The model id (``faux-1`` by default).
        name: A display name; the id when omitted.
        context_window: Tokens of context.
        max_tokens: Tokens of output.
        reasoning: Whether the model claims to reason.
        input: Accepted input kinds.
        cost: Prices per million tokens; free when omitted.
        api: The faux provider's api name.
        provider: The faux provider's provider name.

    Returns:
        The model.
    """
    return Model(
        id=model_id,
        name=name or model_id,
        api=api,
        provider=provider,
        reasoning=reasoning,
        input=list(input),
        cost=cost or ModelCost(),
        context_window=context_window,
        max_tokens=max_tokens,
    )


def message_text(content: str | Iterable[object]) -> str:
    """Return the text of user or tool-result content (images are skipped).

    Args:
        content: A string, or blocks.

    Returns:
        The text blocks joined by newlines.
    """
    if isinstance(content, str):
        return content
    return "\n".join(block.text for block in content if isinstance(block, TextContent))


def newest_user_text(context: Context) -> str:
    """Return the text of the newest user message, or ``""``."""
    for message in reversed(context.messages):
        if isinstance(message, UserMessage):
            return message_text(message.content)
    return ""


def history_text(context: Context) -> str:
    """Return the text of every user message and tool result of a context, in order."""
    return "\n".join(
        message_text(message.content)
        for message in context.messages
        if isinstance(message, (UserMessage, ToolResultMessage))
    )


def trailing_tool_result_text(context: Context) -> str:
    """Return the text of the tool results after the last assistant message."""
    texts: list[str] = []
    for message in reversed(context.messages):
        if isinstance(message, AssistantMessage):
            break
        if isinstance(message, ToolResultMessage):
            texts.append(message_text(message.content))
    return "\n".join(reversed(texts))


def serialize_context(context: Context) -> str:
    """Flatten a context into the text the usage estimate counts.

    Images count as ``IMAGE_CHARS`` characters rather than their base64 size.

    Args:
        context: The request's context.

    Returns:
        A stable text: equal contexts give equal text, and a context that grew at
        its end gives a text that grew at its end (the prompt-cache simulation
        relies on it).
    """
    parts = [context.system_prompt or ""]
    parts += [tool_text(tool) for tool in context.tools]
    for message in context.messages:
        parts += message_parts(message)
    return "\n".join(parts)


def tool_text(tool: Any) -> str:
    """The text a tool definition counts as in ``serialize_context``."""
    return json.dumps(tool.model_dump(mode="json"), sort_keys=True)


def message_parts(message: Any) -> list[str]:
    """The parts one message adds to ``serialize_context`` (joined there by newlines)."""
    parts = [message.role]
    if isinstance(message, AssistantMessage):
        parts += [block_text(block) for block in message.content]
    elif isinstance(message.content, str):
        parts.append(message.content)
    else:
        for item in message.content:
            parts.append(item.text if isinstance(item, TextContent) else "#" * IMAGE_CHARS)
    return parts


def estimate_tokens(chars: int) -> int:
    """Return the faux token count of ``chars`` characters (rounded up)."""
    return math.ceil(chars / CHARS_PER_TOKEN)


def block_text(block: AssistantContent) -> str:
    """Return the characters of a block the usage estimate counts."""
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ThinkingContent):
        return block.thinking
    return block.name + arguments_json(block)


def arguments_json(call: ToolCall) -> str:
    """Return a tool call's arguments as the JSON text streamed in its deltas."""
    return json.dumps(call.arguments, ensure_ascii=False)
