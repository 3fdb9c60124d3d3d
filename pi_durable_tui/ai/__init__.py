"""Model access: message and event types, providers, the model catalog, token counting.

Layer 2 of DESIGN.md; imports nothing else from the package. The public face of
a package of private modules and two sub-packages: ``_types`` and ``_events``
(the vocabulary), ``_protocol`` (what a provider is), ``_handoff``,
``_thinking``, ``_partial_json``, ``_pricing``, ``_failures``, ``_base_urls``,
``_key_refusals`` and ``_tokens`` (pure helpers), ``providers/`` (the HTTP
providers, one module per wire API, and custom provider declarations),
``faux/`` (the scripted provider and its script files), ``_catalog`` (the
packaged model rows) and ``_models`` (``Models``, on top of everything).
Imports run one way: vocabulary <- helpers <- ``providers`` and ``faux`` <-
``_models``.
"""

from pi_durable_tui.ai._base_urls import BaseUrlError
from pi_durable_tui.ai._events import (
    AssistantEvent,
    AssistantStream,
    DoneEvent,
    ErrorEvent,
    StartEvent,
    StreamProtocolError,
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
from pi_durable_tui.ai._failures import is_context_overflow, is_retryable_error, retry_after_ms
from pi_durable_tui.ai._handoff import transform_messages
from pi_durable_tui.ai._models import Models, default_models
from pi_durable_tui.ai._partial_json import RAW_ARGUMENTS_FIELD
from pi_durable_tui.ai._pricing import calculate_cost
from pi_durable_tui.ai._protocol import KeyResolver, Provider
from pi_durable_tui.ai._thinking import clamp_thinking_level, supported_thinking_levels
from pi_durable_tui.ai._tokens import (
    count_tokens,
    estimate_context_tokens,
    estimate_message_tokens,
)
from pi_durable_tui.ai._types import (
    THINKING_LEVELS,
    AssistantMessage,
    Context,
    Cost,
    ImageContent,
    Message,
    Model,
    ModelCost,
    ModelRef,
    StopReason,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from pi_durable_tui.ai.faux import (
    FauxMatch,
    FauxProvider,
    FauxResponse,
    FauxScript,
    FauxScriptError,
    FauxUsage,
    faux_error,
    faux_model,
    faux_response,
    faux_text,
    faux_thinking,
    faux_tool_call,
    load_faux_script,
)
from pi_durable_tui.ai.providers import create_providers, env_keys

__all__ = [
    "RAW_ARGUMENTS_FIELD",
    "THINKING_LEVELS",
    "AssistantEvent",
    "AssistantMessage",
    "AssistantStream",
    "BaseUrlError",
    "Context",
    "Cost",
    "DoneEvent",
    "ErrorEvent",
    "FauxMatch",
    "FauxProvider",
    "FauxResponse",
    "FauxScript",
    "FauxScriptError",
    "FauxUsage",
    "ImageContent",
    "KeyResolver",
    "Message",
    "Model",
    "ModelCost",
    "ModelRef",
    "Models",
    "Provider",
    "StartEvent",
    "StopReason",
    "StreamOptions",
    "StreamProtocolError",
    "TextContent",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextStartEvent",
    "ThinkingContent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingLevel",
    "ThinkingStartEvent",
    "ToolCall",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
    "ToolResultMessage",
    "ToolSpec",
    "Usage",
    "UserMessage",
    "calculate_cost",
    "clamp_thinking_level",
    "count_tokens",
    "create_providers",
    "default_models",
    "env_keys",
    "estimate_context_tokens",
    "estimate_message_tokens",
    "faux_error",
    "faux_model",
    "faux_response",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
    "is_context_overflow",
    "is_retryable_error",
    "load_faux_script",
    "retry_after_ms",
    "supported_thinking_levels",
    "transform_messages",
]
