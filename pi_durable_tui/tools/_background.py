"""``bash`` with ``background: true``: start a job and return its id at once (issue 13).

The command starts through ``ExecutionEnv.start_job`` (an environment without
it refuses with a clear error); then one commit creates the job's background
task and its ``pi.jobs`` entry (``_jobs.create_job``), and the handle goes to
``RUNNING`` for the task to watch. The result names the job id, the log file
and the tools that read and stop it. A crash between the start and the commit
leaves no record, and the run guard ends the process with the run.

``adopt_moved`` does the same for a foreground command the user moved to the
background while it ran (Ctrl+B, ``ExecResult.moved``).
"""

from __future__ import annotations

from typing import Any

from pi_durable_tui.env import JobProcess
from pi_durable_tui.harness import ToolApi, ToolResult
from pi_durable_tui.tools._jobs import JOB_TASK, RUNNING, create_job


async def start_background(
    shown: str, command: str, api: ToolApi, env_vars: dict[str, str] | None
) -> ToolResult:
    """Start ``command`` as a background job of the calling conversation.

    Args:
        shown: The command as the model wrote it (what the job shows).
        command: What runs (a configured prefix included).
        api: The ``bash`` call's api.
        env_vars: Extra variables for the command.

    Raises:
        RuntimeError: The environment cannot run background jobs.
    """
    env: Any = api.env
    start = getattr(env, "start_job", None)
    if start is None:
        raise RuntimeError(
            "This environment cannot run background jobs (an SSH environment runs none): "
            "run the command without background"
        )
    job = await start(command, cwd=env.cwd, env=env_vars)
    job_id = await _record(shown, job, api)
    details = {"command": shown, "job_id": job_id, "pid": job.pid, "log": job.log_path}
    text = (
        f"Started background job {job_id} (pid {job.pid}). Its output goes to {job.log_path}. "
        f"Read it with job_output(job_id={job_id}); stop it with kill_job(job_id={job_id}). "
        "It keeps running after this call, through Esc, until it exits or is stopped."
    )
    return ToolResult(content=text, details=details)


async def _record(shown: str, job: JobProcess, api: ToolApi) -> int:
    """Watch ``job`` and commit its task and ``pi.jobs`` entry; its id (its task's)."""
    RUNNING[job.mark] = job
    definition = api.definition(JOB_TASK)
    entry = {"command": shown, "pid": job.pid, "mark": job.mark, "log": job.log_path}
    conversation_id = api.conversation_id
    try:
        return int(await api.commit(lambda tx: create_job(tx, definition, conversation_id, entry)))
    except BaseException:
        RUNNING.pop(job.mark, None)
        await job.stop()
        raise


async def adopt_moved(shown: str, job: JobProcess, api: ToolApi) -> ToolResult:
    """A running command the user moved to the background (Ctrl+B): it becomes a job.

    The call's result is its output up to the move, with a remark saying so.
    """
    job_id = await _record(shown, job, api)
    api.diagnostic(
        "info",
        f"The user moved this command to the background as job {job_id} (pid {job.pid}); "
        f"it keeps running. Its later output goes to {job.log_path}: read it with "
        f"job_output(job_id={job_id}), stop it with kill_job(job_id={job_id}).",
        "moved_to_background",
    )
    details = {"command": shown, "job_id": job_id, "pid": job.pid, "log": job.log_path}
    return ToolResult(details=details)
