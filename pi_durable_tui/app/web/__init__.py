"""The web page of a live session, and ``pidurable serve`` (issue 15).

A part of the app, not a public face: ``serve_main`` is imported from
``pi_durable_tui.app``, lazily. The page is static files (``static/``: HTML,
CSS and JavaScript, no build step, nothing loaded from the internet) that speak
the wire (``app._wire``) over a WebSocket to the session's ``SessionHost``.

Its private modules, lowest first:

- ``_address``: ``--web HOST:PORT`` and the loopback rule;
- ``_access``: the token, Host and Origin checks;
- ``_server``: ``WebServer`` (aiohttp), the WebSocket as a host transport;
- ``_serve``: ``pidurable serve [--web ...]``, a host without a terminal.

It imports ``app._wire``, ``app._startup_errors``, ``agent`` and ``host``.
"""

from pi_durable_tui.app.web._address import WebAddress, parse_web_address
from pi_durable_tui.app.web._serve import serve_main
from pi_durable_tui.app.web._server import WebServer

__all__ = ["WebAddress", "WebServer", "parse_web_address", "serve_main"]
