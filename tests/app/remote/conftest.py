"""Fixtures of the attached-screen tests: the host tests' served sessions, attached screens."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from pi_durable_tui.app import LiveScreenModel, RemoteController, attach_screen
from tests.app.host.conftest import serve
from tests.harness.run_support import within

__all__ = ["Attach", "attach", "serve"]

Attach = Callable[..., Awaitable[tuple[LiveScreenModel, RemoteController]]]
"""Attach a screen to a served store; closed at the test's end."""


@pytest.fixture
async def attach() -> AsyncIterator[Attach]:
    """Attach screens to a store over its socket; every one is closed afterwards."""
    opened: list[RemoteController] = []

    async def attach_(store: object) -> tuple[LiveScreenModel, RemoteController]:
        model, controller = await within(attach_screen(str(store)))
        opened.append(controller)
        return model, controller

    yield attach_
    for controller in opened:
        await within(controller.close())
