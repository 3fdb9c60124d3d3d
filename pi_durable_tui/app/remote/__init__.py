"""A screen attached to a session hosted by another process (issue 15).

A part of the app, not a public face: ``attach_screen``, ``RemoteFeed`` and
``RemoteController`` are imported from ``pi_durable_tui.app``, lazily.

Its private modules, lowest first:

- ``_feed``: ``RemoteFeed``, the view model's state from the wire;
- ``_controller``: ``RemoteController``, the screen's actions as calls;
- ``_attach``: ``attach_screen``, both over a new link.

Above ``host`` (its presence words): it imports ``client``, ``files``,
``screen`` (the one view model) and ``host``.
"""

from pi_durable_tui.app.remote._attach import attach_if_hosted, attach_screen
from pi_durable_tui.app.remote._controller import RemoteController
from pi_durable_tui.app.remote._feed import RemoteFeed

__all__ = ["RemoteController", "RemoteFeed", "attach_if_hosted", "attach_screen"]
