"""Calling extension callbacks that may be sync or async (hooks, sections) (R78, R117)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


async def invoke(fn: Callable[..., Any], *args: Any) -> Any:
    """Call ``fn(*args)`` and await its result when it is awaitable."""
    result = fn(*args)
    if inspect.isawaitable(result):
        result = await result
    return result
