"""The models a process can use: lookup, prices, custom providers, and dispatch.

Owns ``Models`` (look up, list and price models, and stream from the provider
registered for a model's api), ``error_stream`` and ``default_models`` (the
models of a normal run: the packaged catalog, HTTP providers keyed from the
environment, custom provider declarations, user model rows). Implements
model-layer.md 1.1 (api, provider, model), 1.5 (cost arithmetic), 1.7 (the
packaged registry plus custom models) and DESIGN.md section 5 (custom
providers declared in settings; ``--base-url`` for a local OpenAI-compatible
server).

Which api and URL serve ``provider/id``, in order:

1. a custom provider's declared model: the declared api at the declared base
   URL, the declared prices (zero unless given);
2. a packaged catalog row, possibly overridden field by field by a user row;
3. ``use_base_url(ref, url)`` (``--base-url``): a known model keeps its api and
   moves to ``url``, with its catalog prices only when ``url`` is not local; an
   unknown id gets zero cost and ``anthropic-messages`` when its provider
   speaks it (a proxy for Anthropic), else ``openai-completions`` (the protocol
   every local server speaks, also for ``openai/<unknown id>``);
4. ``serve_unknown_from(url, provider)``: every id still unknown (of that
   provider, or of any) is served from ``url`` as ``use_base_url`` serves it, at
   the moment it is looked up. ``--base-url`` sets it for every provider, so a
   continued session, ``/model`` and a subagent reach that server's other
   models; ``OPENAI_BASE_URL`` sets it for ``openai``, so ``openai/qwen3`` works
   against the local server the variable names.

Keys are looked up by provider name at request time (``KeyResolver``), never
stored in a ``Model`` or ``StreamOptions``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

import httpx
from pydantic import ValidationError

from pi_durable_tui.ai._base_urls import checked_base_url, is_local_url
from pi_durable_tui.ai._catalog import Catalog, ProviderInfo, load_catalog
from pi_durable_tui.ai._events import AssistantEvent, AssistantStream, ErrorEvent
from pi_durable_tui.ai._key_refusals import explain_key_refusals, key_refusal_hint
from pi_durable_tui.ai._pricing import calculate_cost
from pi_durable_tui.ai._protocol import KeyResolver, Provider
from pi_durable_tui.ai._types import (
    AssistantMessage,
    Context,
    Cost,
    Model,
    ModelCost,
    ModelRef,
    StreamOptions,
    Usage,
)
from pi_durable_tui.ai.faux import FauxProvider
from pi_durable_tui.ai.providers import ProviderDeclaration, create_providers, env_keys

BASE_URL_API = "openai-completions"
"""The api of an unknown provider's model served from ``--base-url``: every local server
speaks it."""

_MODEL_FIELDS = frozenset(Model.model_fields)


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
        keys: When given, a request for a model whose provider needs a key fails
            with "<VARIABLE> is not set" when the resolver has no key: a catalog
            provider at its own base URL, or a custom provider that declares an
            ``api_key_env``.
        declarations: Custom providers (local and self-hosted servers); their
            models are served through the declared api at the declared base URL.

    Raises:
        ValueError: When a user model row is malformed (the message names the
            row), or a declaration reuses the name of a catalog provider, of the
            faux provider or of another declaration.
    """

    def __init__(
        self,
        providers: Mapping[str, Provider] | Iterable[Provider] = (),
        user_models: Iterable[Mapping[str, Any] | Model] = (),
        *,
        catalog: Catalog | None = None,
        keys: KeyResolver | None = None,
        declarations: Iterable[ProviderDeclaration] = (),
    ) -> None:
        self._catalog = catalog or load_catalog()
        self._keys = keys
        self._unknown_served_from: dict[str | None, str] = {}
        """Base URLs serving ids nothing declares, by provider (``None``: any provider)."""
        self._providers: dict[str, Provider] = {}
        self._models: dict[tuple[str, str], Model] = {}
        self._provider_info: dict[str, ProviderInfo] = dict(self._catalog.providers)
        if isinstance(providers, Mapping):
            self._providers.update(providers)
        else:
            for provider in providers:
                self.register_provider(provider)
        for model in self._catalog.models:
            self.add(model.model_copy(deep=True))
        self._catalog_prices = {(m.provider, m.id) for m in self._catalog.models}
        """Models whose prices are the vendor's (the catalog's), not declared by the user."""
        for declaration in declarations:
            self._declare(declaration)
        for index, row in enumerate(user_models):
            model = row if isinstance(row, Model) else self._user_model(index, row)
            if isinstance(row, Model) or "cost" in row:
                self._catalog_prices.discard((model.provider, model.id))
            self.add(model)

    def _declare(self, declaration: ProviderDeclaration) -> None:
        name = declaration.name
        if name in self._catalog.providers or name == "faux":
            raise ValueError(
                f"custom provider {name!r}: the name belongs to a built-in provider; choose "
                "another name (a user model row changes a catalog model instead)"
            )
        if name in self._provider_info:
            raise ValueError(f"custom provider {name!r} is declared twice")
        self._provider_info[name] = ProviderInfo(
            name, declaration.api, declaration.base_url, declaration.api_key_env
        )
        for model in declaration.model_rows():
            self.add(model)

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
        info = self._provider_info.get(provider)
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

    def use_base_url(self, ref: ModelRef | str, base_url: str) -> Model:
        """Serve a model from a server at ``base_url`` (``--base-url``), and return it.

        A known model keeps its api and limits and moves to ``base_url`` (a proxy
        or a compatible server standing in for it); on a local server
        (``is_local_url``) a catalog row's prices are dropped (cost 0), while
        prices a settings row declares are kept. An unknown id becomes a model at
        ``base_url`` with zero cost and no context window (unknown), speaking
        ``anthropic-messages`` for an Anthropic-style provider and
        ``openai-completions`` otherwise (``openai/<unknown id>`` included: a
        compatible server speaks Chat Completions, not Responses).

        Args:
            ref: The model, as a ``ModelRef`` or ``provider/id`` text.
            base_url: The server, like ``http://localhost:8080/v1``.

        Returns:
            The model now registered under ``ref``.

        Raises:
            ValueError: When ``ref`` is text without ``provider/id`` form, or
                ``base_url`` is not an http(s) URL.
        """
        if isinstance(ref, str):
            ref = ModelRef.parse(ref)
        url = checked_base_url(base_url)
        known = self._models.get((ref.provider, ref.model_id))
        if known is not None:
            update: dict[str, Any] = {"base_url": url}
            if (ref.provider, ref.model_id) in self._catalog_prices and is_local_url(url):
                # REMINDER: a local server is not the vendor: its tokens cost
                # nothing unless a settings row declares prices for this model.
                update["cost"] = ModelCost()
            model = known.model_copy(update=update)
        else:
            info = self._provider_info.get(ref.provider)
            api = info.api if info is not None else BASE_URL_API
            model = Model(
                id=ref.model_id,
                name=ref.model_id,
                # Only OpenAI itself serves the Responses API under an unknown id;
                # every compatible server speaks Chat Completions.
                api=BASE_URL_API if api == "openai-responses" else api,
                provider=ref.provider,
                base_url=url,
                cost=ModelCost(),
            )
        self.add(model)
        return model

    def serve_unknown_from(self, base_url: str, provider: str | None = None) -> None:
        """Serve every model id nothing else knows from a server, when it is looked up.

        ``get`` and ``resolve`` then answer an unknown ``provider/id`` (of
        ``provider``, or of any provider when ``None``) with ``use_base_url(ref,
        base_url)`` instead of nothing: the model a continued session names,
        another model picked with ``/model``, a subagent's model. Known models are
        not moved, and with ``provider=None`` a custom provider's unknown id is
        still refused: that provider has a server of its own.

        Args:
            base_url: The server, like ``http://localhost:11434/v1``.
            provider: Only this provider's unknown ids; ``None`` for every provider.

        Raises:
            ValueError: When ``base_url`` is not an http(s) URL.
        """
        self._unknown_served_from[provider] = checked_base_url(base_url)

    def _served_unknown(self, ref: ModelRef) -> Model | None:
        url = self._unknown_served_from.get(ref.provider)
        if url is None and not self._is_declared(ref.provider):
            # A declared provider has its own server: an id it lacks is a typo to
            # refuse (listing its models), not a model of the --base-url server.
            url = self._unknown_served_from.get(None)
        return None if url is None else self.use_base_url(ref, url)

    def _is_declared(self, provider: str) -> bool:
        return provider in self._provider_info and provider not in self._catalog.providers

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
        return self._models.get((ref.provider, ref.model_id)) or self._served_unknown(ref)

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
        model = self._models.get((ref.provider, ref.model_id)) or self._served_unknown(ref)
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
        the stream ends with an ``ErrorEvent`` saying what to fix. A server that
        refuses the credentials (401, 403) is answered with the variable to set
        or check (``key_refusal_hint``).

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
            stream = provider.stream(model, context, options, abort=abort)
        except Exception as error:  # a provider must not raise; contain it anyway
            text = f"{type(error).__name__}: {error}"
            return error_stream(model.provider, model.id, model.api, text)
        return explain_key_refusals(stream, lambda: self._key_refusal_hint(model))

    def _key_refusal_hint(self, model: Model) -> str:
        info = self._provider_info.get(model.provider)
        key_sent = self._keys is not None and bool(self._keys(model.provider))
        variable = info.api_key_env if info is not None else None
        return key_refusal_hint(
            model.provider, variable, declared=info is not None, key_sent=key_sent
        )

    def provider_keys(self) -> tuple[str, ...]:
        """Return the keys the resolver holds now, one per provider that has one.

        The harness hides these values wherever they would be committed or
        printed (issue 13), whatever the name of the variable they came from.
        """
        if self._keys is None:
            return ()
        found = (self._keys(name) for name in sorted(self._provider_info))
        return tuple(key for key in found if key)

    def default_model(self) -> Model | None:
        """Return the model to start with when nothing names one.

        The catalog's default model of the first catalog provider, in catalog order
        (Anthropic, then OpenAI), whose key is set: a key in the environment says
        which vendor the user has an account with.

        Returns:
            The model, or ``None`` when no catalog provider has a key (or no resolver
            was given: nothing says a key is there).
        """
        if self._keys is None:
            return None
        for name, info in self._catalog.providers.items():
            model = self._models.get((name, info.default_model or ""))
            if model is not None and self._keys(name):
                return model
        return None

    def missing_key(self, model: Model) -> str | None:
        """Return the variable to set when a model needs a key that is missing.

        Args:
            model: The model.

        Returns:
            The environment variable name (``ANTHROPIC_API_KEY``, a custom
            provider's ``api_key_env``), or ``None`` when no key is needed, one is
            configured, or no resolver was given.
        """
        info = self._provider_info.get(model.provider)
        if self._keys is None or info is None or info.api_key_env is None:
            return None
        if model.base_url.rstrip("/") != info.base_url.rstrip("/"):
            return None  # a proxy or local server in its place: a key may not be needed
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
    declarations: Iterable[ProviderDeclaration] = (),
    faux: FauxProvider | None = None,
    environ: Mapping[str, str] | None = None,
    client: httpx.AsyncClient | None = None,
) -> Models:
    """Build the models of a normal run: HTTP providers keyed from the environment.

    ``OPENAI_BASE_URL``, when set, replaces the base URL of the catalog's OpenAI
    models (the OpenAI SDK convention for proxies and compatible servers); a
    request there needs no key unless the server asks for one. It serves
    ``openai/<id>`` for ids the catalog lacks too (a local server's own model
    names), through Chat Completions, and on a local server (``is_local_url``)
    the catalog's prices are dropped, as ``--base-url`` does.

    Args:
        user_models: Rows from settings; they win over the catalog.
        declarations: Custom providers from settings; each one's key is read
            from its ``api_key_env`` at request time.
        faux: A faux provider to register as well.
        environ: The environment to read keys and ``OPENAI_BASE_URL`` from;
            ``os.environ`` when omitted.
        client: An HTTP client shared by the providers.

    Returns:
        The models.

    Raises:
        BaseUrlError: ``OPENAI_BASE_URL`` is not an http(s) URL.
        ValueError: As ``Models`` does, for a malformed row or a clashing name.
    """
    env = os.environ if environ is None else environ
    declared = list(declarations)
    catalog = load_catalog()
    variables = {
        name: info.api_key_env for name, info in catalog.providers.items() if info.api_key_env
    }
    variables.update(
        (declaration.name, declaration.api_key_env)
        for declaration in declared
        if declaration.api_key_env
    )
    keys = env_keys(env, variables)
    openai_base_url = env.get("OPENAI_BASE_URL")
    if openai_base_url:
        moved: dict[str, Any] = {"base_url": checked_base_url(openai_base_url, "OPENAI_BASE_URL")}
        if is_local_url(moved["base_url"]):
            # REMINDER: as with --base-url, a local server is not the vendor: its
            # tokens cost nothing unless a settings row declares prices.
            moved["cost"] = ModelCost()
        rows = tuple(
            m.model_copy(update=moved) if m.provider == "openai" else m for m in catalog.models
        )
        catalog = Catalog(catalog.providers, rows)
    models = Models(
        create_providers(keys, client),
        user_models,
        catalog=catalog,
        keys=keys,
        declarations=declared,
    )
    if openai_base_url:
        # openai/<any id> on the server the variable names (a local server's own
        # model names are not in the catalog), spoken in Chat Completions.
        models.serve_unknown_from(openai_base_url, "openai")
    if faux is not None:
        models.register_faux(faux)
    return models
