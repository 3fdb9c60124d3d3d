"""The terminal that holds the store also hosts the session (issue 15).

``start_hosted_screen`` is ``start_screen`` plus a ``SessionHost`` on the same
open session, so every ``pidurable`` that opens a store can be joined by a
second terminal (``pidurable -c`` there attaches). Who joins and leaves is a
notice on this screen. Quitting this screen while others are attached does not
end what they see: the session stays open and served (``Lingering``) until the
last one leaves, and the quitting terminal says so and how to stop it; with
nobody attached, the host says ``bye`` and the session closes as before
(``AgentController.before_close``). A host that cannot bind its socket
(a read-only directory) still runs the screen, and says it serves no one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pi_durable_tui.app.agent import AgentApp
from pi_durable_tui.app.host._host import SessionHost
from pi_durable_tui.app.screen import (
    AgentController,
    KeepServing,
    LiveScreenModel,
    start_screen,
)


def where(client: dict[str, Any]) -> str:
    """``pid 123`` for a local client, ``from 127.0.0.1:5678`` for the web page's."""
    if client.get("address"):
        return f"from {client['address']}"
    return f"pid {client.get('pid')}"


def presence_notice(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> str | None:
    """``A terminal attached (pid 123); 2 clients attached`` for a join or leave, else ``None``.

    The host's own screen leaving (it quit while others stay) is said too.
    """
    old = {c["id"]: c for c in before if not c.get("host")}
    new = {c["id"]: c for c in after if not c.get("host")}
    joined = [c for key, c in new.items() if key not in old]
    left = [c for key, c in old.items() if key not in new]
    if any(c.get("host") for c in before) and not any(c.get("host") for c in after):
        return "The hosting terminal left; its process serves this session until you leave"
    if not joined and not left:
        return None
    who = (joined or left)[0]
    verb = "attached" if joined else "left"
    count = f"{len(new)} client{'s' if len(new) != 1 else ''} attached"
    return f"A {who.get('name', 'client')} {verb} ({where(who)}); {count}"


def describe_clients(clients: list[dict[str, Any]], own: int) -> list[str]:
    """One line per attached client for ``/clients``: this terminal first, then the host."""
    lines = []
    for client in sorted(clients, key=lambda c: (c["id"] != own, not c.get("host"), c["id"])):
        role = "this terminal" if client["id"] == own else f"a {client.get('name') or 'client'}"
        if client.get("host"):
            role += ", hosting the session"
        lines.append(f"{role} ({where(client)})")
    return lines


def presence_notices(
    model: LiveScreenModel, clients: list[dict[str, Any]], own: int
) -> Callable[[list[dict[str, Any]]], None]:
    """A ``clients`` listener: each join and leave is a notice on ``model``.

    The count of the others (``own`` is this screen's client id) is in its footer.
    """
    seen = clients
    model.set_attached(sum(1 for c in clients if c["id"] != own))

    def changed(now: list[dict[str, Any]]) -> None:
        nonlocal seen
        text = presence_notice(seen, now)
        seen = now
        model.set_attached(sum(1 for c in now if c["id"] != own))
        if text is not None:
            model.add_notice("info", text)

    return changed


@dataclass(frozen=True, slots=True)
class Lingering:
    """A session whose hosting screen quit while other clients stay attached.

    The process keeps serving it: ``wait()`` returns when the last client left,
    ``close()`` then (or at a stop signal) closes the host and the session.
    """

    host: SessionHost
    app: AgentApp

    def message(self) -> str:
        """What the quitting terminal says (one line: what happens, how to stop it)."""
        count = self.host.attached
        who = "1 other terminal is" if count == 1 else f"{count} other terminals are"
        return (
            f"{who} attached: this process keeps serving the session until the last "
            f"one leaves (Ctrl+C, or kill {os.getpid()}, stops it now)"
        )

    async def wait(self) -> None:
        """Until no client is attached."""
        await self.host.alone()

    async def close(self) -> None:
        """Close the host (``bye`` to whoever is left) and the session."""
        await self.host.close()
        await self.app.close()


async def start_hosted_screen(
    app: AgentApp,
    *,
    reopened: bool,
    verbose: bool = False,
    prompt: str | None = None,
    linger: list[Lingering] | None = None,
) -> tuple[LiveScreenModel, AgentController]:
    """``start_screen``, and serve the session to other clients on ``<store>.sock``.

    Args:
        app: The open session (the controller owns it).
        reopened: As ``start_screen``.
        verbose: As ``start_screen``.
        prompt: As ``start_screen``.
        linger: When given, quitting the screen while clients are attached keeps
            the session open and puts a ``Lingering`` here for the caller to serve
            until they leave; without it, quitting says ``bye`` to them.
    """
    model, controller = await start_screen(app, reopened=reopened, verbose=verbose, prompt=prompt)
    host = SessionHost(app)
    try:
        await host.start()
    except OSError as error:
        model.add_notice("warning", f"Not serving this session to other terminals: {error}")
        return model, controller

    async def before_close() -> None:
        if linger is not None and host.attached:
            host.screen_left()
            linger.append(Lingering(host, app))
            raise KeepServing
        await host.close()

    controller.before_close(before_close)
    controller.presence = lambda: describe_clients(host.clients, 0)
    host.on_clients(presence_notices(model, host.clients, 0))
    return model, controller
