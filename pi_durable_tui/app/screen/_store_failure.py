"""A store that fails under a running screen: one line, no traceback, no silent hang (issue 12).

When a commit fails with an unknown outcome (a full disk, another SQLite client
holding the write lock past the busy timeout, an I/O error), the kernel poisons
the session (R8): no commit lands any more, so ``pi.live`` keeps saying the turn
works and the screen would wait forever. ``watch_store_failure`` listens for the
session's end (``Session.closed``) and, when it failed, hands the view model the
line of ``describe_store_failure``: what failed, that nothing committed was lost,
and the command that continues the session once the cause is gone. The app stays
usable for quitting (closing a failed session writes nothing and does not wait);
an action tried after it (a prompt, Esc) fails with ``StoreStopped``, one line
pointing at the notice, instead of the kernel's ``SessionFailed`` text; the task
tree shows every task ``stopped`` (``stopped_tasks``). A session's host watches
the same way and tells its attached clients (``app.host``: the wire's
``stopped``), whose view models then show the same line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pi_durable_tui.app._startup_errors import describe_store_failure
from pi_durable_tui.app._view import TaskNode

if TYPE_CHECKING:
    from pi_durable_tui.app.agent import AgentApp

STOPPED = "Stopped: the session store cannot be written (ctrl+c twice quits; see the notice)"
"""The status line once the store failed: nothing runs on, whatever ``pi.live`` says."""


class StoreStopped(Exception):
    """An action tried after the store failed: nothing it would do can be stored.

    The screen says ``<action> failed: <this message>`` under the notice that
    says what failed (the controller raises it for a ``SessionFailed``).
    """

    def __init__(self) -> None:
        super().__init__("the session store cannot be written (see the notice); ctrl+c twice quits")


def stopped_tasks(nodes: Sequence[TaskNode]) -> tuple[TaskNode, ...]:
    """The task tree as it stood when the store failed, every task ``stopped``.

    No commit lands any more, so the tree would keep saying ``running request``
    with a clock that ticks on; the time it ran is not known either (a task's
    elapsed time moves on the screen from the last tree the store gave), so
    none is shown.
    """
    return tuple(
        replace(
            node,
            status="stopped",
            phase="",
            elapsed_s=None,
            aborting=False,
            children=stopped_tasks(node.children),
        )
        for node in nodes
    )


def continue_command(app: AgentApp) -> str:
    """The command that opens this session again: ``pidurable -c``, or with ``--session``."""
    options = app.options
    named = options is not None and options.session is not None
    command = f"pidurable --session {app.session_id}" if named else "pidurable -c"
    if options is not None and options.env is not None:
        command += f" --env {options.env}"
    return command


def watch_store_failure(app: AgentApp, said: Callable[[str], None]) -> Callable[[], None]:
    """Call ``said(line)`` once if ``app``'s session fails; returns the function that stops it."""
    closed = app.harness.session.closed

    def ended(future: asyncio.Future[Any]) -> None:
        if future.cancelled() or future.exception() is not None:
            return
        reason = future.result()
        if reason.reason == "failed" and reason.error is not None:
            hint = continue_command(app)
            said(describe_store_failure(reason.error, app.store, app.session_id, hint))

    closed.add_done_callback(ended)

    def stop() -> None:
        closed.remove_done_callback(ended)

    return stop
