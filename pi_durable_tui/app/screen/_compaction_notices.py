"""What the screen says when a compaction ends (issue 12; reference 5.3; R108, R114).

Owns the words of every compaction notice, and how a FAILED compaction is found in
a commit, so a failure is visible whoever started it:

- a manual ``/compact``: the controller waits for its task and shows
  ``compaction_notice(outcome)`` (``Compacted.``, queued, dropped, nothing to
  compact, aborted, failed);
- an automatic one (``threshold`` or ``overflow``, R108), started by the harness
  when the context fills: nobody waits for it, so the view model finds its end
  in the commit that ends the task (``compaction_failures`` over a commit's task
  records, carried in the feed's ``Frame``) and shows ``automatic_failure_notice``.

A failure leaves the context as it was (R114: no entry), so the footer's context
figure, taken from the last answer's usage, stays true: nothing here touches it.
Every failure notice says what failed, why, and what to do next.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pi_durable_tui.app._terminal_text import terminal_safe
from pi_durable_tui.app._view import NoticeLevel
from pi_durable_tui.storage import JsonObject
from pi_durable_tui.storage.records import TaskRecord

COMPACTION_KIND = "pi.compaction"
FAILED_STATUSES = ("failed", "faulted", "orphaned")
"""Task outcomes that mean the compaction did not happen for a reason to show."""
WHAT_TO_DO = "/compact retries, /new starts fresh."


@dataclass(frozen=True)
class CompactionFailure:
    """A compaction task of the shown conversation that ended failed."""

    task_id: int
    reason: str
    """``manual``, ``threshold`` or ``overflow`` (the task's input)."""
    message: str
    """Why it failed, as the task's outcome says."""

    def to_json(self) -> JsonObject:
        """The wire form a host sends to attached clients (issue 15)."""
        return {"task_id": self.task_id, "reason": self.reason, "message": self.message}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CompactionFailure:
        """Read the wire form back."""
        return cls(int(data["task_id"]), str(data.get("reason")), str(data.get("message")))


def _failure_message(outcome: Mapping[str, Any]) -> str:
    error = outcome.get("error")
    error = error if isinstance(error, dict) else {}
    return str(error.get("message") or outcome.get("reason") or "no reason given")


def _one_line(message: str) -> str:
    """A reason the model or a server wrote, safe for the terminal, on one line."""
    return " ".join(terminal_safe(message).split()).rstrip(".") or "no reason given"


def compaction_failures(
    tasks: Iterable[TaskRecord], conversation_id: int
) -> tuple[CompactionFailure, ...]:
    """The compaction tasks of ``conversation_id`` that a commit ended failed.

    Args:
        tasks: The task records a commit wrote (``CommitInfo.tasks``).
        conversation_id: The shown conversation.
    """
    found: list[CompactionFailure] = []
    for task in tasks:
        if task.kind != COMPACTION_KIND or task.conversation_id != conversation_id:
            continue
        if task.state.get("status") != "terminal":
            continue
        outcome = task.state.get("outcome")
        if not isinstance(outcome, dict) or outcome.get("status") not in FAILED_STATUSES:
            continue
        data = task.input if isinstance(task.input, dict) else {}
        reason = str(data.get("reason") or "manual")
        found.append(CompactionFailure(task.id, reason, _failure_message(outcome)))
    return tuple(found)


def automatic_failure_notice(failure: CompactionFailure) -> tuple[NoticeLevel, str] | None:
    """The notice for an automatic compaction that failed; ``None`` for a manual one.

    A manual ``/compact`` is noticed by the controller that started it, once.
    """
    message = _one_line(failure.message)
    if failure.reason == "manual":
        return None
    if failure.reason == "overflow":
        # R108: the overflowing request cannot be sent again uncompacted; the turn ends.
        return (
            "error",
            f"Automatic compaction after a context overflow failed: {message}. "
            f"The turn stopped; {WHAT_TO_DO}",
        )
    return (
        "error",
        f"Automatic compaction failed: {message}. "
        f"The conversation goes on uncompacted; {WHAT_TO_DO}",
    )


def compaction_notice(outcome: Mapping[str, Any]) -> tuple[NoticeLevel, str]:
    """The notice for a manual compaction's outcome (reference 5.3).

    Args:
        outcome: The terminal outcome of the ``pi.compaction`` task, or
            ``{"status": "dropped"}`` for a summary write that was never placed.

    Returns:
        ``(level, text)``.
    """
    status = outcome.get("status")
    result = outcome.get("result")
    result = result if isinstance(result, dict) else {}
    if status == "completed" and "entry_id" in result:
        return "info", "Compacted."
    if status == "completed" and "submission_id" in result:
        return "info", "Compaction summary queued; it is placed at the next turn boundary."
    if status == "completed":
        return (
            "info",
            "Nothing to compact: the context fits in the recent window that is kept verbatim.",
        )
    if status == "aborted":
        return "warning", "Compaction aborted."
    if status == "dropped":
        return "warning", "Compaction summary dropped: the context changed under it."
    message = _one_line(_failure_message(outcome))
    return (
        "error",
        f"Compaction {status}: {message}. The conversation goes on uncompacted; {WHAT_TO_DO}",
    )


def written_outcome(status: str, reason: str | None) -> dict[str, Any]:
    """The outcome ``compaction_notice`` reads for a summary placed as a write (or dropped)."""
    if status == "done":
        return {"status": "completed", "result": {"entry_id": 0}}
    return {"status": "dropped", "error": {"message": reason or status}}
