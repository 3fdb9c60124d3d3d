"""Thinking levels: which a model supports, and what each provider sends for them.

Owns ``supported_thinking_levels``, ``clamp_thinking_level``, the Anthropic
mapping ``anthropic_thinking`` (token budgets, or adaptive thinking with an
effort) and the OpenAI mapping ``openai_reasoning_effort``. Implements
model-layer.md 1.8.

Model switches read from ``model.compat`` (snake_case; the camelCase spelling
of pi-ai is accepted too):

- ``adaptive_thinking: true`` or ``anthropic_thinking: "adaptive"``: Anthropic
  ``thinking: {type: adaptive}`` with ``output_config.effort``.
- ``xhigh_effort``: the Anthropic effort sent for ``xhigh`` (default ``max``).
- ``thinking_effort_map``: level to provider string (or ``null`` for
  "send nothing"), overriding the defaults of either provider.
- ``thinking_budgets``: level to Anthropic budget tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pi_durable_tui.ai._types import THINKING_LEVELS, Model, ThinkingLevel

DEFAULT_LEVELS: tuple[ThinkingLevel, ...] = ("off", "minimal", "low", "medium", "high")
"""Levels of a reasoning model whose catalog row lists none (``xhigh`` must be listed)."""

ANTHROPIC_BUDGETS: dict[ThinkingLevel, int] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 32768,
}
"""Default Anthropic ``budget_tokens`` per level."""

ANTHROPIC_MIN_BUDGET = 1024

ANTHROPIC_EFFORTS: dict[ThinkingLevel, str] = {
    "minimal": "low",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "max",
}
"""Default Anthropic adaptive-thinking efforts per level."""


def compat_value(model: Model, name: str, default: Any = None) -> Any:
    """Read a ``model.compat`` switch by its snake_case name (camelCase accepted).

    Args:
        model: The model.
        name: The snake_case switch name, for example ``supports_developer_role``.
        default: The value when the switch is absent.

    Returns:
        The switch's value, or ``default``.
    """
    if name in model.compat:
        return model.compat[name]
    head, *rest = name.split("_")
    camel = head + "".join(part.capitalize() for part in rest)
    return model.compat.get(camel, default)


def supported_thinking_levels(model: Model) -> list[ThinkingLevel]:
    """List the thinking levels a model accepts, lowest first.

    Args:
        model: The model.

    Returns:
        ``["off"]`` for a non-reasoning model; the catalog's ``thinking_levels``
        (in canonical order) when given; otherwise ``off`` to ``high``.
    """
    if not model.reasoning:
        return ["off"]
    if model.thinking_levels:
        listed = set(model.thinking_levels)
        return [level for level in THINKING_LEVELS if level in listed]
    return list(DEFAULT_LEVELS)


def clamp_thinking_level(model: Model, level: ThinkingLevel | None) -> ThinkingLevel:
    """Return the nearest level the model supports.

    The search moves up to the next supported level first, then down, so asking
    ``off`` of a model that cannot turn reasoning off gives its lowest level.

    Args:
        model: The model.
        level: The requested level; ``None`` means ``off``.

    Returns:
        A level from ``supported_thinking_levels(model)``.
    """
    wanted: ThinkingLevel = level or "off"
    supported = supported_thinking_levels(model)
    if wanted in supported:
        return wanted
    position = THINKING_LEVELS.index(wanted)
    for candidate in THINKING_LEVELS[position + 1 :]:
        if candidate in supported:
            return candidate
    for candidate in reversed(THINKING_LEVELS[:position]):
        if candidate in supported:
            return candidate
    return supported[0] if supported else "off"


def _effort_override(model: Model, level: ThinkingLevel) -> tuple[bool, str | None]:
    mapping = compat_value(model, "thinking_effort_map")
    if isinstance(mapping, dict) and level in mapping:
        value = mapping[level]
        return True, value if isinstance(value, str) else None
    return False, None


@dataclass(frozen=True, slots=True)
class AnthropicThinking:
    """What an Anthropic request carries for one thinking level."""

    thinking: dict[str, Any] | None
    """The ``thinking`` parameter, or ``None`` to send none."""
    output_config: dict[str, Any] | None
    """``output_config`` with the adaptive effort, or ``None``."""
    max_tokens: int
    """The request's ``max_tokens`` (raised above the budget in budget mode)."""

    @property
    def enabled(self) -> bool:
        """Whether thinking is on (then ``temperature`` must not be sent)."""
        return self.thinking is not None and self.thinking.get("type") != "disabled"


def is_adaptive_anthropic(model: Model) -> bool:
    """Tell whether an Anthropic model uses adaptive thinking instead of budgets."""
    return bool(compat_value(model, "adaptive_thinking")) or (
        compat_value(model, "anthropic_thinking") == "adaptive"
    )


def anthropic_thinking(
    model: Model, level: ThinkingLevel | None, max_tokens: int
) -> AnthropicThinking:
    """Map a level to Anthropic's thinking parameters.

    Args:
        model: The model (``reasoning``, ``max_tokens`` and compat switches matter).
        level: The requested level, clamped here.
        max_tokens: The request's output budget before thinking is added.

    Returns:
        The parameters. Budget mode raises ``max_tokens`` to base + budget,
        capped at the model's maximum, and keeps the budget below it.
    """
    if not model.reasoning:
        return AnthropicThinking(None, None, max_tokens)
    clamped = clamp_thinking_level(model, level)
    if clamped == "off":
        return AnthropicThinking({"type": "disabled"}, None, max_tokens)
    if is_adaptive_anthropic(model):
        overridden, effort = _effort_override(model, clamped)
        if not overridden:
            effort = ANTHROPIC_EFFORTS[clamped]
            if clamped == "xhigh":
                effort = str(compat_value(model, "xhigh_effort", effort))
        config = {"effort": effort} if effort else None
        return AnthropicThinking({"type": "adaptive"}, config, max_tokens)
    budgets = compat_value(model, "thinking_budgets")
    budget = int(
        budgets[clamped]
        if isinstance(budgets, dict) and clamped in budgets
        else ANTHROPIC_BUDGETS[clamped]
    )
    total = max_tokens + budget
    if model.max_tokens > 0:
        total = min(total, model.max_tokens)
    if total <= budget:
        # REMINDER: the API refuses budget_tokens >= max_tokens, and < 1024.
        budget = max(ANTHROPIC_MIN_BUDGET, total - ANTHROPIC_MIN_BUDGET)
    return AnthropicThinking({"type": "enabled", "budget_tokens": budget}, None, total)


def openai_reasoning_effort(model: Model, level: ThinkingLevel | None) -> str | None:
    """Map a level to OpenAI's ``reasoning_effort`` / ``reasoning.effort``.

    Args:
        model: The model.
        level: The requested level, clamped here.

    Returns:
        The effort string (``none`` at ``off``), or ``None`` to send nothing
        (non-reasoning models, or a ``thinking_effort_map`` entry of ``null``).
    """
    if not model.reasoning:
        return None
    clamped = clamp_thinking_level(model, level)
    overridden, effort = _effort_override(model, clamped)
    if overridden:
        return effort
    return "none" if clamped == "off" else clamped
