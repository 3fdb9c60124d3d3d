"""What earlier runs of a session left running, found and ended at the next opening (issue 13).

Every run of pidurable marks its commands with its run token (``env.run_token``),
and this module writes each run's token to ``runs.txt`` beside the session's
store. The run guard of a run killed with ``SIGKILL`` normally ends what that
run left (``env._run_guard``); if the guard died too (the whole machine's
processes were killed, an out-of-memory kill), the processes carrying an earlier
run's mark are still there when the session is opened again (``--continue``,
``--session``, ``/resume``). They are ended then, and one notice names them,
PID and command, for the recovery report (the screen) or stderr (print mode).
The earlier run's spill directory is removed too. Jobs the user chose to leave
running (their marks in ``kept.txt``, ``_job_exit``) are spared, and forgotten
once they ended.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from pi_durable_tui.app.agent._job_exit import KEPT_NAME, kept_marks
from pi_durable_tui.env import RUN_DIRECTORY_PREFIX, ProcessInfo, end_processes, processes_of_run
from pi_durable_tui.env import run_token as this_run

RUNS_NAME = "runs.txt"
"""The file beside a store listing the run tokens of the runs that opened it."""

SHOWN = 8
"""How many processes the notice names (the rest are counted)."""

_GRACE_SECONDS = 0.5


def _earlier_tokens(store: Path) -> list[str]:
    try:
        text = (store.parent / RUNS_NAME).read_text("ascii")
    except (OSError, UnicodeDecodeError):
        return []
    current = this_run()
    return [line.strip() for line in text.splitlines() if line.strip() and line.strip() != current]


def _command(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_leftovers(found: list[ProcessInfo]) -> str:
    """The one notice naming what was ended: ``N processes ... : PID `command`, ...``."""
    named = ", ".join(f"{info.pid} `{_command(info.command)}`" for info in found[:SHOWN])
    more = f" and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    noun = "process" if len(found) == 1 else "processes"
    return f"An earlier run left {len(found)} {noun} running, now ended: {named}{more}."


async def end_earlier_runs(store: Path) -> str | None:
    """End what earlier runs of this session left running; record this run.

    Args:
        store: The session's store (``runs.txt`` is beside it).

    Returns:
        The notice naming the processes ended, or None when none was left.
    """
    tokens = _earlier_tokens(store)
    kept = {mark for mark in kept_marks(store) if processes_of_run(mark)}
    spared = {info.pid for mark in kept for info in processes_of_run(mark)}
    found = [info for token in tokens for info in processes_of_run(token) if info.pid not in spared]
    if found:
        await end_processes([info.pid for info in found], _GRACE_SECONDS)
    for token in tokens:
        shutil.rmtree(
            os.path.join(tempfile.gettempdir(), f"{RUN_DIRECTORY_PREFIX}{token}"),
            ignore_errors=True,
        )
    with contextlib.suppress(OSError):  # a session in a database has no directory to write
        if store.parent.is_dir():
            (store.parent / RUNS_NAME).write_text(this_run() + "\n", "ascii")
            (store.parent / KEPT_NAME).write_text("".join(f"{m}\n" for m in sorted(kept)))
    return describe_leftovers(found) if found else None
