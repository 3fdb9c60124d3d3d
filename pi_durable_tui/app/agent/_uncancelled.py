"""Opening and closing a session run to their end, even when the caller is cancelled.

Ctrl-C and SIGTERM cancel the command's main task at whatever it awaits (see
``cli``). Opening a session takes the store's lock and starts aiosqlite's
connection thread; a cancellation landing in the middle would leave them behind:
a connection nobody closes (its thread later reports to a closed event loop and
keeps the process alive) or a store never closed. So ``complete`` runs such a
step as its own task and waits for it to end whatever happens to the caller;
when the caller was cancelled meanwhile, it undoes what the step produced (an
opened session is closed again) and only then lets the cancellation go on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def _wait_out(task: asyncio.Future[Any]) -> bool:
    """Wait until ``task`` is done; return whether the caller was cancelled meanwhile."""
    cancelled = False
    while not task.done():
        try:
            # REMINDER: asyncio.wait, unlike awaiting the task, never cancels it.
            await asyncio.wait({task})
        except asyncio.CancelledError:
            cancelled = True
    return cancelled


async def complete(
    step: Awaitable[T], *, undo: Callable[[T], Awaitable[object]] | None = None
) -> T:
    """Await ``step`` to its end even when the caller is cancelled while it runs.

    Args:
        step: The start-up or shutdown step.
        undo: Run (to its end as well) on the step's result when the caller was
            cancelled and the step succeeded: closes what the step opened.

    Returns:
        The step's result.

    Raises:
        asyncio.CancelledError: The caller was cancelled while the step ran (after
            the step, and ``undo``, ended).
        Exception: What the step raised, when the caller was not cancelled.
    """
    task: asyncio.Future[T] = asyncio.ensure_future(step)
    if not await _wait_out(task):
        return task.result()
    # Past here the caller was cancelled: the step's own error, if any, is dropped.
    if not task.cancelled() and task.exception() is None and undo is not None:
        undoing = asyncio.ensure_future(undo(task.result()))
        await _wait_out(undoing)
        if not undoing.cancelled():
            undoing.exception()  # retrieved: the cancellation is what the caller gets
    raise asyncio.CancelledError
