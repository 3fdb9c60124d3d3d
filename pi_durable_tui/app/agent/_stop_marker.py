"""How a run ended, kept in the session (``pi.stop``): a stop, or nothing known (a crash).

A run that closes in order (a stop signal, a quit) leaves its live work as it
was: close writes no task outcome, no abort mark, no retirement (R27), and the
next opening turns the running tasks into pending ones (R22), so the tasks
alone cannot tell a stop from a ``kill -9``. The recovery report of the next
``--continue`` said "cut by the crash" after a SIGTERM too. So a closing run
commits, before the seal, one session document saying which live tasks it
stopped and why: ``pi.stop`` = ``{"tasks": {"<task id>": "<cause>"}}``, the
cause a signal's name (``SIGTERM``, ``SIGINT``, ``SIGHUP``) or ``closed`` (no
signal: the terminal app quit, or ``/new`` and ``/resume`` left the session,
while work ran). It is an app document, not task state: the tasks and their
recovery (R95: an interrupted call comes back to the model as ``interrupted``
whatever cut it) are untouched. A process killed with SIGKILL
commits nothing, so a task absent from the marker was cut by a crash.

The next opening takes the marker (reads it, and empties it in one commit
before anything is scheduled, R23), so a marker only ever speaks of the run
before: if that opening is killed in turn, the marker is gone and the report
says crash, even for a call the earlier stop cut and the killed run never ran
again (the safe side: a stop is never claimed where a crash may have cut the
call). What the taking run never reserved (a stop during its own start, or
before the task's turn came) keeps the cause it had: the taking run hands it on
at its own close. A task the taking run did run and that is still live at its
close gets that run's cause.

Cheap on purpose: the document is created (one ID) only by a close that stops
live work, and an opening commits only when there is a marker to empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pi_durable_tui.kernel import Tx, define_doc

if TYPE_CHECKING:
    from pi_durable_tui.harness import Harness

STOP_DOC = define_doc("pi.stop", initial=dict, scope="session", checkpoint_when=lambda *_: True)
"""``pi.stop`` (session scope): ``{"tasks": {"<id>": cause}}``, what the last close stopped."""

CLOSED = "closed"
"""The cause of a close no signal asked for (a quit, ``/new``, ``/resume``)."""


async def take_stop_marker(harness: Harness) -> dict[int, str]:
    """What the previous run's orderly close stopped (task ID to cause), emptying the marker.

    Read with a snapshot (it creates nothing, R9); emptied in one commit only
    when it names a task. Call before scheduling starts.
    """
    stored = await harness.session.snapshot(STOP_DOC) or {}
    tasks = stored.get("tasks")
    if not isinstance(tasks, dict) or not tasks:
        return {}
    causes = {
        int(key): value
        for key, value in tasks.items()
        if key.isdigit() and isinstance(value, str) and value
    }

    async def empty(tx: Tx) -> None:
        (await tx.doc(STOP_DOC))["tasks"] = {}

    await harness.session.commit(empty)
    return causes


async def commit_stop_marker(harness: Harness, cause: str, earlier: Mapping[int, str]) -> None:
    """Record which live tasks this close stops, and why (before the harness closes).

    Args:
        harness: The open harness of the closing run.
        cause: Why the run ends: a signal's name, or ``CLOSED``.
        earlier: What the marker said at this run's opening (``take_stop_marker``).
    """
    found = await harness.inspect()
    tasks: dict[str, str] = {}
    for item in found["tasks"]:
        task_id = item["id"]
        activity = item.get("activity") or {}
        if activity.get("running"):
            tasks[str(task_id)] = cause  # an invocation of this run is cut now
        elif task_id in earlier:
            tasks[str(task_id)] = earlier[task_id]  # never reserved here: still the old cut
    if not tasks:
        return  # nothing live to speak of (and the opening emptied any marker)

    async def record(tx: Tx) -> None:
        (await tx.doc(STOP_DOC))["tasks"] = tasks

    await harness.session.commit(record)
