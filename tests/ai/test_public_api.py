"""The public surface of ``pi_durable_tui.ai`` is pinned: changing it is a decision."""

from __future__ import annotations

import pi_durable_tui.ai as ai

EXPECTED = {
    "AssistantEvent",
    "AssistantMessage",
    "AssistantStream",
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
    "THINKING_LEVELS",
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
}


def test_the_ai_package_exports_exactly_its_documented_names() -> None:
    assert set(ai.__all__) == EXPECTED


def test_every_exported_name_resolves() -> None:
    for name in ai.__all__:
        assert getattr(ai, name) is not None, name
