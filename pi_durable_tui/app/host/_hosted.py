"""The terminal that holds the store also hosts the session (issue 15).

``start_hosted_screen`` is ``start_screen`` plus a ``SessionHost`` on the same
open session, so every ``pidurable`` that opens a store can be joined by a
second terminal (``pidurable -c`` there attaches). Who joins and leaves is a
notice on this screen. The host says ``bye`` to its clients before the session
closes (``AgentController.before_close``). A host that cannot bind its socket
(a read-only directory) still runs the screen, and says it serves no one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pi_durable_tui.app.agent import AgentApp
from pi_durable_tui.app.host._host import SessionHost
from pi_durable_tui.app.screen import AgentController, LiveScreenModel, start_screen


def presence_notice(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> str | None:
    """``A terminal attached (pid 123); 2 clients`` for one join or leave, else ``None``."""
    old = {c["id"]: c for c in before if not c.get("host")}
    new = {c["id"]: c for c in after if not c.get("host")}
    joined = [c for key, c in new.items() if key not in old]
    left = [c for key, c in old.items() if key not in new]
    if not joined and not left:
        return None
    who = (joined or left)[0]
    verb = "attached" if joined else "left"
    count = f"{len(new)} client{'s' if len(new) != 1 else ''} attached"
    return f"A {who.get('name', 'client')} {verb} (pid {who.get('pid')}); {count}"


def presence_notices(
    model: LiveScreenModel, clients: list[dict[str, Any]]
) -> Callable[[list[dict[str, Any]]], None]:
    """A ``clients`` listener that puts each join and leave on ``model`` as a notice."""
    seen = clients

    def changed(now: list[dict[str, Any]]) -> None:
        nonlocal seen
        text = presence_notice(seen, now)
        seen = now
        if text is not None:
            model.add_notice("info", text)

    return changed


async def start_hosted_screen(
    app: AgentApp, *, reopened: bool, verbose: bool = False, prompt: str | None = None
) -> tuple[LiveScreenModel, AgentController]:
    """``start_screen``, and serve the session to other clients on ``<store>.sock``."""
    model, controller = await start_screen(app, reopened=reopened, verbose=verbose, prompt=prompt)
    host = SessionHost(app)
    try:
        await host.start()
    except OSError as error:
        model.add_notice("warning", f"Not serving this session to other terminals: {error}")
        return model, controller
    controller.before_close(host.close)
    host.on_clients(presence_notices(model, host.clients))
    return model, controller
