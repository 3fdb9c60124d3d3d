"""``pidurable acp``: an editor's agent over the Agent Client Protocol (issue 15).

A part of the app, not a public face: ``acp_main`` is imported from
``pi_durable_tui.app``, lazily.

Its private modules, lowest first:

- ``_rpc``: JSON-RPC 2.0 framing, one object per line each way;
- ``_updates``: ``session/update`` notifications from the screen's view model;
- ``_history``: ``session/load``'s replay of a whole stored history, page by page;
- ``_agent``: ``AcpAgent``, the ACP methods on the screen's model and controller;
- ``_main``: the ``acp`` subcommand, stdio and the exit.

The highest part of the app: it imports ``agent``, ``files``, ``screen``,
``host`` and ``remote``.
"""

from pi_durable_tui.app.acp._main import acp_main

__all__ = ["acp_main"]
