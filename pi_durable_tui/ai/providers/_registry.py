"""The HTTP providers by api name, and API keys from the environment.

Owns ``create_providers`` (one instance of each HTTP provider sharing one
client, keyed by the api it implements; the catalog calls it) and ``env_keys``
(a ``KeyResolver`` reading one environment variable per provider name at each
request). Implements the api/provider split of model-layer.md 1.1 and DESIGN.md
section 5 (providers and their keys come from the environment; custom providers
name their own key variable).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import httpx

from pi_durable_tui.ai._protocol import KeyResolver, Provider
from pi_durable_tui.ai.providers._anthropic import AnthropicProvider
from pi_durable_tui.ai.providers._openai_completions import OpenAICompletionsProvider
from pi_durable_tui.ai.providers._openai_responses import OpenAIResponsesProvider
from pi_durable_tui.ai.providers._transport import create_client

KEY_VARIABLES: Mapping[str, str] = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
}
"""Provider name to the environment variable holding its API key (built-in providers)."""


def create_providers(
    keys: KeyResolver, client: httpx.AsyncClient | None = None
) -> dict[str, Provider]:
    """Create the three HTTP providers.

    Args:
        keys: Resolves a provider name to its API key at request time.
        client: The HTTP client they share; when ``None`` one new client is
            created for the three of them (its owner is the caller's process).

    Returns:
        ``{"anthropic-messages": ..., "openai-completions": ...,
        "openai-responses": ...}``.
    """
    shared = client if client is not None else create_client()
    providers: list[Provider] = [
        AnthropicProvider(keys, shared),
        OpenAICompletionsProvider(keys, shared),
        OpenAIResponsesProvider(keys, shared),
    ]
    return {provider.api: provider for provider in providers}


def env_keys(
    environ: Mapping[str, str] = os.environ,
    variables: Mapping[str, str] = KEY_VARIABLES,
) -> KeyResolver:
    """Return a key resolver reading the environment at each request.

    Args:
        environ: The environment to read (``os.environ`` by default).
        variables: Provider name to the variable holding its key; the built-in
            ``ANTHROPIC_API_KEY`` and ``OPENAI_API_KEY`` by default. Custom
            providers add their ``api_key_env`` here.

    Returns:
        A resolver giving the value of a provider's variable; an empty value,
        or a provider without a variable (a local server), gives ``None``, and
        its requests go without a key.
    """

    def resolve(provider: str) -> str | None:
        variable = variables.get(provider)
        if variable is None:
            return None
        return environ.get(variable) or None

    return resolve
