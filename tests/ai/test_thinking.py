"""Thinking levels: support, clamping and the per-provider parameters."""

from __future__ import annotations

from typing import Any

import pytest

from pi_durable_tui.ai import Model, ThinkingLevel, clamp_thinking_level, supported_thinking_levels
from pi_durable_tui.ai._thinking import anthropic_thinking, openai_reasoning_effort


def model(**fields: Any) -> Model:
    values: dict[str, Any] = {"id": "m", "api": "anthropic-messages", "provider": "anthropic"}
    values.update(fields)
    return Model(**values)


def test_a_non_reasoning_model_supports_only_off_and_clamps_everything_to_it() -> None:
    plain = model()

    assert supported_thinking_levels(plain) == ["off"]
    assert clamp_thinking_level(plain, "high") == "off"


def test_a_reasoning_model_without_a_list_supports_off_to_high_but_not_xhigh() -> None:
    thinker = model(reasoning=True)

    assert supported_thinking_levels(thinker) == ["off", "minimal", "low", "medium", "high"]
    assert clamp_thinking_level(thinker, "xhigh") == "high"
    assert clamp_thinking_level(thinker, None) == "off"


@pytest.mark.parametrize(
    ("levels", "asked", "expected"),
    [
        (["minimal", "low", "medium", "high"], "off", "minimal"),
        (["low", "medium", "high"], "minimal", "low"),
        (["off", "low", "medium", "high"], "minimal", "low"),
        (["off", "low"], "high", "low"),
        (["off", "low", "medium", "high", "xhigh"], "xhigh", "xhigh"),
        (["high", "low"], "medium", "high"),
    ],
)
def test_clamping_moves_up_to_the_next_supported_level_then_down(
    levels: list[ThinkingLevel], asked: ThinkingLevel, expected: ThinkingLevel
) -> None:
    assert clamp_thinking_level(model(reasoning=True, thinking_levels=levels), asked) == expected


@pytest.mark.parametrize(
    ("level", "budget", "max_tokens"),
    [("minimal", 1024, 5024), ("low", 2048, 6048), ("medium", 8192, 12192), ("high", 16384, 20384)],
)
def test_anthropic_budgets_raise_max_tokens_by_the_budget(
    level: ThinkingLevel, budget: int, max_tokens: int
) -> None:
    thinking = anthropic_thinking(model(reasoning=True, max_tokens=64_000), level, 4000)

    assert thinking.thinking == {"type": "enabled", "budget_tokens": budget}
    assert thinking.max_tokens == max_tokens
    assert thinking.output_config is None
    assert thinking.enabled


def test_anthropic_max_tokens_is_capped_by_the_model_and_stays_above_the_budget() -> None:
    capped = anthropic_thinking(model(reasoning=True, max_tokens=20_000), "high", 8000)
    tiny = anthropic_thinking(model(reasoning=True, max_tokens=10_000), "high", 8000)

    assert (capped.max_tokens, capped.thinking) == (
        20_000,
        {"type": "enabled", "budget_tokens": 16384},
    )
    assert (tiny.max_tokens, tiny.thinking) == (10_000, {"type": "enabled", "budget_tokens": 8976})


def test_anthropic_off_disables_thinking_and_a_plain_model_sends_nothing() -> None:
    off = anthropic_thinking(model(reasoning=True), "off", 4000)
    plain = anthropic_thinking(model(), "high", 4000)

    assert (off.thinking, off.enabled, off.max_tokens) == ({"type": "disabled"}, False, 4000)
    assert (plain.thinking, plain.enabled) == (None, False)


@pytest.mark.parametrize(
    ("compat", "level", "effort"),
    [
        ({"adaptive_thinking": True}, "minimal", "low"),
        ({"anthropic_thinking": "adaptive"}, "medium", "medium"),
        ({"adaptive_thinking": True}, "high", "high"),
        ({"adaptive_thinking": True, "xhigh_effort": "xhigh"}, "xhigh", "xhigh"),
        ({"adaptive_thinking": True}, "xhigh", "max"),
    ],
)
def test_adaptive_anthropic_models_get_an_effort_and_keep_max_tokens(
    compat: dict[str, Any], level: ThinkingLevel, effort: str
) -> None:
    levels: list[ThinkingLevel] = ["off", "minimal", "low", "medium", "high", "xhigh"]
    thinker = model(reasoning=True, thinking_levels=levels, compat=compat)

    thinking = anthropic_thinking(thinker, level, 4000)

    assert thinking.thinking == {"type": "adaptive"}
    assert thinking.output_config == {"effort": effort}
    assert thinking.max_tokens == 4000


def test_openai_efforts_follow_the_clamped_level_and_an_override_map() -> None:
    gpt5 = model(api="openai-responses", reasoning=True, thinking_levels=["minimal", "low", "high"])
    mapped = model(reasoning=True, compat={"thinkingEffortMap": {"high": "max", "low": None}})

    assert openai_reasoning_effort(gpt5, "off") == "minimal"
    assert openai_reasoning_effort(gpt5, "medium") == "high"
    assert openai_reasoning_effort(model(reasoning=True), "off") == "none"
    assert openai_reasoning_effort(model(), "high") is None
    assert openai_reasoning_effort(mapped, "high") == "max"
    assert openai_reasoning_effort(mapped, "low") is None
