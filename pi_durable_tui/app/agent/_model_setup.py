"""Which models the agent can use, and which one a session starts with (DESIGN.md section 5).

``build_models`` gathers the packaged catalog with keys from the environment
(``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``), the custom
providers declared in settings (local and self-hosted servers), a model served at
``--base-url`` (an OpenAI-compatible server: an unknown ``provider/id`` is served
through ``openai-completions`` there, at zero cost, and a catalog model on a
local server costs nothing either; any other id nothing knows, looked up later by
a continued session, ``/model`` or a subagent, is served from there the same
way), and the faux provider of a ``--faux-script``. ``choose_model`` picks
``--model provider/id[:thinking]``, else
the settings' ``model``, else the catalog's default model of the first provider
whose key is set (``Models.default_model``: Anthropic before OpenAI), else nothing:
the app still starts and says how to configure one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pi_durable_tui.ai import (
    THINKING_LEVELS,
    BaseUrlError,
    FauxProvider,
    Model,
    ModelRef,
    Models,
    ThinkingLevel,
    clamp_thinking_level,
    default_models,
    load_faux_script,
)
from pi_durable_tui.app.agent._config import AppSettings, load_settings

UNSERVED_MODEL_ADVICE = "a local server's model needs the --base-url it was served from"
"""Said when a session names a model nothing serves now (``Model x/y is not available``)."""


class ModelChoiceError(ValueError):
    """The model asked for cannot be used: malformed, unknown, a bad URL, a clashing provider."""


@dataclass(frozen=True, slots=True)
class ModelSelection:
    """A resolved model and the thinking level to use with it."""

    model: Model
    thinking_level: ThinkingLevel | None


def parse_model_option(text: str) -> tuple[ModelRef, ThinkingLevel | None]:
    """Parse ``provider/model-id[:thinking]``.

    Raises:
        ValueError: When the text is not of that form.
    """
    base, colon, suffix = text.rpartition(":")
    if colon and suffix in THINKING_LEVELS:
        return ModelRef.parse(base), suffix
    return ModelRef.parse(text), None


def build_models(
    settings: AppSettings,
    *,
    faux_script: str | None = None,
    faux: FauxProvider | None = None,
    base_url: str | None = None,
) -> Models:
    """Build the models of a run.

    Args:
        settings: The settings (their custom providers).
        faux_script: A faux script file whose provider is registered.
        faux: A faux provider to register (instead of a script).
        base_url: ``--base-url``: every model id nothing else knows is served from
            there when it is looked up (``Models.serve_unknown_from``), so the model
            a continued session names and other models of that server picked with
            ``/model`` work. The model named with ``--model`` is moved there by
            ``choose_model``.

    Raises:
        FauxScriptError: A malformed faux script (the message names file and place).
        ModelChoiceError: A custom provider whose name clashes with a built-in one,
            or a base URL (``--base-url``, ``OPENAI_BASE_URL``) that is not http(s).
    """
    if faux_script:
        faux = load_faux_script(faux_script).provider()
    try:
        models = default_models(declarations=settings.providers, faux=faux)
        if base_url:
            models.serve_unknown_from(base_url)
    except BaseUrlError as error:
        raise ModelChoiceError(str(error)) from None
    except ValueError as error:
        raise ModelChoiceError(f"settings: {error}") from None
    return models


def choose_model(
    models: Models, option: str | None, settings: AppSettings, *, base_url: str | None = None
) -> ModelSelection | None:
    """Choose the model a session starts with.

    ``--model``, else the settings' ``model``, else the default model of the first
    catalog provider with a key set (``Models.default_model``), else none.

    With ``base_url`` (``--base-url``) the chosen model is served from that server
    (``Models.use_base_url``: a known model keeps its api, and its catalog prices
    only on a remote server; an unknown id speaks Chat Completions, or Anthropic
    Messages for ``anthropic/...``, at zero cost).

    Raises:
        ModelChoiceError: A malformed ``--model``, a bad URL, or an unknown model
            (the message lists what exists).
    """
    text = option or settings.model
    level: ThinkingLevel | None = None
    if text:
        try:
            ref, level = parse_model_option(text)
            model = models.use_base_url(ref, base_url) if base_url else models.resolve(ref)
        except (ValueError, LookupError) as error:
            raise ModelChoiceError(str(error)) from None
    else:
        # With --base-url nothing is defaulted: that server's models are not the catalog's.
        found = None if base_url else models.default_model()
        if found is None:
            return None
        model = found
    wanted = level or settings.thinking_level
    thinking = clamp_thinking_level(model, wanted) if wanted else None
    return ModelSelection(model, thinking)


def list_models_text(cwd: str | os.PathLike[str], faux_script: str | None = None) -> str:
    """The ``--list-models`` listing: one model per line, its context window, a missing key.

    Args:
        cwd: The working directory (its settings may declare custom providers).
        faux_script: A faux script whose models are listed too.

    Raises:
        SettingsError: A settings file is malformed.
        FauxScriptError: A malformed faux script.
        ModelChoiceError: A custom provider whose name clashes with a built-in one.
    """
    models = build_models(load_settings(cwd), faux_script=faux_script)
    lines = []
    for model in models.list():
        missing = models.missing_key(model)
        note = f"  (set {missing})" if missing else ""
        window = f"{model.context_window // 1000}k" if model.context_window else "?"
        lines.append(f"{model.provider + '/' + model.id:<48} {window:>6}{note}")
    return "\n".join(lines) + "\n"
