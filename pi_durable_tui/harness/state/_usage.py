"""The spend ledger ``pi.usage`` (R115, R116).

Every writer of a ``pi.assistant`` entry adds the message's usage under
``models["<provider>/<model>"]`` in the same commit; a tool result with usage adds
it under ``tools[<tool name>]``. A fork starts at zero; ``Harness.usage()`` sums the
ledgers of every conversation (nothing stores cross-conversation totals).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pi_durable_tui.harness.state._docs import USAGE_DOC
from pi_durable_tui.kernel import Tx
from pi_durable_tui.storage.json_ops import JsonObject

_COUNTS = ("input", "output", "cache_read", "cache_write", "total_tokens")
_COSTS = ("input", "output", "cache_read", "cache_write", "total")


def empty_usage() -> JsonObject:
    """Return a zero usage record."""
    usage: JsonObject = dict.fromkeys(_COUNTS, 0)
    usage["cost"] = dict.fromkeys(_COSTS, 0.0)
    return usage


def add_into(target: JsonObject, usage: Mapping[str, Any]) -> None:
    """Add ``usage`` (a stored ``Usage``) into ``target`` in place."""
    for key in _COUNTS:
        target[key] = int(target.get(key, 0)) + int(usage.get(key, 0) or 0)
    cost = target.setdefault("cost", dict.fromkeys(_COSTS, 0.0))
    extra = usage.get("cost") or {}
    for key in _COSTS:
        cost[key] = float(cost.get(key, 0.0)) + float(extra.get(key, 0.0) or 0.0)


def is_zero(usage: Mapping[str, Any] | None) -> bool:
    """Whether a usage record counts nothing (such records are not added)."""
    if not usage:
        return True
    cost = usage.get("cost") or {}
    return not any(usage.get(k) for k in _COUNTS) and not any(cost.get(k) for k in _COSTS)


async def add_model_usage(tx: Tx, conversation_id: int, message: Mapping[str, Any]) -> None:
    """Add an assistant message's usage to ``pi.usage.models`` (R115)."""
    usage = message.get("usage")
    if is_zero(usage):
        return
    ledger = await tx.doc(USAGE_DOC, conversation_id)
    key = f"{message.get('provider')}/{message.get('model')}"
    add_into(ledger.setdefault("models", {}).setdefault(key, empty_usage()), usage or {})


async def add_tool_usage(
    tx: Tx, conversation_id: int, tool_name: str, usage: Mapping[str, Any] | None
) -> None:
    """Add a tool result's usage to ``pi.usage.tools`` (R115)."""
    if is_zero(usage):
        return
    ledger = await tx.doc(USAGE_DOC, conversation_id)
    add_into(ledger.setdefault("tools", {}).setdefault(tool_name, empty_usage()), usage or {})


def total_usage(ledgers: Iterable[Mapping[str, Any]]) -> JsonObject:
    """Sum ledgers into one usage record (models and tools alike, R116)."""
    total = empty_usage()
    for ledger in ledgers:
        for section in ("models", "tools"):
            for usage in (ledger.get(section) or {}).values():
                add_into(total, usage)
    return total
