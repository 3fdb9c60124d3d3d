"""What the screen shows of permissions: the call waiting for a decision, the mode.

Read from committed documents (issue 13, DESIGN.md 7): the request in a call's
slot of ``pi.live`` (committed before any screen shows it, so ``--continue``
shows the same question again) and the mode the session chose in
``pi.permissions`` (F4), which wins over the settings' ``permission_mode``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pi_durable_tui.app._terminal_text import terminal_safe
from pi_durable_tui.app._view import ApprovalQuestion


def chosen_mode(permissions: Any) -> str | None:
    """The mode the session chose in ``pi.permissions`` (``None``: the settings' mode)."""
    mode = permissions.get("mode") if isinstance(permissions, dict) else None
    return mode if isinstance(mode, str) else None


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
