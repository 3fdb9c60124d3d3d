"""Secret values never reach a committed entry: the redaction of tool output (issue 7).

A tool prints what its command prints, and a command can print the agent's own
API keys (``echo $OPENAI_API_KEY``, ``env``, a config file it reads). The
environment already hides such variables from child processes (``env``'s
``scrub_environment``), but a key can still arrive by other paths (a file, an
allow-listed variable, a tool written in Python that reads ``os.environ``). So
the tool task passes everything it commits about a call through a
``SecretRedactor``: the live output window of progress commits, the details and
diagnostics, and the content of the result entry. Every occurrence of a secret
value becomes ``[redacted]``.

The secrets are the values of this process's environment variables whose names
look like secrets (``env.is_secret_name``: ``*_API_KEY``, ``*_TOKEN``,
``*SECRET*``, ...), read when a call starts executing, so a key exported later
is covered from the next call. Values shorter than ``MIN_SECRET_CHARS`` are
ignored: ``1`` or ``true`` are flags, not keys, and replacing them would mangle
ordinary output.

Output arrives in chunks and is committed while it grows, so a secret can be cut
in two by a chunk boundary or by the retained window:

- ``streaming(text)`` (progress commits) withholds a trailing fragment that could
  be the start of a secret until more output shows what it is; the final result
  shows the whole text;
- ``text(text)`` (results) also redacts a leading fragment that ends a secret (a
  tail window that starts inside one) and a trailing fragment that starts one (a
  head window cut inside one), when the fragment has at least
  ``MIN_FRAGMENT_CHARS`` characters.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pi_durable_tui.env import is_secret_name
from pi_durable_tui.storage.json_ops import Json

REDACTED = "[redacted]"
"""What a secret value is replaced with."""

MIN_SECRET_CHARS = 8
"""Shorter values of secret-looking variables are not treated as secrets."""

MIN_FRAGMENT_CHARS = 6
"""The shortest piece of a secret redacted at the edge of a result's text."""


class SecretRedactor:
    """Replaces secret values in text and JSON with ``[redacted]``.

    Args:
        secrets: The values to hide; those shorter than ``MIN_SECRET_CHARS`` are
            ignored.
    """

    def __init__(self, secrets: Iterable[str]) -> None:
        values = sorted(
            {value for value in secrets if len(value) >= MIN_SECRET_CHARS},
            key=len,
            reverse=True,  # the longest first, so a key that contains another wins
        )
        self._secrets = tuple(values)
        self._pattern = re.compile("|".join(map(re.escape, values))) if values else None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> SecretRedactor:
        """Collect the values of the secret-looking variables of an environment.

        Args:
            environ: The variables (this process's environment by default).

        Returns:
            The redactor.
        """
        source = os.environ if environ is None else environ
        return cls(value for name, value in source.items() if is_secret_name(name))

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def text(self, text: str) -> str:
        """Redact every secret in a complete text, and pieces of one at its edges."""
        text = self._redact_whole_and_leading(text)
        trail = self._trailing_fragment(text)
        if trail >= MIN_FRAGMENT_CHARS:
            text = text[: len(text) - trail] + REDACTED
        return text

    def streaming(self, text: str) -> str:
        """Redact a text that is still growing: a possible secret start is withheld."""
        text = self._redact_whole_and_leading(text)
        trail = self._trailing_fragment(text)
        return text[: len(text) - trail] if trail else text

    def _redact_whole_and_leading(self, text: str) -> str:
        """Replace every whole secret, and a leading piece that ends one."""
        if self._pattern is None or not text:
            return text
        text = self._pattern.sub(REDACTED, text)
        lead = self._leading_fragment(text)
        return REDACTED + text[lead:] if lead >= MIN_FRAGMENT_CHARS else text

    def json(self, value: Json) -> Json:
        """Redact every string of a JSON value (keys included); returns a new value."""
        if self._pattern is None:
            return value
        return self._json(value)

    def _json(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self._json(item) for item in value]
        if isinstance(value, dict):
            return {self.text(key): self._json(item) for key, item in value.items()}
        return value

    def _trailing_fragment(self, text: str) -> int:
        """The length of the longest end of ``text`` that begins a secret (a proper prefix)."""
        return self._fragment(text, at_end=True)

    def _leading_fragment(self, text: str) -> int:
        """The length of the longest start of ``text`` that ends a secret (a proper suffix)."""
        return self._fragment(text, at_end=False)

    def _fragment(self, text: str, *, at_end: bool) -> int:
        best = 0
        for secret in self._secrets:
            for size in range(min(len(secret) - 1, len(text)), best, -1):
                if at_end and text.endswith(secret[:size]):
                    best = size
                    break
                if not at_end and text.startswith(secret[-size:]):
                    best = size
                    break
        return best
