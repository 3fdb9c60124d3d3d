"""Values the view model reads out of committed documents and entries (issue 8, 13).

Pure functions of stored JSON, used by ``LiveScreenModel``: the footer's spend
(``pi.usage``) and context use (an answer's usage), the queue's items
(``pi.inbox``), the approval question of a waiting call (``pi.live``, issue 13),
and a tool card filled from its result entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pi_durable_tui.app._terminal_text import terminal_safe
from pi_durable_tui.app._view import ApprovalQuestion, Block, QueueItem
from pi_durable_tui.app.screen._blocks import apply_result
from pi_durable_tui.storage import EntryRecord


def usage_total(ledger: Mapping[str, Any] | None) -> dict[str, float]:
    """Tokens and cost summed over ``pi.usage`` (models and tools)."""
    totals = {"input": 0.0, "output": 0.0, "cache_read": 0.0, "cache_write": 0.0, "cost": 0.0}
    for section in ("models", "tools"):
        for usage in ((ledger or {}).get(section) or {}).values():
            for key in ("input", "output", "cache_read", "cache_write"):
                totals[key] += float(usage.get(key) or 0)
            totals["cost"] += float((usage.get("cost") or {}).get("total") or 0)
    return totals


def context_tokens(message: Mapping[str, Any]) -> int | None:
    """The context an answer used (``total_tokens``, or the sum of its parts), if known."""
    usage = message.get("usage") if isinstance(message.get("usage"), dict) else None
    if not usage:
        return None
    total = int(usage.get("total_tokens") or 0)
    if total <= 0:
        total = sum(
            int(usage.get(k) or 0) for k in ("input", "output", "cache_read", "cache_write")
        )
    return total or None


def with_result(block: Block, entry: EntryRecord) -> Block:
    """A card block filled from its ``pi.tool-result`` entry."""
    assert block.tool is not None
    return replace(block, tool=apply_result(block.tool, entry), streaming=False)


def queue_item(item: Mapping[str, Any]) -> QueueItem:
    """One inbox item as the queue panel shows it."""
    mode = item.get("mode")
    if mode == "write":
        entry = item["entry"] if isinstance(item.get("entry"), dict) else {}
        return QueueItem(int(item["id"]), "write", f"<{entry.get('kind', 'entry')}>")
    content = item.get("content")
    text = (
        content
        if isinstance(content, str)
        else "".join(
            b.get("text", "")
            for b in content or []
            if isinstance(b, dict) and b.get("type") == "text"
        )
    )
    return QueueItem(int(item["id"]), "steer" if mode == "steer" else "follow_up", text)


def approval_question(live: Mapping[str, Any]) -> ApprovalQuestion | None:
    """The first slot of ``pi.live`` whose request waits for a decision (issue 13)."""
    for slot in live.get("tools") or []:
        approval = slot.get("approval")
        if not isinstance(approval, dict) or "decision" in approval:
            continue
        request = approval.get("request")
        if not isinstance(request, dict):
            continue
        suggestion = request.get("suggestion")
        return ApprovalQuestion(
            call_id=str(slot.get("call_id", "")),
            tool=terminal_safe(str(request.get("tool", slot.get("name", "")))),
            argument=terminal_safe(str(request.get("argument") or "")),
            reason=terminal_safe(str(request.get("reason") or "")),
            mode=str(request.get("mode") or ""),
            protected=bool(request.get("protected")),
            suggestion=terminal_safe(suggestion) if isinstance(suggestion, str) else None,
        )
    return None
