"""Reading and rewriting task records: checkpoints, phases, intent (R-1.6, R-1.7, R45, R55).

Task records are immutable storage records (``TaskRecord``); the kernel derives
a new one for every change. These helpers say what a record means:

- ``checkpoint_of`` / ``phase_of``: where a live task resumes;
- ``check_checkpoint``: a checkpoint is a JSON object with a string ``phase``;
- ``has_cancellation_intent``: an abort mark, or a held outcome other than
  ``completed`` (R-1.7, R55);
- ``is_scheduler_outcome``: ``faulted`` and ``orphaned`` get cleanup (R45);
- ``with_state``: a record with a new state and other field changes;
- ``held`` / ``ended``: the record of a task holding its outcome while owned work
  drains, and its final record (R53, R56).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pi_durable_tui.storage.json_ops import JsonObject, check_json, copy_json
from pi_durable_tui.storage.records import TaskRecord


def is_scheduler_outcome(outcome: Mapping[str, Any]) -> bool:
    """Whether an outcome was written by the scheduler (gets cleanup, R45)."""
    return outcome.get("status") in ("faulted", "orphaned")


def has_cancellation_intent(record: TaskRecord) -> bool:
    """An abort mark, or a held outcome other than ``completed`` (R-1.7, R55)."""
    if not record.is_live:
        return False
    if record.abort_requested:
        return True
    state = record.state
    return state["status"] == "completing" and state["outcome"]["status"] != "completed"


def checkpoint_of(record: TaskRecord) -> JsonObject | None:
    """Return a live task's checkpoint, or ``None`` for a held or terminal task."""
    checkpoint = record.state.get("checkpoint")
    return checkpoint if isinstance(checkpoint, dict) else None


def phase_of(record: TaskRecord) -> str | None:
    """Return the phase named by a live task's checkpoint."""
    checkpoint = checkpoint_of(record)
    phase = None if checkpoint is None else checkpoint.get("phase")
    return phase if isinstance(phase, str) else None


def with_state(record: TaskRecord, state: JsonObject, **changes: Any) -> TaskRecord:
    """Return the record with a new state (and other field changes)."""
    return replace(record, state=state, **changes)


def held(record: TaskRecord, outcome: JsonObject) -> TaskRecord:
    """Return the record holding ``outcome`` while owned work drains; memos go (R40, R53)."""
    return with_state(record, {"status": "completing", "outcome": outcome}, memos=None)


def ended(record: TaskRecord, outcome: JsonObject, now: float) -> TaskRecord:
    """Return the terminal record: checkpoint and memos dropped, ``ended_at`` set (R56)."""
    return with_state(record, {"status": "terminal", "outcome": outcome}, memos=None, ended_at=now)


def check_checkpoint(checkpoint: object, what: str) -> JsonObject:
    """Return a checkpoint after checking it is a JSON object with a string ``phase``.

    Raises:
        TypeError: When it is not JSON, not an object, or lacks a phase.
    """
    if not isinstance(checkpoint, dict) or not isinstance(checkpoint.get("phase"), str):
        raise TypeError(f"{what} must be a JSON object with a string 'phase', got {checkpoint!r}")
    check_json(checkpoint, what)
    return copy_json(checkpoint)  # type: ignore[return-value]
