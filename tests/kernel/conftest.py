"""Fixtures of the kernel tests: session kits that close themselves.

``kits`` opens Sessions for a test (``await kits.open(*definitions)``, and
``await kits.reopen(kit)`` for a simulated crash) and closes every one of them
when the test ends, passed or failed, so tests hold no ``try/finally`` of their own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.kernel.task_support import Kits


@pytest.fixture
async def kits() -> AsyncIterator[Kits]:
    opened = Kits()
    yield opened
    await opened.close_all()
