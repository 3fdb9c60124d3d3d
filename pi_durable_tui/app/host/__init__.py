"""The host of an open session: it serves the session to other clients (issue 15).

A part of the app, not a public face: ``SessionHost`` is imported from
``pi_durable_tui.app``, lazily. The process that holds the store (the single
writer) serves the session on ``<store>.sock``; clients attach with
``app.client.HostLink`` and speak ``app._wire``.

Its private modules, lowest first (each imports only the ones before it):

- ``_frames``: a conversation's snapshot and commit frames, built once per commit;
- ``_intents``: what a client's ``call`` does, through the host's harness;
- ``_connection``: one client's bounded outbox and writer (R124);
- ``_host``: ``SessionHost``, the socket, the commit listener, presence;
- ``_transport``: how the host reaches one client (a Unix socket; the web page's
  WebSocket is ``app.web``'s);
- ``_hosted``: ``start_hosted_screen``, the terminal that holds the store hosts it;
- ``_json_mode``: ``run_headless``, ``--mode json`` prints the wire (a client on
  standard output).

It imports ``app._wire``, ``app._socket``, ``_startup_errors``, ``agent`` and
``screen`` (the task tree, the screen it hosts).
"""

from pi_durable_tui.app.host._frames import history_page
from pi_durable_tui.app.host._host import SessionHost
from pi_durable_tui.app.host._hosted import (
    Lingering,
    describe_clients,
    presence_notices,
    start_hosted_screen,
)
from pi_durable_tui.app.host._json_mode import follow_wire, run_headless

__all__ = [
    "Lingering",
    "SessionHost",
    "describe_clients",
    "follow_wire",
    "history_page",
    "presence_notices",
    "run_headless",
    "start_hosted_screen",
]
