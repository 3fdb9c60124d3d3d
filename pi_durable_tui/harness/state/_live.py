"""Run control in ``pi.live``: the run, the streamed partial, the tool round (reference 1.5).

``pi.live`` holds, while the conversation is busy:

- ``run``: ``{"task_id", "inputs"}``; present exactly while the conversation is
  busy; ``task_id`` is the generation that settles the inputs;
- ``generation``: ``{"attempt", "message"?, "retry"?: {"at", "error"}}``;
- ``tools``: the current round in call order, one slot per call:
  ``{"call_id", "name", "task_id"?, "status": "pending"|"running"|"done",
  "output"?, "dropped_bytes"?, "dropped_lines"?, "details"?, "diagnostics"?,
  "entry"?}``;
- ``compactions``: live compactions in task order:
  ``{"task_id", "reason", "blocking", "attempt", "retry"?}``.

These helpers edit a ``pi.live`` draft in place.
"""

from __future__ import annotations

from typing import Any

from pi_durable_tui.storage.json_ops import JsonObject


def is_busy(live: JsonObject) -> bool:
    """Whether the conversation runs (``pi.live.run`` is set)."""
    return "run" in live


def run_inputs(live: JsonObject) -> list[int]:
    """Return the submission IDs the current run settles."""
    run = live.get("run")
    return list(run.get("inputs", [])) if isinstance(run, dict) else []


def end_run(live: JsonObject) -> None:
    """Remove ``run``, ``generation`` and ``tools``: the conversation is idle (R64)."""
    for key in ("run", "generation", "tools"):
        live.pop(key, None)


def slot_of_task(live: JsonObject, task_id: int) -> dict[str, Any] | None:
    """Return the tool slot of a tool task, if the round still holds it (R103)."""
    for slot in live.get("tools") or []:
        if slot.get("task_id") == task_id:
            return slot
    return None


def remove_compaction(live: JsonObject, task_id: int) -> None:
    """Remove a compaction's status (R110, R114)."""
    compactions = [c for c in live.get("compactions") or [] if c.get("task_id") != task_id]
    if compactions:
        live["compactions"] = compactions
    else:
        live.pop("compactions", None)


def compaction_of(live: JsonObject, task_id: int) -> dict[str, Any] | None:
    """Return a compaction's status, if present."""
    for status in live.get("compactions") or []:
        if status.get("task_id") == task_id:
            return status
    return None
