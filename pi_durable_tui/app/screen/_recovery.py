"""The recovery report: what ``--continue`` found an earlier run had left (issue 8).

Read from committed state before scheduling resumes: the live tasks of the
session as the crash or the stop left them. A turn in progress resumes; a tool call whose
intent was committed (phase ``execute``) runs again only if it is replay-safe
(``read``, a foreground subagent), otherwise it comes back to the model as
``interrupted`` with the output it had committed (R95); background tasks (a
background subagent) keep running, named by their task id as ``/tasks`` lists
them (issue 12). Processes an earlier run left running
(``AgentApp.leftovers``, issue 13) come first, then what became of each
background job (``AgentApp.job_report``: ended with its run, or still running
because the user left it running). A shell command the user ran from the editor
(``!cmd``) that the crash cut becomes an ``interrupted`` entry here, with the
output it had committed; it never runs again (``_user_shell``).

What cut a tool call is said as the store knows it: a call the previous run's
orderly close stopped (``AgentApp.earlier_stops``, the stop marker) was "cut
when pidurable was stopped (SIGTERM)", or "cut when the session was closed"
after a quit (or ``/new``); any other was cut by a process that died without closing (``kill -9``,
an out-of-memory kill, a power cut): "cut by the crash". Either way the call is
recovered the same way (R95); only the words differ.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_durable_tui.app.screen._names import conversation_label, conversation_title
from pi_durable_tui.app.screen._shown import shown_conversation
from pi_durable_tui.app.screen._task_tree import describe_call, tool_call_of
from pi_durable_tui.app.screen._user_shell import settle_shell_commands
from pi_durable_tui.storage import LIVE_TASK_STATUSES, TaskRecord

if TYPE_CHECKING:
    from pi_durable_tui.app.agent import AgentApp


def _background_label(record: TaskRecord, root_id: int) -> str:
    """``subagent: <first words of its task>``, as the task tree names it, or the task's kind."""
    data = record.input if isinstance(record.input, dict) else {}
    if record.kind == "pi.subagent":
        return conversation_label(-1, True, root_id, str(data.get("prompt", "")))
    return record.kind


def _describe(name: str, what: str) -> str:
    return f"{name} `{what}`" if what else name


def cut_by(cause: str | None) -> str:
    """What cut a call, as the report words it: ``by the crash`` unless a stop is known.

    Args:
        cause: The stop marker's cause for the call's task (a signal's name, or
            ``closed``), or ``None`` when the store knows of no orderly stop.
    """
    if cause is None:
        return "by the crash"
    if cause == "closed":
        return "when the session was closed"
    return f"when pidurable was stopped ({cause})"


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
    lines: list[str] = [] if app.leftovers is None else [app.leftovers]
    lines.extend(app.job_report)  # issue 13: what became of each background job
    lines.extend(app.notices)  # issue 16: an MCP server that did not start
    # A shell command of the user's that the crash cut: recorded as interrupted, not rerun.
    shown = await shown_conversation(app)
    lines.extend(await settle_shell_commands(app.harness, [app.root.id, shown]))
    if not records:
        return lines
    label = {app.root.id: "the main conversation"}
    for record in records:
        if record.conversation_id not in label:
            conversation = await storage.conversation(record.conversation_id)
            owned = conversation is not None and conversation.owner is not None
            title = await conversation_title(storage, record.conversation_id)
            label[record.conversation_id] = conversation_label(
                record.conversation_id, owned, app.root.id, title
            )
        where = label[record.conversation_id]
        checkpoint = record.state.get("checkpoint") if isinstance(record.state, dict) else None
        phase = checkpoint.get("phase") if isinstance(checkpoint, dict) else None
        if record.kind == "pi.job":
            continue  # app.job_report says what became of it
        if record.background:
            lines.append(
                f"Background task {record.id} ({_background_label(record, app.root.id)}) "
                "is still running; /tasks lists it."
            )
        elif record.kind == "pi.generation" and record.owner is None:
            lines.append(f"The turn in {where} resumes (task {record.id}, phase {phase}).")
        elif record.kind == "pi.tool" and phase == "execute":
            call = describe_call(*await tool_call_of(app.harness.session, record), 60)
            stored_safe = isinstance(checkpoint, dict) and checkpoint.get("replay") == "safe"
            cut = cut_by(app.earlier_stops.get(record.id))
            if stored_safe:
                lines.append(f"{_describe(*call)} was cut {cut}; it is replay-safe and runs again.")
            else:
                lines.append(
                    f"{_describe(*call)} was cut {cut} while running; it is not "
                    "replay-safe, so it does not run again: the model gets it as interrupted, with "
                    "the output it had committed."
                )
        elif record.kind == "pi.tool" and phase == "approval":
            call = describe_call(*await tool_call_of(app.harness.session, record), 60)
            lines.append(
                f"{_describe(*call)} waits for your approval (nothing of it ran); "
                "the prompt asks again."
            )
        elif record.kind == "pi.compaction":
            lines.append(f"A compaction of {where} resumes (task {record.id}).")
    return lines
