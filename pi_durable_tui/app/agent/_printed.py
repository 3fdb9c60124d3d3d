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
  writes the unfinished line too.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Protocol

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
    """

    def __init__(self, inner: TextSink, redact: Callable[[str], str]) -> None:
        self._inner = inner
        self._redact = redact
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
