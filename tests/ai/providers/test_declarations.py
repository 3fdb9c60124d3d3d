"""Custom provider declarations validate strictly and become zero-priced catalog rows."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from pi_durable_tui.ai import ModelCost
from pi_durable_tui.ai.providers import ProviderDeclaration


def declaration(**fields: Any) -> dict[str, Any]:
    """A valid llama.cpp declaration as a settings file would hold it, with overrides."""
    model = {"id": "qwen3-8b", "context_window": 32768, "max_tokens": 8192}
    return {
        "name": "llama",
        "base_url": "http://localhost:8080/v1/",
        "api": "openai-completions",
        "models": [model],
        **fields,
    }


def test_a_declaration_becomes_rows_served_through_its_api_at_its_url_at_zero_cost() -> None:
    declared = ProviderDeclaration.model_validate(
        declaration(
            compat={"max_tokens_field": "max_tokens"},
            models=[
                {"id": "qwen3-8b", "context_window": 32768, "max_tokens": 8192},
                {
                    "id": "gpt-oss",
                    "name": "GPT OSS",
                    "context_window": 131072,
                    "max_tokens": 32768,
                    "reasoning": True,
                    "thinking_levels": ["low", "high"],
                    "input": ["text", "image"],
                    "cost": {"input": 0.1, "output": 0.2},
                    "compat": {"max_tokens_field": "max_completion_tokens"},
                },
            ],
        )
    )

    qwen, oss = declared.model_rows()

    assert (qwen.provider, qwen.id, qwen.name) == ("llama", "qwen3-8b", "qwen3-8b")
    assert (qwen.api, qwen.base_url) == ("openai-completions", "http://localhost:8080/v1")
    assert (qwen.context_window, qwen.max_tokens) == (32768, 8192)
    assert qwen.cost == ModelCost()  # never a borrowed catalog price
    assert qwen.compat == {"max_tokens_field": "max_tokens"}
    assert (oss.name, oss.reasoning, oss.thinking_levels) == ("GPT OSS", True, ["low", "high"])
    assert (oss.input, oss.cost.input, oss.cost.output) == (["text", "image"], 0.1, 0.2)
    assert oss.compat == {"max_tokens_field": "max_completion_tokens"}  # the model's wins


def test_a_declaration_holds_the_name_of_its_key_variable_never_a_key() -> None:
    declared = ProviderDeclaration.model_validate(declaration(api_key_env="LLAMA_API_KEY"))

    assert declared.api_key_env == "LLAMA_API_KEY"
    assert all("LLAMA_API_KEY" not in row.model_dump_json() for row in declared.model_rows())


@pytest.mark.parametrize(
    ("fields", "location", "message"),
    [
        ({"name": "my/llama"}, "name", "is not a provider name"),
        ({"base_url": "localhost:8080/v1"}, "base_url", "is not an http(s) URL"),
        ({"api": "ollama"}, "api", "'openai-completions', 'openai-responses' or"),
        ({"api_key_env": "sk-live-0123"}, "api_key_env", "never the key itself"),
        ({"models": []}, "models", "at least 1 item"),
        ({"modles": []}, "modles", "Extra inputs are not permitted"),
        (
            {"models": [{"id": "q", "max_tokens": 10}]},
            "models.0.context_window",
            "Field required",
        ),
        (
            {"models": [{"id": "q", "context_window": 100, "max_tokens": 200}]},
            "models.0",
            "max_tokens (200) is larger than context_window (100)",
        ),
        (
            {"models": [{"id": "q", "context_window": 9, "max_tokens": 1, "cost": {"in": 1}}]},
            "models.0.cost.in",
            "Extra inputs are not permitted",
        ),
        (
            {
                "models": [
                    {"id": "q", "context_window": 9, "max_tokens": 1},
                    {"id": "q", "context_window": 9, "max_tokens": 1},
                ]
            },
            "",
            "model id 'q' is declared twice",
        ),
    ],
)
def test_a_malformed_declaration_names_the_field_and_what_is_wrong(
    fields: dict[str, Any], location: str, message: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        ProviderDeclaration.model_validate(declaration(**fields))

    [error] = caught.value.errors()
    assert ".".join(str(part) for part in error["loc"]) == location
    assert message in error["msg"]
