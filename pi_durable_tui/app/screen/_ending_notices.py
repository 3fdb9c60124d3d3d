"""What the screen says when a commit ends something badly (reference 5.3; issue 12).

Owns ``ending_notices``: the notices of one commit (``Frame``) for

- the watched submissions it left unanswered (an abort says nothing: the user
  asked for it), unless the transcript already shows why: a run that fails on a
  model error settles its inputs with the error's text in the commit that stores
  the failed message, whose error block says it;
- the automatic compactions it ended failed (``automatic_failure_notice``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pi_durable_tui.app._view import NoticeLevel
from pi_durable_tui.app.screen._blocks import entry_message
from pi_durable_tui.app.screen._compaction_notices import automatic_failure_notice
from pi_durable_tui.app.screen._feed import Frame
from pi_durable_tui.storage import EntryRecord


def ending_notices(frame: Frame, watched: set[int]) -> list[tuple[NoticeLevel, str]]:
    """Return the notices of what ``frame``'s commit ended badly.

    Args:
        frame: One commit's changes to the shown conversation.
        watched: The submissions the screen waits for; the ones this commit
            settled are taken out.

    Returns:
        ``(level, text)`` pairs, in order.
    """
    notices: list[tuple[NoticeLevel, str]] = []
    for failure in frame.compaction_failures:
        notice = automatic_failure_notice(failure)
        if notice is not None:
            notices.append(notice)
    shown = _errors_shown(frame.entries)
    for record in frame.submissions:
        if record.id not in watched or record.status not in ("done", "unanswered"):
            continue
        watched.discard(record.id)
        if record.status != "unanswered" or record.reason == "aborted":
            continue
        if isinstance(record.detail, str) and record.detail in shown:
            continue  # the transcript's error block says it already
        detail = f" {json.dumps(record.detail)}" if record.detail is not None else ""
        notices.append(("error", f"No answer: {record.reason}{detail}"))
    return notices


def _errors_shown(entries: Sequence[EntryRecord]) -> set[str]:
    """The error texts of the failed model calls among ``entries``."""
    shown: set[str] = set()
    for entry in entries:
        if entry.kind == "pi.assistant":
            message = entry_message(entry)
            if message.get("stop_reason") == "error" and message.get("error_message"):
                shown.add(str(message["error_message"]))
    return shown
