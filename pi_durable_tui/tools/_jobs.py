"""Background jobs as durable tasks: the ``pi.job`` task and the ``pi.jobs`` document (issue 13).

``bash`` with ``background: true`` starts its command as a job
(``ExecutionEnv.start_job``, output to a log file, redacted as it is written)
and, in one commit, creates a
**background conversation-owned** ``pi.job`` task (so Esc, which aborts the
turn's ordinary work, leaves it running, R57) and its entry in the
conversation's ``pi.jobs`` document: ``{"jobs": {"<task id>": {"command",
"status", "pid", "mark", "log", "output", "dropped_bytes", "dropped_lines",
"exit_code"?, "note"?}}}``. ``status`` is ``running``, ``exited``, ``stopped``
or ``ended`` (gone with the run that started it).

The task's one phase ``watch`` tails the log into a ``ToolOutputBuffer`` with
``bash``'s limits (the last 2,000 lines or 50 KB) and commits the window with
the progress throttle of tool output (R103), so the job's live output is
bounded and committed like any tool output; when the command exits it commits
``exited`` with the exit code. The abort handler (``kill_job``, ``/tasks``)
stops the process and commits ``stopped``.

The process handles live in this process only (``RUNNING``, by mark). A
``watch`` that finds none after a reopen tells what became of the job: a job
the user kept whose processes still run is watched again (``KeptJob``);
otherwise it was ended with the run (by the environment's cleanup or, after a
crash, by the run guard) and the task commits ``ended`` with that note.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from typing import Any

from pi_durable_tui.env import JobProcess, KeptJob
from pi_durable_tui.harness import (
    HarnessRuntime,
    OutputLimits,
    ProgressThrottle,
    ToolOutputBuffer,
    define_task,
)
from pi_durable_tui.kernel import Aborted, Completed, ConversationOwned, Tx, define_doc
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.records import TaskRecord
from pi_durable_tui.tools._read_window import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES

JOB_TASK = "pi.job"
"""The kind of a background job's task."""

JOBS_DOC = define_doc("pi.jobs", initial=lambda: {"jobs": {}})
"""``pi.jobs``: the conversation's background jobs by task id."""

JOB_LIMITS = OutputLimits(DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, "tail")
"""A job's committed output keeps what ``bash`` keeps."""

KEPT_ENDED = 20
"""Ended jobs ``pi.jobs`` keeps per conversation (the newest; ``prune_ended``)."""
ENDED_STATUSES = ("exited", "stopped", "ended")
"""The statuses of a job whose processes are gone."""
ENDED_NOTE = (
    "ended when the pidurable run that started it stopped (by its cleanup at exit, "
    "or by the run guard after a crash)"
)
"""What a reopened session says of a job whose run is gone and that was not kept."""

RUNNING: dict[str, JobProcess] = {}
"""The jobs this process watches, by mark."""

MOVABLE: dict[int, tuple[int, asyncio.Event]] = {}
"""The ``bash`` calls running in the foreground: tool task id -> (conversation, move event)."""


def move_to_background(conversation_id: int) -> int | None:
    """Move the foreground ``bash`` commands of a conversation to the background (Ctrl+B).

    Returns:
        The tool task id of the newest one asked to move, or None when none runs.
    """
    moved = None
    for task_id, (conversation, event) in sorted(MOVABLE.items()):
        if conversation == conversation_id and not event.is_set():
            event.set()
            moved = task_id
    return moved


_READ_SIZE = 1 << 20
_READS_PER_TICK = 16


async def create_job(tx: Tx, definition: Any, conversation_id: int, entry: JsonObject) -> int:
    """Create the job's task and its ``pi.jobs`` entry in one commit; return the task id."""
    task = tx.create_task(
        definition,
        {"mark": entry["mark"], "command": entry["command"]},
        ownership=ConversationOwned(),
        conversation_id=conversation_id,
        background=True,
    )
    jobs = await tx.doc(JOBS_DOC, conversation_id)
    jobs.setdefault("jobs", {})[str(task.id)] = {
        **entry,
        "status": "running",
        "output": "",
        "dropped_bytes": 0,
        "dropped_lines": 0,
    }
    return task.id


class _Tail:
    """The log of one job, read from where the last read stopped into a bounded buffer."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.buffer = ToolOutputBuffer(JOB_LIMITS)
        self._offset = 0

    def read(self) -> bool:
        """Read what the log gained; whether anything was read."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return False
        grew = False
        try:
            for _ in range(_READS_PER_TICK):  # bounded per tick: a writer may never stop
                data = os.pread(fd, _READ_SIZE, self._offset)
                if not data:
                    break
                self._offset += len(data)
                self.buffer.write(data)
                grew = True
        except OSError:
            pass
        finally:
            os.close(fd)
        return grew


async def _update(runtime: HarnessRuntime, fields: JsonObject, outcome: Any = None) -> None:
    conversation_id, key = runtime.conversation_id, str(runtime.task_id)

    async def write(tx: Tx) -> Any:
        jobs = await tx.doc(JOBS_DOC, conversation_id)
        entry = jobs.setdefault("jobs", {}).get(key)
        if entry is not None:
            entry.update(fields)
        if outcome is not None:
            prune_ended(jobs["jobs"])
        return outcome

    await runtime.commit(write)


def prune_ended(jobs: JsonObject) -> None:
    """Forget the oldest ended jobs past ``KEPT_ENDED`` (a running one is never forgotten).

    ``pi.jobs`` would otherwise grow with every job a long session starts; the
    newest ended ones stay for ``job_output``, and ``/tasks`` and the task tree
    read the tasks, not this document.
    """
    ended = sorted(
        (key for key, entry in jobs.items() if (entry or {}).get("status") in ENDED_STATUSES),
        key=lambda key: int(key) if key.isdigit() else 0,
    )
    for key in ended[: max(len(ended) - KEPT_ENDED, 0)]:
        del jobs[key]


def _output_fields(tail: _Tail) -> JsonObject:
    return {
        "output": tail.buffer.text,
        "dropped_bytes": tail.buffer.dropped_bytes,
        "dropped_lines": tail.buffer.dropped_lines,
    }


async def _entry(runtime: HarnessRuntime) -> JsonObject:
    conversation_id, key = runtime.conversation_id, str(runtime.task_id)

    async def read(tx: Tx) -> None:
        jobs = await tx.doc(JOBS_DOC, conversation_id)
        entry = (jobs.get("jobs") or {}).get(key)
        found.update(entry if isinstance(entry, dict) else {})

    found: JsonObject = {}
    await runtime.commit(read)
    return found


def _process(entry: JsonObject) -> JobProcess | None:
    """This process's handle of the job, or a kept job's that still runs, else None."""
    mark = str(entry.get("mark") or "")
    job = RUNNING.get(mark)
    if job is not None:
        return job
    if entry.get("kept"):
        kept = KeptJob(mark, int(entry.get("pid") or 0), str(entry.get("log") or ""))
        if kept.running():
            RUNNING[mark] = kept
            return kept
    return None


async def _watch(task: TaskRecord, runtime: HarnessRuntime) -> None:
    entry = await _entry(runtime)
    job = _process(entry)
    if job is None:
        await _update(runtime, {"status": "ended", "note": ENDED_NOTE}, Completed({"ended": True}))
        return
    tail = _Tail(job.log_path)
    interval = runtime.settings().progress.output_interval_ms
    throttle = ProgressThrottle(min_interval_ms=interval)
    waiting = asyncio.ensure_future(job.wait())
    try:
        while not waiting.done():
            await asyncio.wait({waiting}, timeout=interval / 1000)
            if tail.read() and throttle.changed(_now_ms()) is not None:
                throttle.begin(_now_ms())
                fields = _output_fields(tail)
                await _update(runtime, fields)
                throttle.end(_now_ms(), len(fields["output"]))
    except BaseException:
        waiting.cancel()
        raise
    exit_code = waiting.result()
    tail.read()
    tail.buffer.finish()
    RUNNING.pop(job.mark, None)
    fields = {**_output_fields(tail), "status": "exited", "exit_code": exit_code}
    await _update(runtime, fields, Completed({"exit_code": exit_code}))


async def _abort(task: TaskRecord, runtime: HarnessRuntime) -> None:
    entry = await _entry(runtime)
    job = _process(entry)
    fields: JsonObject = {"status": "stopped"}
    if job is not None:
        await job.stop()
        RUNNING.pop(job.mark, None)
        tail = _Tail(job.log_path)
        tail.read()
        tail.buffer.finish()
        fields.update(_output_fields(tail))
    await _update(runtime, fields, Aborted())


def _now_ms() -> float:
    # REMINDER: real time, as for tool output: the throttle bounds a real process's commits.
    return time.monotonic() * 1000


JOB_TASK_DEFINITION = define_task(
    JOB_TASK,
    initial=lambda _input: {"phase": "watch"},
    phases={"watch": _watch},
    abort=_abort,
)
"""The background job task."""


def keep_job(mark: str) -> str | None:
    """Leave this process's job ``mark`` running past it; its log's new path (None: unknown)."""
    job = RUNNING.get(mark)
    keep = getattr(job, "keep", None)
    if keep is None:
        return None
    with contextlib.suppress(OSError):
        return str(keep())
    return None
