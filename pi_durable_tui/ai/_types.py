"""Messages, content blocks, usage and models: the vocabulary of the model layer.

Everything here is plain data that converts to and from JSON with
``model_dump(mode="json")`` / ``model_validate``. Messages are stored verbatim in
transcript entries (``pi.user``, ``pi.assistant``, ``pi.tool-result``), so their
JSON shape is part of the store format: field names are snake_case, stop reasons
keep pi-ai's values (``stop``, ``length``, ``toolUse``, ``error``, ``aborted``).

Implements the shapes of ``reference/model-layer.md`` sections 1.2, 1.5 and 1.7.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

StopReason = Literal["stop", "length", "toolUse", "error", "aborted"]
"""Why an assistant message ended; ``error`` and ``aborted`` end a stream with an error event."""

ThinkingLevel = Literal["off", "minimal", "low", "medium", "high", "xhigh"]
"""The unified reasoning levels, mapped per provider by ``pi_durable_tui.ai._thinking``."""

THINKING_LEVELS: tuple[ThinkingLevel, ...] = ("off", "minimal", "low", "medium", "high", "xhigh")

InputKind = Literal["text", "image"]

Api = Literal["anthropic-messages", "openai-completions", "openai-responses", "faux"]
"""Wire protocols this package implements."""


class _Data(BaseModel):
    """Base of every JSON value here: unknown keys are kept, so newer stores still load."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class TextContent(_Data):
    """A block of visible text."""

    type: Literal["text"] = "text"
    text: str
    text_signature: str | None = None
    """Provider metadata kept for replay (an OpenAI Responses message id)."""


class ThinkingContent(_Data):
    """A block of model reasoning, with the provider signature needed to replay it."""

    type: Literal["thinking"] = "thinking"
    thinking: str
    thinking_signature: str | None = None
    redacted: bool = False


class ImageContent(_Data):
    """An image given to the model as base64 data."""

    type: Literal["image"] = "image"
    data: str
    mime_type: str


class ToolCall(_Data):
    """A call of a tool by the model; ``arguments`` is the parsed JSON object."""

    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


AssistantContent = Annotated[TextContent | ThinkingContent | ToolCall, Field(discriminator="type")]
UserContent = Annotated[TextContent | ImageContent, Field(discriminator="type")]


class Cost(_Data):
    """Dollars spent, per usage field."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0


class Usage(_Data):
    """Tokens of one response. ``input`` never includes cache reads or writes."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost = Field(default_factory=Cost)


class UserMessage(_Data):
    """A message from the user (or the harness speaking as the user)."""

    role: Literal["user"] = "user"
    content: str | list[UserContent]
    timestamp: int = 0
    """Milliseconds since the epoch."""


class AssistantMessage(_Data):
    """A model response, complete or partial, successful or failed.

    A failed or aborted response is still a message: ``stop_reason`` says so,
    ``error_message`` says why, and the content and usage are what arrived before
    the failure.
    """

    role: Literal["assistant"] = "assistant"
    content: list[AssistantContent] = Field(default_factory=list)
    api: str
    provider: str
    model: str
    response_id: str | None = None
    usage: Usage = Field(default_factory=Usage)
    stop_reason: StopReason = "stop"
    error_message: str | None = None
    error_status: int | None = None
    """HTTP-like status of a provider error, when there was one (429, 500, 529...)."""
    retry_after_ms: int | None = None
    """How long the provider asked us to wait before retrying, when it said."""
    retryable: bool | None = None
    """The provider's own verdict on retrying an error; ``None`` means classify from
    ``error_status`` and ``error_message`` (``pi_durable_tui.ai._failures``)."""
    timestamp: int = 0

    def text(self) -> str:
        """Return the concatenated text blocks."""
        return "".join(block.text for block in self.content if isinstance(block, TextContent))

    def tool_calls(self) -> list[ToolCall]:
        """Return the tool-call blocks in order."""
        return [block for block in self.content if isinstance(block, ToolCall)]


class ToolResultMessage(_Data):
    """The result of one tool call, as the model sees it."""

    role: Literal["toolResult"] = "toolResult"
    tool_call_id: str
    tool_name: str
    content: list[UserContent] = Field(default_factory=list)
    is_error: bool = False
    details: Any = None
    """Application metadata; never sent to the model."""
    timestamp: int = 0


Message = Annotated[UserMessage | AssistantMessage | ToolResultMessage, Field(discriminator="role")]


class ToolSpec(_Data):
    """A tool offered to the model: its name, description and JSON Schema."""

    name: str
    description: str
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class Context(_Data):
    """Everything one request sends: system prompt, messages and tools."""

    system_prompt: str | None = None
    messages: list[Message] = Field(default_factory=list)
    tools: list[ToolSpec] = Field(default_factory=list)


class ModelCost(_Data):
    """Prices in dollars per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


class Model(_Data):
    """One model a provider serves, as plain data (the catalog's rows)."""

    id: str
    name: str = ""
    api: str
    provider: str
    base_url: str = ""
    reasoning: bool = False
    thinking_levels: list[ThinkingLevel] | None = None
    """Levels the model supports; ``None`` means the provider default for reasoning models."""
    input: list[InputKind] = Field(default_factory=lambda: list[InputKind](["text"]))
    cost: ModelCost = Field(default_factory=ModelCost)
    context_window: int = 0
    max_tokens: int = 0
    headers: dict[str, str] = Field(default_factory=dict)
    compat: dict[str, Any] = Field(default_factory=dict)
    """Switches for OpenAI-compatible servers (see model-layer.md 1.11)."""


@dataclass(frozen=True, slots=True)
class ModelRef:
    """A model named by provider and id, as stored in a conversation's agent document."""

    provider: str
    model_id: str

    def __str__(self) -> str:
        return f"{self.provider}/{self.model_id}"

    @classmethod
    def parse(cls, text: str) -> ModelRef:
        """Parse ``provider/model-id``.

        Args:
            text: The reference, for example ``anthropic/claude-sonnet-4-5``.

        Returns:
            The reference.

        Raises:
            ValueError: When ``text`` has no ``/`` or an empty part.
        """
        provider, sep, model_id = text.partition("/")
        if not sep or not provider or not model_id:
            raise ValueError(f"Model reference must look like provider/model-id, got {text!r}")
        return cls(provider, model_id)


CacheRetention = Literal["none", "short", "long"]


class StreamOptions(_Data):
    """Per-request options shared by every provider.

    Unknown keys are kept (``extra="allow"``) and passed through to providers that
    understand them, as settings.stream does in R84.
    """

    reasoning: ThinkingLevel | None = None
    """Thinking level; ``None`` or ``"off"`` disables reasoning where the model allows."""
    max_tokens: int | None = None
    temperature: float | None = None
    session_id: str | None = None
    cache_retention: CacheRetention = "short"
    idle_timeout_s: float | None = 120.0
    """Seconds without a byte from the server before the stream fails; ``None`` waits forever."""

    # REMINDER: options are pinned in generation checkpoints, so they are stored.
    # Credentials never belong here; providers resolve keys themselves at request time.
