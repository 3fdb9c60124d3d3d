"""Views, watches and agent events: what a screen renders, from committed state only (R123-R125).

A part of the harness, not a public face: ``ViewState``, ``ViewWatch``,
``EventStream``, ``watch_events`` and ``UnknownConversation`` are imported from
``pi_durable_tui.harness``. ``Conversation`` uses ``view_state`` and ``watch_view``.

Its private modules, lowest first (each imports only the ones before it):

- ``_view_mount``: a conversation's active entries and built-in documents, kept
  by commits (R123, R27);
- ``_frame_queue``: the bounded delivery queue of one watch consumer (R124, R125);
- ``_views``: conversation views and watches (R123, R124);
- ``_event_translation``: the pure translation of one commit into agent events
  (R125);
- ``_events``: ``watch_events``, a conversation's commits as a stream of events
  (R125).

Outside itself this part imports only ``harness._errors`` and ``harness.state``
(the built-in documents a view mounts).
"""

from pi_durable_tui.harness.views._events import EventStream, watch_events
from pi_durable_tui.harness.views._view_mount import UnknownConversation
from pi_durable_tui.harness.views._views import ViewState, ViewWatch, view_state, watch_view

__all__ = [
    "EventStream",
    "UnknownConversation",
    "ViewState",
    "ViewWatch",
    "view_state",
    "watch_events",
    "watch_view",
]
