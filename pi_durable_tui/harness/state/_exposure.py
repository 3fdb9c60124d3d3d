"""Which of an agent's tools a request offers: lazy exposure of deferred tools (issue 16).

A deferred tool (``define_tool(deferred=True)``; every MCP tool is one) is
offered with its schema as long as the schemas of all deferred tools together
take at most ``settings.tool_search_share`` of the model's context window,
counted with the project's token counter (``ai.count_tokens``). Past that, the
request offers the agent's other tools, the search tool ``tool_search`` and the
deferred tools the conversation loaded (``pi.tools``; the search tool loads what
it finds, so they are offered from the next request on, and the loaded set is
durable like any document). ``tool_search`` itself is offered only then.

The tools the agent resolves do not change: a call to a deferred tool by its
full name works whether or not its schema was offered (``deferred_names``, R89).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Sequence
from typing import Any

from pi_durable_tui.ai import Model, count_tokens
from pi_durable_tui.harness.extensions import Tool

TOOL_SEARCH = "tool_search"
"""The name of the search tool over deferred tools."""


_COUNTS: dict[tuple[str, str], int] = {}
"""Token counts by (sha256 of the schemas' JSON, model id)."""


def schema_tokens(tools: Sequence[Tool[Any]], model: Model | None = None) -> int:
    """The tokens the schemas of ``tools`` take in a request."""
    text = json.dumps([tool.declaration for tool in tools])
    # REMINDER: cached, so the requests of a session (the same tools every time)
    # count 200 schemas once, not once per request.
    key = (hashlib.sha256(text.encode()).hexdigest(), model.id if model is not None else "")
    count = _COUNTS.get(key)
    if count is None:
        if len(_COUNTS) >= 64:
            _COUNTS.clear()
        count = _COUNTS[key] = count_tokens(text, model)
    return count


def deferring(tools: Sequence[Tool[Any]], model: Model, share: float) -> bool:
    """Whether the deferred tools' schemas are held back for this model."""
    deferred = [tool for tool in tools if tool.deferred]
    if not deferred or model.context_window <= 0:
        return False
    return schema_tokens(deferred, model) > share * model.context_window


def exposed_tools(
    tools: Sequence[Tool[Any]], loaded: Collection[str], model: Model, share: float
) -> list[Tool[Any]]:
    """The tools a request offers, in the agent's order.

    Args:
        tools: The agent's resolved tools.
        loaded: The deferred tools the conversation loaded (``pi.tools``).
        model: The request's model (its context window, its encoding).
        share: ``settings.tool_search_share``.
    """
    if not deferring(tools, model, share):
        return [tool for tool in tools if tool.name != TOOL_SEARCH]
    return [tool for tool in tools if not tool.deferred or tool.name in loaded]


def deferred_names(tools: Sequence[Tool[Any]]) -> set[str]:
    """The deferred tools a call may name without their schema having been offered."""
    return {tool.name for tool in tools if tool.deferred}
