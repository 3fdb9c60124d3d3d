"""The packaged catalog: sane rows for both providers, and the reference's figures."""

from __future__ import annotations

from pi_durable_tui.ai import ModelCost, ModelRef, Models
from pi_durable_tui.ai._catalog import load_catalog


def test_the_packaged_catalog_has_sane_rows_for_both_providers() -> None:
    catalog = load_catalog()
    ids = {(m.provider, m.id) for m in catalog.models}

    for ref in [
        ("anthropic", "claude-opus-4-5"),
        ("anthropic", "claude-sonnet-4-5"),
        ("anthropic", "claude-haiku-4-5"),
        ("anthropic", "claude-opus-4-6"),
        ("openai", "gpt-5"),
        ("openai", "gpt-5-mini"),
        ("openai", "gpt-5-nano"),
        ("openai", "gpt-4.1"),
        ("openai", "gpt-4o"),
        ("openai", "o3"),
        ("openai", "o4-mini"),
    ]:
        assert ref in ids
    assert len(ids) == len(catalog.models)  # no duplicates
    for model in catalog.models:
        assert model.context_window > model.max_tokens > 0
        assert model.api == catalog.providers[model.provider].api
        assert model.base_url.startswith("https://")
        assert min(model.cost.input, model.cost.output, model.cost.cache_read) > 0
        assert model.cost.cache_read < model.cost.input < model.cost.output
        if model.thinking_levels is not None:
            assert model.reasoning


def test_catalog_facts_match_the_reference_examples() -> None:
    models = Models()

    sonnet = models.resolve("anthropic/claude-sonnet-4-5")
    gpt5 = models.resolve(ModelRef("openai", "gpt-5"))

    assert sonnet.cost == ModelCost(input=3, output=15, cache_read=0.3, cache_write=3.75)
    assert (sonnet.context_window, sonnet.max_tokens, sonnet.api) == (
        200_000,
        64_000,
        "anthropic-messages",
    )
    assert (gpt5.cost.input, gpt5.cost.output, gpt5.cost.cache_read) == (1.25, 10, 0.125)
    assert (gpt5.context_window, gpt5.max_tokens) == (400_000, 128_000)
    assert gpt5.api == "openai-responses"
    assert models.resolve("anthropic/claude-opus-4-6").compat["adaptive_thinking"] is True


def test_every_catalog_provider_names_a_default_model_it_has() -> None:
    catalog = load_catalog()
    ids = {(m.provider, m.id) for m in catalog.models}

    for name, info in catalog.providers.items():
        assert (name, info.default_model) in ids
