"""Calling extension callbacks that may be sync or async (hooks, sections) (R78, R117).

``invoke`` calls one; ``call_hook`` calls an observing or deciding hook the way
every built-in task does: cancellation propagates, an error while the task is
being aborted propagates (the abort path answers), and any other error is
reported as ``hook_failed`` and the hook counts as having answered ``HOOK_FAILED``
(the task goes on with the next hook).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from pi_durable_tui.kernel import Report

HOOK_FAILED: Any = object()
"""What ``call_hook`` returns for a hook that raised (it was reported)."""


async def invoke(fn: Callable[..., Any], *args: Any) -> Any:
    """Call ``fn(*args)`` and await its result when it is awaitable."""
    result = fn(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


async def call_hook(
    fn: Callable[..., Any],
    *args: Any,
    point: str,
    report: Callable[[Report], None],
    aborted: asyncio.Event | None = None,
) -> Any:
    """Call a hook; a hook that raises is reported and gives ``HOOK_FAILED``.

    Args:
        fn: The hook.
        *args: Its arguments.
        point: The hook point's name, for the report (``before_request``).
        report: Where a failure is reported.
        aborted: When given and set, a hook's error propagates instead.

    Returns:
        What the hook returned, or ``HOOK_FAILED``.
    """
    try:
        return await invoke(fn, *args)
    except asyncio.CancelledError:
        raise
    except Exception as error:
        if aborted is not None and aborted.is_set():
            raise
        report(Report("hook_failed", f"{point} hook raised: {error}", error))
        return HOOK_FAILED
