"""The packaged model catalog: provider defaults and model rows, read from JSON.

Owns ``load_catalog`` and its result (``Catalog``, ``ProviderInfo``);
``_models`` builds the ``Models`` of a process from it. Implements
model-layer.md 1.7 (a small packaged registry).

The catalog is ``ai/data/models.json``, written by hand (no network at run time).
Its ``providers`` block gives each provider's api, base URL, key variable and
default model (what a session starts with when only that provider's key is set:
Claude Sonnet 4.6, GPT-5.2); its ``models`` rows are ``Model`` fields. Sources and assumptions:

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

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources

from pi_durable_tui.ai._types import Model


@dataclass(frozen=True, slots=True)
class ProviderInfo:
    """What the catalog knows of a provider: its api, base URL, key variable, default model."""

    name: str
    api: str
    base_url: str
    api_key_env: str | None = None
    default_model: str | None = None
    """The id of the model to start with when nothing names one (``None``: no default)."""


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
        name: ProviderInfo(
            name, info["api"], info["base_url"], info.get("api_key_env"), info.get("default_model")
        )
        for name, info in data["providers"].items()
    }
    models = []
    for row in data["models"]:
        info = providers[row["provider"]]
        models.append(Model.model_validate({"api": info.api, "base_url": info.base_url, **row}))
    return Catalog(providers, tuple(models))
