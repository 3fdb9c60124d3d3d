"""The recovery report: what ``--continue`` found a killed process had left (issue 8).

Read from committed state before scheduling resumes: the live tasks of the
session as the crash left them. A turn in progress resumes; a tool call whose
intent was committed (phase ``execute``) runs again only if it is replay-safe
(``read``, a foreground subagent), otherwise it comes back to the model as
``interrupted`` with the output it had committed (R95); background tasks (a
background subagent) keep running.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pi_durable_tui.storage import LIVE_TASK_STATUSES, TaskRecord

if TYPE_CHECKING:
    from pi_durable_tui.app._agent_app import AgentApp


async def _call_of(app: AgentApp, record: TaskRecord) -> tuple[str, dict[str, Any]]:
    data = record.input if isinstance(record.input, dict) else {}
    stored = await app.harness.session.storage.entry(int(data.get("assistant") or 0))
    message = stored.entry.model[0] if stored is not None and stored.entry.model else {}
    content = message.get("content") if isinstance(message, dict) else None
    for block in content or []:
        if isinstance(block, dict) and block.get("id") == data.get("call_id"):
            arguments = block.get("arguments")
            return str(block.get("name")), arguments if isinstance(arguments, dict) else {}
    return "tool", {}


def _describe(name: str, arguments: dict[str, Any]) -> str:
    for key in ("command", "path", "task"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            short = " ".join(value.split())
            return f"{name} `{short[:60]}`"
    return name


async def recovery_report(app: AgentApp) -> list[str]:
    """Describe what resuming will do; empty when nothing was left running."""
    storage = app.harness.session.storage
    records: list[TaskRecord] = []
    cursor = None
    while True:
        page = await storage.scan_tasks(status=LIVE_TASK_STATUSES, limit=200, cursor=cursor)
        records.extend(page.items)
        if page.cursor is None:
            break
        cursor = page.cursor
    if not records:
        return []
    lines: list[str] = []
    label = {app.root.id: "the main conversation"}
    for record in records:
        where = label.get(record.conversation_id, f"conversation {record.conversation_id}")
        checkpoint = record.state.get("checkpoint") if isinstance(record.state, dict) else None
        phase = checkpoint.get("phase") if isinstance(checkpoint, dict) else None
        if record.background:
            data = record.input if isinstance(record.input, dict) else {}
            what = str(data.get("prompt") or record.kind)[:60]
            lines.append(f"Background task {record.id} ({record.kind}: {what}) is still running.")
        elif record.kind == "pi.generation" and record.owner is None:
            lines.append(f"The turn in {where} resumes (task {record.id}, phase {phase}).")
        elif record.kind == "pi.tool" and phase == "execute":
            name, arguments = await _call_of(app, record)
            stored_safe = isinstance(checkpoint, dict) and checkpoint.get("replay") == "safe"
            if stored_safe:
                lines.append(
                    f"{_describe(name, arguments)} was cut by the crash; it is replay-safe and "
                    "runs again."
                )
            else:
                lines.append(
                    f"{_describe(name, arguments)} was cut by the crash while running; it is not "
                    "replay-safe, so it does not run again: the model gets it as interrupted, with "
                    "the output it had committed."
                )
        elif record.kind == "pi.compaction":
            lines.append(f"A compaction of {where} resumes (task {record.id}).")
    return lines
