"""Pricing a response: dollars from token counts (model-layer.md 1.5).

Each cost field is the model's price per million tokens times the tokens of that
field; ``input`` never includes cache reads or writes, so no token is paid twice.
"""

from __future__ import annotations

from pi_durable_tui.ai._types import Cost, Model, Usage


def calculate_cost(model: Model, usage: Usage, *, multiplier: float = 1.0) -> Cost:
    """Price a usage with a model's per-million-token prices.

    Args:
        model: The model, whose ``cost`` is in dollars per million tokens.
        usage: Normalized token counts (``input`` excludes cache reads and writes).
        multiplier: A service-tier factor (OpenAI flex 0.5, priority 2).

    Returns:
        The cost per field and their total.
    """
    prices = model.cost
    scale = multiplier / 1_000_000
    cost = Cost(
        input=prices.input * usage.input * scale,
        output=prices.output * usage.output * scale,
        cache_read=prices.cache_read * usage.cache_read * scale,
        cache_write=prices.cache_write * usage.cache_write * scale,
    )
    cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write
    return cost
