"""A client of a session served elsewhere: the link to its host (issue 15).

A part of the app, not a public face. It imports ``app._wire`` and
``app._socket`` only, nothing below the app layer but the JSON operations: a
client never opens a store or a harness, so attaching costs no import of them.

- ``_link``: ``HostLink``, one connection to a host (``hello``, messages, calls).
"""

from pi_durable_tui.app.client._link import HostGone, HostLink, HostRefused

__all__ = ["HostGone", "HostLink", "HostRefused"]
