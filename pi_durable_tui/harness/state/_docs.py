"""The built-in conversation documents and entry kinds of the harness (reference 1.4, 1.5).

Every harness conversation gets five documents in the commit that creates it
(R25), mounted in views under ``docs["<kind>"]``:

- ``pi.agent``: the conversation's choices (model, thinking level, extension and
  tool selection, instructions, cwd), stored as names. Rewindable, copied by a
  fork as of the fork entry; a base at every change.
- ``pi.provider``: ``{"session_id": <uuid7>}``, the provider-facing identity.
- ``pi.live``: run control and presentation: ``run``, ``generation``, ``tools``,
  ``compactions`` (see ``_live``). A base whenever nothing runs, so its delta
  chain never spans more than one run.
- ``pi.inbox``: ``{"items": [...]}``, queued submissions in ID order. A base when
  it is empty.
- ``pi.usage``: ``{"models": {...}, "tools": {...}}``, the spend ledger (R115).

A fork starts ``pi.live``, ``pi.inbox``, ``pi.usage`` and ``pi.provider`` fresh
(``fork="initial"``); ``pi.agent`` is the one document a fork inherits.
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Any

from pi_durable_tui.kernel import define_doc
from pi_durable_tui.storage.json_ops import JsonObject

USER = "pi.user"
"""Entry kind of a user message (submissions, continuations)."""
ASSISTANT = "pi.assistant"
"""Entry kind of a model response, any stop reason."""
SYSTEM = "pi.system"
"""Entry kind of a system prompt patch (sections and tools, R77-R81)."""
TOOL_RESULT = "pi.tool-result"
"""Entry kind of a tool call's result (R98)."""
RESET = "pi.reset"
"""Entry kind of a fresh context marker (``head`` is itself, R69)."""
COMPACTION = "pi.compaction"
"""Entry kind of a compaction summary (``head`` is the first kept entry, R112)."""
SHELL = "pi.shell"
"""Entry kind of a shell command the user ran from the editor (``!cmd``, ``!!cmd``).

Its ``data`` holds the command, how it ended and its bounded output; its ``model``
is one user message quoting them, or absent for ``!!`` (shown, not sent)."""
ENTRY_KINDS = (USER, ASSISTANT, SYSTEM, TOOL_RESULT, RESET, COMPACTION, SHELL)
"""The entry kinds the harness writes (reference 1.4)."""


def _always(_value: JsonObject, _ops: Any, _deltas: int) -> bool:
    return True


def _live_idle(value: JsonObject, _ops: Any, _deltas: int) -> bool:
    # REMINDER: a base whenever nothing runs bounds replay to one run's deltas.
    if "generation" in value or "shell" in value:
        return False
    tools = value.get("tools")
    return not (isinstance(tools, list) and any(s.get("status") == "running" for s in tools))


def _inbox_empty(value: JsonObject, _ops: Any, _deltas: int) -> bool:
    return not value.get("items")


def uuid7() -> str:
    """Return a fresh UUIDv7 (48 bits of Unix milliseconds, then random bits) as text."""
    millis = int(time.time() * 1000) & ((1 << 48) - 1)
    rand_a = int.from_bytes(os.urandom(2), "big") & 0xFFF
    rand_b = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (millis << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
    return str(uuid.UUID(int=value))


AGENT_DOC = define_doc(
    "pi.agent",
    initial=dict,
    history="rewindable",
    fork="asOf",
    checkpoint_when=_always,
)
"""``pi.agent``: the conversation's choices (model, thinking, selection, instructions, cwd)."""
PROVIDER_DOC = define_doc("pi.provider", initial=lambda: {"session_id": uuid7()})
"""``pi.provider``: the provider-facing conversation identity (``session_id``)."""
LIVE_DOC = define_doc("pi.live", initial=dict, checkpoint_when=_live_idle)
"""``pi.live``: run control and what streams (run, generation, tool slots, compactions)."""
INBOX_DOC = define_doc("pi.inbox", initial=lambda: {"items": []}, checkpoint_when=_inbox_empty)
"""``pi.inbox``: queued steers, follow-ups and writes, in submission order."""
USAGE_DOC = define_doc(
    "pi.usage", initial=lambda: {"models": {}, "tools": {}}, checkpoint_when=_always
)
"""``pi.usage``: tokens and cost per model and per tool (R115)."""
PERMISSIONS_DOC = define_doc(
    "pi.permissions", initial=dict, scope="session", checkpoint_when=_always
)
"""``pi.permissions`` (session scope): ``{"mode"?, "allow": [rules]}``, the user's choices."""
LOADED_TOOLS_DOC = define_doc(
    "pi.tools", initial=lambda: {"loaded": []}, history="rewindable", fork="asOf"
)
"""``pi.tools``: ``{"loaded": [names]}``, the deferred tools the model loaded (issue 16)."""
BUILTIN_DOCS = (AGENT_DOC, PROVIDER_DOC, LIVE_DOC, INBOX_DOC, USAGE_DOC)
"""In the order views mount them."""
