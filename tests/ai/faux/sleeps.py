"""A pacing sleep for the faux tests that records what was asked instead of waiting."""

from __future__ import annotations

import asyncio


class RecordingSleep:
    """A fake ``sleep`` that records what was asked and returns at once."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        await asyncio.sleep(0)

    @property
    def total(self) -> float:
        return sum(self.calls)
