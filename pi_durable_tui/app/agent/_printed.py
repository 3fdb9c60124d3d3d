"""Printed output is redacted like committed output (issue 13, DESIGN.md section 7).

What pidurable prints (the ``-p`` answer, ``--mode json`` events, exports, the
one-line errors on stderr, tracebacks in the log file) mostly derives from
commits, which the harness already redacted. Printing redacts again anyway,
with the same ``SecretRedactor``: a store written before redaction covered
everything, an error that never reached a commit, or a traceback quoting a
local variable would otherwise print a key.

- ``output_redactor(settings)``: the redactor of a process that has no harness
  (``pidurable export``, the CLI's error lines, the TUI's log before a session
  opened): this process's secret-looking variables and the keys of the
  providers the settings declare.
- ``RedactedWriter``: a text stream that redacts what goes through it, line by
  line, so a secret cut between two ``write`` calls is still found; ``flush``
  writes the unfinished line too. Given ``terminal=True`` (text a person reads:
  the ``-p`` answer, stderr lines) it also removes escape sequences and control
  characters (``terminal_safe``), so an answer holding OSC 52 does not write the
  clipboard of the terminal it ends up in, through a pipe or not (issue 13).
- ``json_line(value)``: one JSON line with every control character escaped,
  DEL and C1 too (``json.dumps`` leaves those raw), for ``--mode json`` and
  ``export --format jsonl``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from pi_durable_tui.app._terminal_text import terminal_safe
from pi_durable_tui.app.agent._config import AppSettings
from pi_durable_tui.env import SecretRedactor


def output_redactor(settings: AppSettings | None = None) -> SecretRedactor:
    """The redactor for printed output when no harness is open.

    Args:
        settings: The settings whose custom providers' keys are secrets too.

    Returns:
        The values of this process's secret-looking variables and of the
        variables the settings' providers read their keys from.
    """
    declared: Iterable[str] = ()
    if settings is not None:
        names = [d.api_key_env for d in settings.providers if d.api_key_env]
        declared = [os.environ[name] for name in names if os.environ.get(name)]
    return SecretRedactor.from_environ(extra=declared)


class TextSink(Protocol):
    """Where printed text goes: a text stream, as far as printing uses one."""

    def write(self, text: str, /) -> int:
        """Write ``text``."""
        ...

    def flush(self) -> None:
        """Flush what was written."""
        ...


class RedactedWriter:
    """A text stream whose writes reach ``inner`` with every secret ``[redacted]``.

    Complete lines are redacted and written at once; the rest of a write waits
    for its newline (or ``flush``), so a key cut between two writes is whole
    when it is redacted.

    Args:
        inner: The stream written to.
        redact: Redacts one complete text (``SecretRedactor.text``).
        terminal: Whether what is written is text for a terminal (escape
            sequences and control characters are removed).
    """

    def __init__(
        self, inner: TextSink, redact: Callable[[str], str], *, terminal: bool = False
    ) -> None:
        self._inner = inner
        self._redact = (lambda text: terminal_safe(redact(text))) if terminal else redact
        self._pending = ""

    def write(self, text: str) -> int:
        """Write ``text``; returns its length, as ``TextIO.write`` does."""
        self._pending += text
        cut = self._pending.rfind("\n") + 1
        if cut:
            lines, self._pending = self._pending[:cut], self._pending[cut:]
            self._inner.write(self._redact(lines))
        return len(text)

    def flush(self) -> None:
        """Write the unfinished line too, then flush ``inner``."""
        if self._pending:
            pending, self._pending = self._pending, ""
            self._inner.write(self._redact(pending))
        self._inner.flush()


_RAW_IN_JSON = re.compile("[\x7f-\x9f]")
"""The control characters ``json.dumps`` writes as they are (DEL and C1)."""


def json_line(value: Any) -> str:
    """``value`` as one line of JSON with no raw control character in it."""
    line = json.dumps(value, ensure_ascii=False)
    return _RAW_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", line)
