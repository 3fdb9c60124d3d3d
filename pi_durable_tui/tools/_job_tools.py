"""The tools of background jobs: ``job_output`` and ``kill_job`` (issue 13).

``job_output`` (read-only, replay-safe) returns a job's status and its output
so far as committed in ``pi.jobs`` (the last 2,000 lines or 50 KB, what
``bash`` keeps), and where the complete log is. ``kill_job`` stops a job of this
conversation (an explicit abort of its background task, R46; the task's abort
handler ends its processes) and returns its last output. Stopping changes the
machine's state, so ``kill_job`` is not read-only: it follows ``bash``'s
permission policy (it asks in the ``ask`` and ``auto-edit`` modes, is refused in
``plan``). Both accept only jobs of the calling conversation.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from pi_durable_tui.harness import Tool, ToolApi, ToolResult, define_tool
from pi_durable_tui.kernel import Tx
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.tools._jobs import JOBS_DOC


class JobArgs(BaseModel):
    """Arguments of ``job_output`` and ``kill_job``."""

    job_id: int = Field(description="The job id that bash with background: true returned")


async def _job(api: ToolApi, job_id: int) -> JsonObject:
    conversation_id = api.conversation_id

    async def read(tx: Tx) -> Any:
        jobs = await tx.doc(JOBS_DOC, conversation_id)
        entry = (jobs.get("jobs") or {}).get(str(job_id))
        return dict(entry) if isinstance(entry, dict) else None

    entry = await api.commit(read)
    if entry is None:
        raise LookupError(
            f"No background job {job_id} in this conversation: use the id bash returned "
            "(only the 20 newest ended jobs are kept)"
        )
    return dict(entry)


def describe_job(job_id: int, entry: JsonObject) -> str:
    """The first line a job tool returns: its id, command, status and log."""
    status = str(entry.get("status"))
    if status == "exited":
        status = f"exited with code {entry.get('exit_code')}"
    elif status == "ended":
        status = f"ended: {entry.get('note')}"
    dropped = int(entry.get("dropped_lines") or 0)
    cut = f" ({dropped} earlier lines are only in the log)" if dropped else ""
    return f"Job {job_id} `{entry.get('command')}`: {status}. Log: {entry.get('log')}{cut}\n"


async def _output(args: JobArgs, api: ToolApi) -> ToolResult:
    entry = await _job(api, args.job_id)
    text = describe_job(args.job_id, entry) + str(entry.get("output") or "")
    return ToolResult(content=text, details={"job_id": args.job_id, "status": entry["status"]})


async def _kill(args: JobArgs, api: ToolApi) -> ToolResult:
    await _job(api, args.job_id)
    await api.abort_task(args.job_id)
    await api.wait_for_task(args.job_id)
    entry = await _job(api, args.job_id)
    text = describe_job(args.job_id, entry) + str(entry.get("output") or "")
    return ToolResult(content=text, details={"job_id": args.job_id, "status": entry["status"]})


JOB_OUTPUT_TOOL: Tool[JobArgs] = define_tool(
    "job_output",
    description=(
        "Read a background job's status and its output so far (the last 2000 lines or "
        "50KB; the full output is in the log file it names)."
    ),
    parameters=JobArgs,
    execute=_output,
    replay="safe",
    read_only=True,
)

KILL_JOB_TOOL: Tool[JobArgs] = define_tool(
    "kill_job",
    description="Stop a background job started by bash with background: true.",
    parameters=JobArgs,
    execute=_kill,
)
