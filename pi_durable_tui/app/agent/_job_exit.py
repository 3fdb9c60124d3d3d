"""What becomes of the background jobs when pidurable exits (issue 13).

A job (``bash`` with ``background: true``, task ``pi.job``) is ended at exit
unless the user chose to leave it running: the app asks on quit when jobs run
("N jobs running: end them (y) / leave them running (l)"); print mode ends them
unless ``--leave-jobs-running`` was given.

- **End** (``end_jobs``): each live job task is aborted and awaited, so its
  processes are ended and its ``pi.jobs`` entry says ``stopped`` before the
  harness closes.
- **Keep** (``keep_jobs``): each job's process is left running through the run
  guard's ``keep`` path (``tools.keep_job``: the command's guard released, the
  run guard told to spare its mark, the environment's cleanup skipping it, its
  log moved out of the run directory); its entry records ``kept`` and the new
  log, and its mark is added to ``kept.txt`` beside the store, so the next
  opening's ``end_earlier_runs`` spares it too (``kept_marks``). The job's task
  stays live; the next opening watches the job again while it runs.

``reopened_jobs`` is the recovery report's line for each job an earlier run
left live: still running and kept, or ended with its run.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pi_durable_tui.env import processes_of_run
from pi_durable_tui.harness import Harness
from pi_durable_tui.kernel import Tx
from pi_durable_tui.storage import LIVE_TASK_STATUSES, JsonObject
from pi_durable_tui.tools import JOB_TASK, JOBS_DOC, keep_job

KEPT_NAME = "kept.txt"
"""The file beside a store listing the marks of jobs the user left running."""

_END_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class LiveJob:
    """A job whose task is live."""

    task_id: int
    conversation_id: int
    command: str
    mark: str
    entry: JsonObject
    """Its ``pi.jobs`` entry."""

    @property
    def kept(self) -> bool:
        """Whether the user left it running at an earlier exit."""
        return bool(self.entry.get("kept"))


async def live_jobs(harness: Harness) -> list[LiveJob]:
    """The jobs of the session whose task is live, in task id order."""
    storage = harness.session.storage
    page = await storage.scan_tasks(kind=JOB_TASK, status=LIVE_TASK_STATUSES, limit=1000)
    found = []
    for record in page.items:
        data = record.input if isinstance(record.input, dict) else {}
        jobs = await harness.session.snapshot(JOBS_DOC, record.conversation_id) or {}
        entry = (jobs.get("jobs") or {}).get(str(record.id))
        found.append(
            LiveJob(
                record.id,
                record.conversation_id,
                str(data.get("command", "")),
                str(data.get("mark", "")),
                dict(entry) if isinstance(entry, dict) else {},
            )
        )
    return found


async def end_jobs(harness: Harness) -> None:
    """Stop every live job but those left running before; wait (bounded) for ``stopped``.

    A job the user left running at an earlier exit stays running (only
    ``/tasks stop`` or ``kill_job`` ends it).
    """
    jobs = [job for job in await live_jobs(harness) if not job.kept]
    for job in jobs:
        with contextlib.suppress(Exception):
            await harness.abort_task(job.task_id)
    with contextlib.suppress(Exception, asyncio.TimeoutError):
        await asyncio.wait_for(
            asyncio.gather(*(harness.wait_for_task(job.task_id) for job in jobs)), _END_SECONDS
        )


async def keep_jobs(harness: Harness, store: Path) -> list[LiveJob]:
    """Leave every live job running past this process; returns those kept."""
    kept = []
    for job in await live_jobs(harness):
        log = keep_job(job.mark)
        if log is None:
            continue  # not this process's (already kept by an earlier run)
        kept.append(job)

        def record(tx: Tx, job: LiveJob = job, log: str = log) -> Any:
            return _mark_kept(tx, job, log)

        await harness.session.commit(record)
    if kept:
        marks = kept_marks(store) | {job.mark for job in kept}
        with contextlib.suppress(OSError):
            (store.parent / KEPT_NAME).write_text("".join(f"{m}\n" for m in sorted(marks)))
    return kept


async def _mark_kept(tx: Tx, job: LiveJob, log: str) -> None:
    jobs = await tx.doc(JOBS_DOC, job.conversation_id)
    entry = (jobs.get("jobs") or {}).get(str(job.task_id))
    if entry is not None:
        entry["kept"] = True
        entry["log"] = log


def kept_marks(store: Path) -> set[str]:
    """The marks of jobs the user left running in earlier runs of this session."""
    try:
        text = (store.parent / KEPT_NAME).read_text("ascii")
    except (OSError, UnicodeDecodeError):
        return set()
    return {line.strip() for line in text.splitlines() if line.strip()}


async def reopened_jobs(harness: Harness) -> list[str]:
    """What became of each job an earlier run left live: one line each, for the recovery report.

    Read before scheduling resumes (the job tasks as the earlier run left them):
    a job left running at exit whose processes still run is watched again;
    every other was ended with its run (at exit, or by the run guard after a
    crash).
    """
    lines = []
    for job in await live_jobs(harness):
        entry = job.entry
        named = f"Background job {job.task_id} `{shorten(job.command)}`"
        if entry.get("kept") and processes_of_run(job.mark):
            lines.append(
                f"{named} is still running, left running at exit (pid {entry.get('pid')}); "
                "/tasks lists it, /tasks stop ends it."
            )
        else:
            lines.append(
                f"{named} was ended with the run that started it (by the run guard after "
                "a crash, or at exit); its output up to then is kept."
            )
    return lines


def shorten(text: str, limit: int = 60) -> str:
    """One line of at most ``limit`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


async def stop_task(harness: Harness, task_id: int) -> str:
    """Stop a live task (``/tasks stop N``): a job, a background subagent, a turn.

    Returns:
        The notice to show.

    Raises:
        ValueError: No live task has that id (the message says where to look).
    """
    record = await harness.session.storage.task(task_id)
    if record is None or record.state.get("status") not in LIVE_TASK_STATUSES:
        raise ValueError(f"No live task {task_id}: /tasks lists the live tasks and their ids")
    await harness.abort_task(task_id)
    what = "background job" if record.kind == JOB_TASK else "task"
    return f"Stopping {what} {task_id}."


def moved_notice(task_id: int | None) -> str:
    """The notice of Ctrl+B: the call moved (its result names the job), or nothing ran."""
    if task_id is None:
        return "No command is running in the foreground: nothing to move to the background."
    return "Moved the running command to the background; its result names the job."
