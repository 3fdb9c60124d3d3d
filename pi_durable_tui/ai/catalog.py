"""The model catalog: packaged models, user-defined models, cost, and dispatch.

Owns ``Models`` (look up, list and price models, and stream from the provider
registered for a model's api), ``calculate_cost``, ``load_catalog`` and
``default_models``. Implements model-layer.md 1.1 (api, provider, model), 1.5
(cost arithmetic) and 1.7 (a small packaged registry plus custom models).

The catalog is ``ai/data/models.json``, written by hand (no network at run time).
Its ``providers`` block gives each provider's api, base URL and key variable; its
``models`` rows are ``Model`` fields. Sources and assumptions:

- Anthropic (platform.claude.com model overviews and "What's new in Claude 4.6"):
  Opus 4.6 $5/$25, 128K output; Sonnet 4.6 $3/$15, 64K output, both with adaptive
  thinking (``compat.adaptive_thinking``; Opus's ``max`` effort is our ``xhigh``,
  ``compat.xhigh_effort``). Opus 4.5 $5/$25, Sonnet 4.5 and 4 $3/$15, Haiku 4.5
  $1/$5, Opus 4.1 $15/$75 (32K output). Cache reads cost 0.1x input and 5-minute
  cache writes 1.25x (model-layer.md 2.4); model-layer.md 1.7 confirms Sonnet 4.5.
  Context windows are the standard 200K: the 1M window of the 4.6 models started
  in beta with long-context prices, so it is left to a user override.
- OpenAI (platform.openai.com model pages, as of early 2026): GPT-5 / 5.1 $1.25/$10,
  5.2 $1.75/$14, 5-mini $0.25/$2, 5-nano $0.05/$0.40, all 400K context and 128K
  output; GPT-4.1 family 1,047,576 context and 32,768 output; GPT-4o family 128K and
  16,384; o3 $2/$8 (after the June 2025 price cut), o4-mini and o3-mini $1.10/$4.40,
  200K and 100K. Cached input is 0.1x (GPT-5 family), 0.25x (4.1, o3, o4-mini) or
  0.5x (4o, o3-mini); OpenAI does not bill cache writes. GPT-5 and the mini/nano
  models cannot turn reasoning off (lowest ``minimal``); 5.1 and 5.2 can (``none``),
  and 5.2 adds ``xhigh``. model-layer.md 1.7 confirms GPT-5.
- Newer models seen in public listings were left out where their figures could not
  be confirmed; a user model with the same provider and id adds or corrects a row.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from pi_durable_tui.ai.events import AssistantEvent, AssistantStream, ErrorEvent
from pi_durable_tui.ai.pricing import calculate_cost
from pi_durable_tui.ai.provider import KeyResolver, Provider
from pi_durable_tui.ai.types import (
    AssistantMessage,
    Context,
    Cost,
    Model,
    ModelRef,
    StreamOptions,
    Usage,
)

if TYPE_CHECKING:
    import httpx

    from pi_durable_tui.ai.faux import FauxProvider

_MODEL_FIELDS = frozenset(Model.model_fields)


@dataclass(frozen=True, slots=True)
class ProviderInfo:
    """What the catalog knows of a provider: its api, base URL and key variable."""

    name: str
    api: str
    base_url: str
    api_key_env: str | None = None


@dataclass(frozen=True, slots=True)
class Catalog:
    """The packaged catalog: provider defaults and model rows."""

    providers: Mapping[str, ProviderInfo]
    models: tuple[Model, ...]


@cache
def load_catalog() -> Catalog:
    """Read the packaged ``ai/data/models.json``.

    Returns:
        The catalog. Callers must not mutate its models (``Models`` copies them).
    """
    text = resources.files("pi_durable_tui.ai").joinpath("data/models.json").read_text("utf-8")
    data = json.loads(text)
    providers = {
        name: ProviderInfo(name, info["api"], info["base_url"], info.get("api_key_env"))
        for name, info in data["providers"].items()
    }
    models = []
    for row in data["models"]:
        info = providers[row["provider"]]
        models.append(Model.model_validate({"api": info.api, "base_url": info.base_url, **row}))
    return Catalog(providers, tuple(models))


class Models:
    """The models this process can use, and the providers that serve them.

    Args:
        providers: Providers by api name, or an iterable of providers (each
            registered under its ``api``).
        user_models: Rows from settings, like ``{"provider": "ollama", "id":
            "qwen3", "api": "openai-completions", "base_url":
            "http://localhost:11434/v1", "context_window": 32768}``. A row with the
            provider and id of a catalog model overrides that model's fields.
        catalog: The packaged catalog; ``load_catalog()`` when omitted.
        keys: When given, a request for a model of a catalog provider that needs
            a key (``api_key_env``) and uses the provider's own base URL fails
            with "<VARIABLE> is not set" when the resolver has no key.

    Raises:
        ValueError: When a user model row is malformed (the message names the row).
    """

    def __init__(
        self,
        providers: Mapping[str, Provider] | Iterable[Provider] = (),
        user_models: Iterable[Mapping[str, Any] | Model] = (),
        *,
        catalog: Catalog | None = None,
        keys: KeyResolver | None = None,
    ) -> None:
        self._catalog = catalog or load_catalog()
        self._keys = keys
        self._providers: dict[str, Provider] = {}
        self._models: dict[tuple[str, str], Model] = {}
        if isinstance(providers, Mapping):
            self._providers.update(providers)
        else:
            for provider in providers:
                self.register_provider(provider)
        for model in self._catalog.models:
            self.add(model.model_copy(deep=True))
        for index, row in enumerate(user_models):
            self.add(row if isinstance(row, Model) else self._user_model(index, row))

    def _user_model(self, index: int, row: Mapping[str, Any]) -> Model:
        label = f"user model {index}"
        if not isinstance(row, Mapping):
            raise ValueError(f"{label}: expected an object, got {type(row).__name__}")
        unknown = sorted(set(row) - _MODEL_FIELDS)
        if unknown:
            raise ValueError(
                f"{label}: unknown key(s) {', '.join(unknown)} "
                f"(known: {', '.join(sorted(_MODEL_FIELDS))})"
            )
        provider, model_id = row.get("provider"), row.get("id")
        if not isinstance(provider, str) or not provider or not isinstance(model_id, str):
            raise ValueError(f"{label}: 'provider' and 'id' must be non-empty strings")
        label = f"user model {index} ({provider}/{model_id})"
        base = self._models.get((provider, model_id))
        fields: dict[str, Any] = base.model_dump() if base is not None else {"name": model_id}
        info = self._catalog.providers.get(provider)
        if base is None and info is not None:
            fields.update(api=info.api, base_url=info.base_url)
        fields.update(row)
        if "api" not in fields:
            known = ", ".join(sorted({m.api for m in self._models.values()} | set(self._providers)))
            raise ValueError(f"{label}: 'api' is required (one of {known})")
        try:
            return Model.model_validate(fields)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in item['loc'])}: {item['msg']}" for item in error.errors()
            )
            raise ValueError(f"{label}: {problems}") from None

    def add(self, model: Model) -> None:
        """Add a model, replacing any with the same provider and id.

        Args:
            model: The model row.
        """
        self._models[(model.provider, model.id)] = model

    def register_provider(self, provider: Provider) -> None:
        """Serve every model whose ``api`` is ``provider.api`` with this provider.

        Args:
            provider: The provider.
        """
        self._providers[provider.api] = provider

    def register_faux(self, faux: FauxProvider) -> list[Model]:
        """Register a faux provider and its models, so ``faux/<id>`` resolves.

        Args:
            faux: The faux provider.

        Returns:
            The faux models now known.
        """
        self.register_provider(faux)
        for model in faux.models:
            self.add(model)
        return faux.models

    def provider_for(self, api: str) -> Provider | None:
        """Return the provider registered for an api, if any."""
        return self._providers.get(api)

    def get(self, ref: ModelRef | str) -> Model | None:
        """Look a model up.

        Args:
            ref: The model, as a ``ModelRef`` or ``provider/id`` text.

        Returns:
            The model, or ``None`` when unknown or when ``ref`` is malformed text.
        """
        if isinstance(ref, str):
            try:
                ref = ModelRef.parse(ref)
            except ValueError:
                return None
        return self._models.get((ref.provider, ref.model_id))

    def resolve(self, ref: ModelRef | str) -> Model:
        """Look a model up, failing with a message that says what exists.

        Args:
            ref: The model, as a ``ModelRef`` or ``provider/id`` text.

        Returns:
            The model.

        Raises:
            LookupError: When the model is unknown; the message names it and lists
                the models of its provider (or the known providers).
            ValueError: When ``ref`` is text without ``provider/id`` form.
        """
        if isinstance(ref, str):
            ref = ModelRef.parse(ref)
        model = self._models.get((ref.provider, ref.model_id))
        if model is not None:
            return model
        siblings = [m.id for m in self.list(ref.provider)]
        if siblings:
            raise LookupError(
                f"Unknown model {ref}. Models of {ref.provider}: {', '.join(siblings)}"
            )
        providers = ", ".join(sorted({m.provider for m in self._models.values()})) or "none"
        raise LookupError(f"Unknown model {ref}: no provider {ref.provider!r} (known: {providers})")

    def list(self, provider: str | None = None) -> list[Model]:
        """Return the known models, in catalog then registration order.

        Args:
            provider: Only this provider's models, when given.

        Returns:
            The models.
        """
        return [m for m in self._models.values() if provider is None or m.provider == provider]

    @staticmethod
    def cost(model: Model, usage: Usage) -> Cost:
        """Price a usage (see ``calculate_cost``).

        Args:
            model: The model.
            usage: Token counts.

        Returns:
            The cost in dollars.
        """
        return calculate_cost(model, usage)

    def stream(
        self,
        ref: ModelRef | str | Model,
        context: Context,
        options: StreamOptions | None = None,
        *,
        abort: asyncio.Event | None = None,
    ) -> AssistantStream:
        """Stream one response from the provider serving a model.

        Never raises for an unknown model, a missing provider or a missing key:
        the stream ends with an ``ErrorEvent`` saying what to fix.

        Args:
            ref: The model (a resolved ``Model`` is used as is).
            context: System prompt, messages and tools.
            options: Per-request options; defaults when omitted.
            abort: An ``asyncio.Event``; when set, the stream ends ``aborted``.

        Returns:
            The stream of events.
        """
        options = options or StreamOptions()
        if isinstance(ref, Model):
            model = ref
        else:
            try:
                model = self.resolve(ref)
            except (LookupError, ValueError) as error:
                wanted, _, model_id = str(ref).partition("/")
                return error_stream(wanted, model_id, "", str(error))
        provider = self._providers.get(model.api)
        if provider is None:
            served = ", ".join(sorted(self._providers)) or "none"
            return error_stream(
                model.provider,
                model.id,
                model.api,
                f"No provider for api {model.api!r} (model {model.provider}/{model.id}); "
                f"providers are registered for: {served}",
            )
        missing = self.missing_key(model)
        if missing is not None:
            return error_stream(
                model.provider,
                model.id,
                model.api,
                f"{missing} is not set: export it to use {model.provider}/{model.id}",
            )
        try:
            return provider.stream(model, context, options, abort=abort)
        except Exception as error:  # a provider must not raise; contain it anyway
            text = f"{type(error).__name__}: {error}"
            return error_stream(model.provider, model.id, model.api, text)

    def missing_key(self, model: Model) -> str | None:
        """Return the variable to set when a model needs a key that is missing.

        Args:
            model: The model.

        Returns:
            The environment variable name (``ANTHROPIC_API_KEY``...), or ``None``
            when no key is needed, one is configured, or no resolver was given.
        """
        info = self._catalog.providers.get(model.provider)
        if self._keys is None or info is None or info.api_key_env is None:
            return None
        if model.base_url.rstrip("/") != info.base_url.rstrip("/"):
            return None  # a proxy or local server: a key may not be needed
        return None if self._keys(model.provider) else info.api_key_env


def error_stream(provider: str, model_id: str, api: str, message: str) -> AssistantStream:
    """Build a stream that ends at once with a non-retryable error event.

    Args:
        provider: The provider name for the message.
        model_id: The model id for the message.
        api: The api name for the message.
        message: The error text (never containing a key).

    Returns:
        The stream.
    """
    final = AssistantMessage(
        api=api,
        provider=provider,
        model=model_id,
        stop_reason="error",
        error_message=message,
        retryable=False,
    )

    async def events() -> AsyncIterator[AssistantEvent]:
        yield ErrorEvent("error", final)

    return AssistantStream(events())


def default_models(
    user_models: Iterable[Mapping[str, Any] | Model] = (),
    *,
    faux: FauxProvider | None = None,
    environ: Mapping[str, str] | None = None,
    client: httpx.AsyncClient | None = None,
) -> Models:
    """Build the models of a normal run: HTTP providers keyed from the environment.

    ``OPENAI_BASE_URL``, when set, replaces the base URL of the catalog's OpenAI
    models (the OpenAI SDK convention for proxies and compatible servers); a
    request there needs no key unless the server asks for one.

    Args:
        user_models: Rows from settings; they win over the environment.
        faux: A faux provider to register as well.
        environ: The environment to read keys and ``OPENAI_BASE_URL`` from;
            ``os.environ`` when omitted.
        client: An HTTP client shared by the providers.

    Returns:
        The models.

    Raises:
        ImportError: When the HTTP providers (``ai.providers``) are missing.
    """
    from pi_durable_tui.ai.providers import create_providers, env_keys

    env = os.environ if environ is None else environ
    keys = env_keys(env)
    catalog = load_catalog()
    openai_base_url = env.get("OPENAI_BASE_URL")
    if openai_base_url:
        rows = tuple(
            m.model_copy(update={"base_url": openai_base_url}) if m.provider == "openai" else m
            for m in catalog.models
        )
        catalog = Catalog(catalog.providers, rows)
    models = Models(create_providers(keys, client), user_models, catalog=catalog, keys=keys)
    if faux is not None:
        models.register_faux(faux)
    return models
