"""Custom provider declarations: local and self-hosted servers described in settings.

Owns ``ProviderDeclaration`` and ``ModelDeclaration``, the pydantic models of
one custom provider (llama.cpp, Ollama, vLLM, LM Studio, a company proxy) as
the app's settings file embeds them, and their translation into catalog rows
(``Model``). Implements DESIGN.md section 5 ("custom providers are declared in
settings with a base URL, a wire API, a key variable and their models") and
model-layer.md 1.1 ("custom models for local servers are just such objects
with a ``baseUrl``").

A declaration names the provider (the ``name`` of ``name/id``), the base URL,
the wire API it speaks, the environment variable holding its key (none: no
auth header is sent, which local servers accept), and its models with their
context window, output limit and prices. Prices are zero unless declared:
a local model is never billed at a borrowed catalog price.

REMINDER: a declaration holds the *name* of the key variable, never a key.
Keys are read from the environment at request time (``env_keys``), so nothing
that is stored or shown (``Model``, ``StreamOptions``, settings) carries one.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pi_durable_tui.ai._types import InputKind, Model, ModelCost, ThinkingLevel

WireApi = Literal["openai-completions", "openai-responses", "anthropic-messages"]
"""The wire APIs a custom provider may speak."""

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class DeclaredCost(BaseModel):
    """Dollars per million tokens of a declared model; every field zero unless given."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(default=0.0, ge=0)
    output: float = Field(default=0.0, ge=0)
    cache_read: float = Field(default=0.0, ge=0)
    cache_write: float = Field(default=0.0, ge=0)


class ModelDeclaration(BaseModel):
    """One model of a custom provider.

    Attributes:
        id: The id the server knows the model by (sent as ``model``).
        name: A display name; the id when omitted.
        context_window: Tokens of context the server is configured for.
        max_tokens: Tokens of output at most.
        cost: Dollars per million tokens; zero when omitted.
        reasoning: Whether the model reasons (thinking levels apply).
        thinking_levels: The levels it supports, when ``reasoning``.
        input: Accepted input kinds (``text``, ``image``).
        compat: Switches for OpenAI-compatible servers (model-layer.md 1.11),
            over the provider's own.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    name: str | None = None
    context_window: int = Field(gt=0)
    max_tokens: int = Field(gt=0)
    cost: DeclaredCost = Field(default_factory=DeclaredCost)
    reasoning: bool = False
    thinking_levels: list[ThinkingLevel] | None = None
    input: list[InputKind] = Field(default_factory=lambda: list[InputKind](["text"]))
    compat: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _output_fits_the_window(self) -> ModelDeclaration:
        if self.max_tokens > self.context_window:
            raise ValueError(
                f"max_tokens ({self.max_tokens}) is larger than context_window "
                f"({self.context_window})"
            )
        return self


class ProviderDeclaration(BaseModel):
    """A custom provider: a server, the API it speaks, its key variable and its models.

    Example (as JSON in a settings file)::

        {"name": "llama", "base_url": "http://localhost:8080/v1",
         "api": "openai-completions",
         "models": [{"id": "qwen3-8b", "context_window": 32768, "max_tokens": 8192}]}

    Attributes:
        name: The provider part of ``name/id``: letters, digits, ``.``, ``_``, ``-``.
        base_url: Where the API lives, ``http://`` or ``https://`` (for OpenAI-style
            servers usually ending in ``/v1``).
        api: ``openai-completions``, ``openai-responses`` or ``anthropic-messages``.
        api_key_env: The environment variable holding the key, read at each
            request; ``None`` sends no key.
        compat: Switches for every model of the provider.
        models: Its models; at least one, ids unique.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    base_url: str
    api: WireApi
    api_key_env: str | None = None
    compat: dict[str, Any] = Field(default_factory=dict)
    models: list[ModelDeclaration] = Field(min_length=1)

    @field_validator("name")
    @classmethod
    def _plain_name(cls, name: str) -> str:
        if not _NAME.match(name):
            raise ValueError(
                f"{name!r} is not a provider name: use letters, digits, '.', '_' or '-' "
                "(it is the part before '/' in --model name/id)"
            )
        return name

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")) or len(url) <= len("https://"):
            raise ValueError(
                f"{url!r} is not an http(s) URL; write it like http://localhost:8080/v1"
            )
        return url.rstrip("/")

    @field_validator("api_key_env")
    @classmethod
    def _variable_name(cls, variable: str | None) -> str | None:
        if variable is not None and not _VARIABLE.match(variable):
            raise ValueError(
                f"{variable!r} is not an environment variable name; give the variable's "
                "name (like LLAMA_API_KEY), never the key itself"
            )
        return variable

    @model_validator(mode="after")
    def _unique_ids(self) -> ProviderDeclaration:
        seen: set[str] = set()
        for model in self.models:
            if model.id in seen:
                raise ValueError(f"model id {model.id!r} is declared twice")
            seen.add(model.id)
        return self

    def model_rows(self) -> list[Model]:
        """Return the catalog rows of the declared models.

        Returns:
            One ``Model`` per declared model, served through ``api`` at
            ``base_url``, with the declared limits and prices (zero by default).
        """
        return [
            Model(
                id=model.id,
                name=model.name or model.id,
                api=self.api,
                provider=self.name,
                base_url=self.base_url,
                reasoning=model.reasoning,
                thinking_levels=model.thinking_levels,
                input=list(model.input),
                cost=ModelCost(**model.cost.model_dump()),
                context_window=model.context_window,
                max_tokens=model.max_tokens,
                compat={**self.compat, **model.compat},
            )
            for model in self.models
        ]
