"""Subagents: a child conversation that works on a task for the main agent (reference 5.4, 5.5).

The ``subagent`` tool takes a ``task`` (the prompt for the child) and ``background``:

- **Foreground** (default): one commit finds the child this call already owns
  (after a crash) or creates it, owned by the call's tool task, with the same agent
  minus the ``subagent`` extension (no recursion). The call submits the task there
  with the request ID ``subagent:<tool task id>``, waits for the answer and returns
  its text, with ``details = {"conversation_id": ...}`` so the screen can open the
  child. The tool is ``replay: "safe"``: after a crash it runs again, finds the same
  child and the same submission (the request ID), and waits for the same answer.
  Esc in the parent aborts the child too, because the call owns it.
- **Background**: one commit creates a background conversation-owned task
  ``pi.subagent`` and its child conversation, and the call returns at once. The
  task survives Esc in the parent (``Conversation.abort()`` does not cross a
  background boundary) and restarts; when the child answers it posts
  ``[background task <task id> report] <answer>`` to the parent as a follow-up input with the
  request ID ``subagent-report:<task id>``, so a restart never posts it twice. The
  creating commit first looks for a task this call already created, so a replayed
  call never starts a second one.

The tool's result texts (the card the user reads, what the model receives) name a
subagent by the first words of its task, never by a conversation or task id
(issue 12: "Subagent 27 (task 26)"); the ids stay in the result's ``details``, for
the screen and ``/tasks``. The report's header, ``[background task <task id>
report]``, names the task by the id ``/tasks`` and the recovery report show (issue
12), so a user can tell which running task it came from; a header quoting the task
would put the task's words in the parent's newest user message, where scripted
match rules meant for the child would fit it too.
"""

from __future__ import annotations

import textwrap

from pydantic import BaseModel, Field

from pi_durable_tui.harness import (
    AgentChange,
    ExtensionEdit,
    HarnessRuntime,
    Input,
    Tool,
    ToolApi,
    ToolResult,
    configure,
    define_extension,
    define_task,
    define_tool,
    text_of,
)
from pi_durable_tui.kernel import Aborted, Completed, ConversationOwned, Running, TaskOwned, Tx
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.records import TaskRecord

SUBAGENT = "subagent"
SUBAGENT_TASK = "pi.subagent"
_CHILD_AGENT = AgentChange(extensions=ExtensionEdit(remove=(SUBAGENT,)))


class SubagentArgs(BaseModel):
    """Arguments of the ``subagent`` tool."""

    task: str = Field(description="What the subagent should do, with all the context it needs.")
    background: bool = Field(
        default=False,
        description=(
            "Run in the background: return at once and deliver the report as a later message. "
            "Use it for long research that should not block the conversation."
        ),
    )


async def _owned_child(tx: Tx, owner_task: int) -> int | None:
    page = await tx.scan_conversations(owner_task_id=owner_task, limit=1)
    return page.items[0].id if page.items else None


async def _foreground(args: SubagentArgs, api: ToolApi) -> ToolResult:
    owner = api.task_id

    async def child(tx: Tx) -> int:
        existing = await _owned_child(tx, owner)
        if existing is not None:
            return existing
        record = tx.create_conversation(TaskOwned(owner))
        await configure(tx, record.id, _CHILD_AGENT)
        return record.id

    conversation_id = await api.commit(child)
    details = {"conversation_id": conversation_id}
    await api.details(details)
    handle = api.conversation(conversation_id)
    submission = await handle.submit(Input(args.task, request_id=f"subagent:{owner}"))
    record = await submission.wait()
    if record.status != "done" or record.answer is None:
        reason = record.reason or record.status
        raise RuntimeError(f"Subagent {_named(args.task)} failed: {reason}")
    answer_id = record.answer
    answer = await api.commit(lambda tx: _answer_text(tx, answer_id))
    return ToolResult(content=answer or "(the subagent gave no text)", details=details)


async def _answer_text(tx: Tx, entry_id: int) -> str:
    """The text of the child's answer entry."""
    stored = await tx.entry(entry_id)
    message = stored.entry.model[0] if stored is not None and stored.entry.model else None
    return text_of(message) if isinstance(message, dict) else ""


async def _background(args: SubagentArgs, api: ToolApi) -> ToolResult:
    caller = api.task_id
    parent = api.conversation_id
    definition = api.definition(SUBAGENT_TASK)

    async def start(tx: Tx) -> JsonObject:
        page = await tx.scan_tasks(conversation_id=parent, kind=SUBAGENT_TASK, limit=500)
        for task in page.items:
            if isinstance(task.input, dict) and task.input.get("caller") == caller:
                child = await _owned_child(tx, task.id)
                return {"task_id": task.id, "conversation_id": child}
        task = tx.create_task(
            definition,
            {"prompt": args.task, "caller": caller},
            ownership=ConversationOwned(),
            conversation_id=parent,
            background=True,
        )
        record = tx.create_conversation(TaskOwned(task.id))
        await configure(tx, record.id, _CHILD_AGENT)
        return {"task_id": task.id, "conversation_id": record.id}

    started = await api.commit(start)
    # REMINDER: recorded at once, so a call aborted right now still tells the model
    # which background task it started (the task lives on either way).
    await api.details(started)
    text = (
        f"Subagent {_named(args.task)} started in the background. Its report will arrive "
        "as a message when it finishes; carry on meanwhile."
    )
    return ToolResult(content=text, details=started)


async def _execute(args: SubagentArgs, api: ToolApi) -> ToolResult:
    if args.background:
        return await _background(args, api)
    return await _foreground(args, api)


def _named(task: str) -> str:
    """How the texts name a subagent: the first words of its task's first line, quoted."""
    lines = task.strip().splitlines() or [""]
    return '"' + textwrap.shorten(lines[0], width=50, placeholder="…") + '"'


def _report_header(task_id: int) -> str:
    """The header of a background subagent's report: its task, as ``/tasks`` lists it."""
    return f"[background task {task_id} report]"


async def _deliver(task: TaskRecord, runtime: HarnessRuntime) -> None:
    data = task.input if isinstance(task.input, dict) else {}

    async def find_child(tx: Tx) -> int | None:
        return await _owned_child(tx, task.id)

    child = await runtime.commit(find_child)
    if child is None:
        await runtime.commit(lambda tx: Completed({"error": "no child conversation"}))
        return
    handle = runtime.conversation(child)
    submission = await handle.submit(
        Input(str(data.get("prompt", "")), request_id=f"subagent:{task.id}")
    )
    record = await submission.wait()
    answer_id = record.answer
    if record.status == "done" and answer_id is not None:
        answer = await runtime.commit(lambda tx: _answer_text(tx, answer_id))
        text = f"{_report_header(task.id)} {answer}"
    else:
        reason = record.reason or record.status
        text = f"{_report_header(task.id)} The subagent failed: {reason}"
    await runtime.commit(lambda tx: Running({"phase": "report", "text": text, "child": child}))


async def _report(task: TaskRecord, runtime: HarnessRuntime) -> None:
    checkpoint = task.state.get("checkpoint") or {}
    parent = runtime.conversation(task.conversation_id)
    await parent.submit(
        Input(
            str(checkpoint.get("text", "")),
            request_id=f"subagent-report:{task.id}",
            when_busy="follow_up",
        )
    )
    await runtime.commit(lambda tx: Completed({"child": checkpoint.get("child")}))


async def _abort(task: TaskRecord, runtime: HarnessRuntime) -> None:
    await runtime.commit(lambda tx: Aborted())


SUBAGENT_TASK_DEFINITION = define_task(
    SUBAGENT_TASK,
    initial=lambda _input: {"phase": "deliver"},
    phases={"deliver": _deliver, "report": _report},
    abort=_abort,
)

SUBAGENT_TOOL: Tool[SubagentArgs] = define_tool(
    SUBAGENT,
    description=(
        "Hand a self-contained task to a subagent: a fresh conversation with the same tools "
        "that works on it and returns its final answer. Use it for focused research or "
        "side tasks; give it every detail it needs, since it does not see this conversation."
    ),
    parameters=SubagentArgs,
    execute=_execute,
    replay="safe",
)

SUBAGENTS = define_extension(SUBAGENT, tools=[SUBAGENT_TOOL], tasks=[SUBAGENT_TASK_DEFINITION])
"""The ``subagent`` extension: the tool and its background task."""
