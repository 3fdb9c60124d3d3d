"""``SecretRedactor``: the one redactor of secret values (issues 7 and 13).

The agent runs with keys in its environment, and any string it commits or
prints can carry one: a command's output (``echo $OPENAI_API_KEY``), a file the
model read, or the model's own answer, thinking or tool arguments. Every
occurrence of a secret value becomes ``[redacted]``. One class serves every
place that redacts, so the rules cannot drift apart:

- the kernel's commit filter (``Session(redact=...)``, installed by the
  harness) passes every JSON string of every commit through ``text``: entries,
  task records, submissions and documents (DESIGN.md section 7);
- streamed partials (the model's text and thinking) and the live output of a
  tool go through ``streaming`` first, so a secret cut by a chunk boundary is
  withheld until it is whole;
- byte streams (the spill file of ``exec``, a background job's log, a kept
  job's relay) go through ``chunk``, which holds back only an end that could
  start a secret; ``ByteStreamRedaction`` keeps what one stream holds back.
  It lives here, beside the redactor, so the relay process (``_log_relay``)
  loads nothing but this module (and ``_secrets``) to redact;
- printed output (``-p``, ``--mode json``, exports, logs) goes through ``text``.

The secrets are the values of this process's environment variables whose names
look like secrets (``is_secret_name``: ``*_API_KEY``, ``*_TOKEN``,
``*SECRET*``, ...) and the keys of configured providers (``extra``). Values
shorter than ``MIN_SECRET_CHARS`` are ignored: ``1`` or ``true`` are flags, not
keys, and replacing them would mangle ordinary text.

Edges: a text can begin or end inside a secret (a tail window of output that
starts inside one, a head window cut inside one). ``text`` also redacts a
leading fragment that ends a secret and a trailing fragment that starts one,
when the fragment has at least ``MIN_FRAGMENT_CHARS`` characters. A quick
look-up of the last (first) ``MIN_FRAGMENT_CHARS`` characters decides whether
the full check runs, so a string without such an edge costs one slice.

Not caught: a form of a secret the model computes itself (reversed, base64,
split with spaces, one character per line); only the literal value is known.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence

from pi_durable_tui.env._secrets import is_secret_name

# REMINDER: a kept job's relay process imports this module (``_log_relay``), and
# ``typing`` alone would add a twentieth to its memory: ``Any`` is for the type
# checker only (annotations are not evaluated), so ``typing`` is not imported here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

REDACTED = "[redacted]"
"""What a secret value is replaced with."""

MIN_SECRET_CHARS = 8
"""Shorter values of secret-looking variables are not treated as secrets."""

MIN_FRAGMENT_CHARS = 6
"""The shortest piece of a secret redacted at the edge of a complete text."""

_REDACTED_BYTES = REDACTED.encode()


class SecretRedactor:
    """Replaces secret values in text, JSON and byte streams with ``[redacted]``.

    Args:
        secrets: The values to hide; those shorter than ``MIN_SECRET_CHARS`` are
            ignored.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = sorted(
            {value for value in secrets if len(value) >= MIN_SECRET_CHARS},
            key=len,
            reverse=True,  # the longest first, so a key that contains another wins
        )
        self._secrets = tuple(values)
        self._pattern = re.compile("|".join(map(re.escape, values))) if values else None
        encoded = [value.encode("utf-8", "surrogateescape") for value in values]
        self._bytes_pattern = re.compile(b"|".join(map(re.escape, encoded))) if encoded else None
        self._carry_bytes = len(encoded[0]) - 1 if encoded else 0
        # The secrets' bytes by their first byte: the end of a chunk is held back only
        # when it could start one of them (``chunk``); the index keeps that check to
        # the few positions holding a first byte.
        self._starting: dict[int, tuple[bytes, ...]] = {}
        for value in encoded:
            self._starting[value[0]] = (*self._starting.get(value[0], ()), value)
        # The MIN_FRAGMENT_CHARS-long ends of every proper prefix (starts of every
        # proper suffix): a text whose own end (start) is not among them has no
        # edge fragment worth redacting.
        size = MIN_FRAGMENT_CHARS
        self._prefix_ends = frozenset(s[k - size : k] for s in values for k in range(size, len(s)))
        self._suffix_starts = frozenset(
            s[k : k + size] for s in values for k in range(1, len(s) - size + 1)
        )

    @classmethod
    def from_environ(
        cls, environ: Mapping[str, str] | None = None, extra: Iterable[str] = ()
    ) -> SecretRedactor:
        """Collect the values of an environment's secret-looking variables.

        Args:
            environ: The variables (this process's environment by default).
            extra: More values to hide (the keys of configured providers).

        Returns:
            The redactor.
        """
        source = os.environ if environ is None else environ
        found = [value for name, value in source.items() if is_secret_name(name)]
        return cls([*found, *extra])

    @property
    def secrets(self) -> tuple[str, ...]:
        """The values hidden, the longest first."""
        return self._secrets

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def __call__(self, text: str) -> str:
        """Redact a complete text (``text``): the form the kernel's commit filter takes."""
        return self.text(text)

    def text(self, text: str) -> str:
        """Redact every secret in a complete text, and pieces of one at its edges."""
        if self._pattern is None or not text:
            return text
        text = self._pattern.sub(REDACTED, text)
        if text[:MIN_FRAGMENT_CHARS] in self._suffix_starts:
            lead = self._fragment(text, at_end=False, least=MIN_FRAGMENT_CHARS)
            if lead:
                text = REDACTED + text[lead:]
        if text[-MIN_FRAGMENT_CHARS:] in self._prefix_ends:
            trail = self._fragment(text, at_end=True, least=MIN_FRAGMENT_CHARS)
            if trail:
                text = text[: len(text) - trail] + REDACTED
        return text

    def streaming(self, text: str) -> str:
        """Redact a text that is still growing: a possible start of a secret is withheld.

        A stream's committed text is its newest whole text through this method,
        so a secret split over any number of chunks, at any point, is either
        withheld (while it could still become a secret) or ``[redacted]``.
        """
        if self._pattern is None or not text:
            return text
        text = self._pattern.sub(REDACTED, text)
        trail = self._fragment(text, at_end=True, least=1)
        return text[: len(text) - trail] if trail else text

    def json(self, value: Any) -> Any:
        """Redact every string of a JSON value (keys included).

        Returns:
            The value itself when nothing changed, else a new value.
        """
        if self._pattern is None:
            return value
        return self._json(value)

    def _json(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            items = [self._json(item) for item in value]
            return value if all(a is b for a, b in zip(items, value, strict=True)) else items
        if isinstance(value, dict):
            changed = False
            mapped: dict[Any, Any] = {}
            for key, item in value.items():
                new_key = self.text(key) if isinstance(key, str) else key
                new_item = self._json(item)
                changed = changed or new_key is not key or new_item is not item
                mapped[new_key] = new_item
            return mapped if changed else value
        return value

    def chunk(self, data: bytes, *, final: bool = False) -> tuple[bytes, bytes]:
        """Redact the next piece of a byte stream.

        Args:
            data: What was held back last time followed by the new bytes.
            final: Whether the stream ends here (nothing is held back).

        Returns:
            The bytes to write now, and the bytes to hold back: the longest end
            of the piece that is the start of a secret (at most
            ``len(longest secret) - 1`` bytes), which the next piece may complete.
            Output that does not end like a secret starts is written whole, so
            a live log shows a job's last line at once (issue 13).
        """
        if self._bytes_pattern is None:
            return data, b""
        data = self._bytes_pattern.sub(_REDACTED_BYTES, data)
        # REMINDER: hold back what could be the start of a secret the next chunk ends.
        keep = 0 if final else self._held_start(data)
        return data[: len(data) - keep], data[len(data) - keep :]

    def _held_start(self, data: bytes) -> int:
        """The length of the longest end of ``data`` that is a proper prefix of a secret."""
        end = len(data)
        for size in range(min(self._carry_bytes, end), 0, -1):
            candidates = self._starting.get(data[end - size])
            if candidates is None:
                continue
            tail = data[end - size :]
            if any(len(value) > size and value.startswith(tail) for value in candidates):
                return size
        return 0

    def _fragment(self, text: str, *, at_end: bool, least: int) -> int:
        """The longest end (start) of ``text`` that begins (ends) a secret.

        Only proper prefixes (suffixes) at least ``least`` long count; 0 when
        there is none.
        """
        found = 0
        floor = least - 1
        for secret in self._secrets:
            for size in range(min(len(secret) - 1, len(text)), max(found, floor), -1):
                if at_end and text.endswith(secret[:size]):
                    found = size
                    break
                if not at_end and text.startswith(secret[-size:]):
                    found = size
                    break
        return found


class ByteStreamRedaction:
    """The state of one byte stream passing through a ``SecretRedactor``: what is held back.

    A value cut by a chunk boundary is still found: the redactor holds back the
    end of each chunk that could start a secret until the next chunk (or the
    end) shows whether it does. The spill file, a job's log (``_job_log``) and a
    kept job's relay (``_log_relay``, which takes over ``held``) share it.

    Args:
        secrets: The values to hide.
        held: Bytes another holder held back for this stream (a kept job's relay).
    """

    def __init__(self, secrets: Sequence[bytes] = (), held: bytes = b"") -> None:
        self._redactor = SecretRedactor(s.decode("utf-8", "surrogateescape") for s in secrets)
        self._held = held

    @property
    def holding(self) -> bool:
        """Whether bytes are held back for the next chunk."""
        return bool(self._held)

    @property
    def held(self) -> bytes:
        """The bytes held back for the next chunk (what a new holder starts from)."""
        return self._held

    def redact(self, data: bytes, *, final: bool = False) -> bytes:
        """The next bytes to write; ``final`` releases what was held back."""
        out, self._held = self._redactor.chunk(self._held + data, final=final)
        return out
