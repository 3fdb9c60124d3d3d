"""The HTTP providers: one private module per wire API over a shared SSE base.

The public face of a small package (model-layer.md 1.1-1.5 and 2.1-2.5).
``_transport`` is the HTTP layer (client, status check before the event stream,
retry-after, abort, readable failures naming the URL); ``_sse`` assembles one
message from a wire parser's events and holds ``SseProvider``, the base of the
three providers; ``_anthropic``, ``_openai_completions`` and
``_openai_responses`` are the wire APIs (request body and event parser each);
``_registry`` builds them by api name and reads keys from the environment;
``_declarations`` describes custom providers (local and self-hosted servers)
as settings declare them. Imports run one way: ``_transport`` <- ``_sse`` <- the
wire APIs <- ``_registry``; ``_declarations`` stands alone.

``create_providers`` and ``env_keys`` are also re-exported by ``pi_durable_tui.ai``.
"""

from pi_durable_tui.ai.providers._anthropic import AnthropicProvider
from pi_durable_tui.ai.providers._declarations import (
    ModelDeclaration,
    ProviderDeclaration,
    WireApi,
)
from pi_durable_tui.ai.providers._openai_completions import OpenAICompletionsProvider
from pi_durable_tui.ai.providers._openai_responses import OpenAIResponsesProvider
from pi_durable_tui.ai.providers._registry import KEY_VARIABLES, create_providers, env_keys
from pi_durable_tui.ai.providers._transport import create_client

__all__ = [
    "KEY_VARIABLES",
    "AnthropicProvider",
    "ModelDeclaration",
    "OpenAICompletionsProvider",
    "OpenAIResponsesProvider",
    "ProviderDeclaration",
    "WireApi",
    "create_client",
    "create_providers",
    "env_keys",
]
