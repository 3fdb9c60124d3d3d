"""Fixtures of the host tests: a served session (its own screen and a ``SessionHost``) and links.

``serve(*responses, **screen_options)`` opens a session with ``open_screen`` (the
host's own screen, as ``pidurable`` opens it), starts a ``SessionHost`` on it
and returns ``Served``; ``served.link(**hello)`` connects a client over the
real Unix socket. Hosts and links are closed at teardown.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from pi_durable_tui.app._wire import Mirror
from pi_durable_tui.app.client import HostLink
from pi_durable_tui.app.host import SessionHost
from tests.app.screen_support import ScreenFactory, ScreenRig
from tests.deadlines import WAIT
from tests.harness.run_support import within


@dataclass(eq=False)
class Follower:
    """A link and the mirror it keeps of what it follows."""

    link: HostLink
    mirror: Mirror = field(default_factory=Mirror)
    seen: list[dict[str, Any]] = field(default_factory=list)

    async def next(self, kind: str | None = None) -> dict[str, Any]:
        """The next message (of ``kind``), applied to the mirror."""
        while True:
            message = await within(self.link.receive(), WAIT)
            self.seen.append(message)
            self.mirror.apply(message)
            if kind is None or message["t"] == kind:
                return message

    async def drain(self) -> None:
        """Read until the link ends (raises ``HostGone`` then)."""
        while True:
            await self.next()

    async def until(self, predicate: Callable[[Mirror], bool], what: str) -> None:
        """Apply messages until ``predicate(mirror)`` holds."""
        while not predicate(self.mirror):
            try:
                await self.next()
            except TimeoutError:
                raise TimeoutError(f"never reached: {what}") from None

    def texts(self, kind: str = "pi.user") -> list[str]:
        """The texts of the mirrored entries of a kind."""
        found = []
        for entry in self.mirror.entries:
            if entry["kind"] == kind:
                for message in entry.get("model") or []:
                    content = message.get("content")
                    if isinstance(content, str):
                        found.append(content)
                    else:
                        found.append(
                            "".join(b.get("text", "") for b in content if b.get("type") == "text")
                        )
        return found


@dataclass(eq=False)
class Served:
    rig: ScreenRig
    host: SessionHost
    links: list[HostLink]

    async def link(self, **hello: Any) -> Follower:
        link = await within(HostLink.connect(self.host.path, **hello))
        self.links.append(link)
        return Follower(link)

    async def follower(self, **hello: Any) -> Follower:
        """A link past its ``welcome`` and first ``snapshot`` (or replay)."""
        follower = await self.link(**hello)
        assert (await follower.next())["t"] == "welcome"
        return follower


ServeFactory = Callable[..., Awaitable[Served]]


@pytest.fixture
async def serve(open_screen: ScreenFactory) -> AsyncIterator[ServeFactory]:
    served: list[Served] = []

    async def factory(*responses: Any, **options: Any) -> Served:
        rig = await open_screen(*responses, **options)
        host = SessionHost(rig.app)
        await within(host.start())
        result = Served(rig, host, [])
        served.append(result)
        return result

    yield factory
    for item in served:
        for link in item.links:
            await within(link.close())
        await within(item.host.close())
