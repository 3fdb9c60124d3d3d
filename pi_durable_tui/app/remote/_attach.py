"""Attaching a screen to a session hosted elsewhere (issue 15).

``attach_screen`` connects to ``<store>.sock``, reads the host's ``welcome``,
and starts the SAME ``LiveScreenModel`` the host's own terminal runs, over a
``RemoteFeed``, with a ``RemoteController``: the screen shows the current
transcript, queue, task tree and any pending approval at once (the snapshot),
then follows every commit.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pi_durable_tui.app._socket import socket_path
from pi_durable_tui.app._wire import WINDOW
from pi_durable_tui.app.client import HostGone, HostLink
from pi_durable_tui.app.files import SessionUnavailable
from pi_durable_tui.app.host import presence_notices
from pi_durable_tui.app.remote._controller import RemoteController
from pi_durable_tui.app.remote._feed import RemoteFeed
from pi_durable_tui.app.screen import LiveScreenModel

TAKE_OVER = "quit (Ctrl+D) and run `pidurable --continue` to take over: nothing committed is lost"

HOST_GONE = "Stopped: the session's host is gone (ctrl+c twice quits; see the notice)"
"""The status line once the host is gone: nothing runs on here, whatever was last shown."""


def host_gone(reason: str) -> str:
    """What an attached screen says when its host is gone."""
    if reason == "host closing":
        return "The session's host stopped serving it; " + TAKE_OVER
    if reason == "gone":  # the connection ended without a word: killed, or crashed
        return "The session's host is gone (killed, or it crashed); " + TAKE_OVER
    return f"The session's host is gone ({reason}); " + TAKE_OVER


def _stop_when_gone(model: LiveScreenModel, reason: str) -> None:
    # The screen stops as after a store failure: no commit reaches it any more, so
    # its tree, status line and `+N attached` would say the agent works forever.
    model.set_attached(0)
    model.stop(host_gone(reason), HOST_GONE)


async def attach_screen(
    store: Path | str,
    *,
    name: str = "terminal",
    verbose: bool = False,
    context_window: Callable[[str], int] = lambda ref: 0,
) -> tuple[LiveScreenModel, RemoteController]:
    """Attach to the host serving ``store``.

    Raises:
        OSError: Nobody serves it (no socket, or a dead host's).
        HostGone: The host refused or closed the connection.
    """
    link = await HostLink.connect(socket_path(store), name=name, window=WINDOW)
    try:
        welcome = await link.receive()
        if welcome.get("t") != "welcome":
            raise HostGone(str(welcome.get("message") or welcome.get("t")))
        feed = RemoteFeed(link, welcome, context_window)
        model = LiveScreenModel(feed, verbose=verbose)
        await model.attach(feed.root_id)
        feed.on_gone(lambda reason: _stop_when_gone(model, reason))
        feed.on_error(lambda message: model.add_notice("warning", message))
        feed.on_stopped(model.store_failed)
        if feed.mode:
            model.set_permission_mode(feed.mode)
        feed.on_mode(model.set_permission_mode)
        feed.on_clients(presence_notices(model, list(feed.clients), feed.client_id))
        host = next((c for c in feed.clients if c.get("host")), None)
        where = (
            f"process {feed.host_pid}"
            if host is None
            else f"the terminal of process {feed.host_pid}"
        )
        model.add_notice("info", f"Attached to this session, hosted by {where}")
    except BaseException:
        await link.close()
        raise
    return model, RemoteController(feed, model)


async def attach_if_hosted(
    error: SessionUnavailable, *, verbose: bool = False
) -> tuple[LiveScreenModel, RemoteController] | None:
    """Attach to the host of a store that was locked, or ``None`` when nobody serves it.

    A store locked by a process that serves no socket (an older pidurable, a
    headless run) stays the refusal it was.
    """
    from pi_durable_tui.storage import StoreLocked

    if not isinstance(error.cause, StoreLocked) or not socket_path(error.store).exists():
        return None
    try:
        return await attach_screen(error.store, verbose=verbose)
    except (OSError, HostGone):
        return None
