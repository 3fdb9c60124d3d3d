"""Conversation views and watches: what a screen renders, from committed state only (R123, R124).

Both are built on a ``ViewMount`` (``_view_mount``), so their value is
``{"conversation", "entries", "docs"}`` and their operations are the storage
operation format, which a remote client applies with ``apply_ops``.

- ``ViewState`` (``Conversation.view_state(tail=None)``, R123): a read-only
  replicated state. ``value`` is the current revision; ``subscribe(listener)``
  calls ``listener(value, ops)`` synchronously after each commit that changed the
  view (one call per commit); ``close()`` ends it. A late joiner simply gets the
  current value; nothing is replayed.
- ``ViewWatch`` (``Conversation.watch(tail=None)``, R124): the same frames as an
  async iterator (``async for frame in watch``: ``frame.value``, ``frame.ops``,
  ``frame.seq``). ``value`` is the acquisition revision until the first frame and
  advances just before each frame is handed out. Commits never wait for the
  consumer: past 100 undelivered frames, the backlog collapses into one root
  replacement (``[{"op": "set", "path": [], "value": newest}]``).

Both end when the harness closes (they keep their last value and receive
nothing from commits that settle during close, R27). Values and operations are
shared, never copied per observer: treat them as read-only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from pi_durable_tui.harness.views._frame_queue import QueuedWatch
from pi_durable_tui.harness.views._view_mount import ViewMount, attach
from pi_durable_tui.kernel import CommitInfo, Report, Session, WatchFrame
from pi_durable_tui.storage.json_ops import JsonObject, Op

ViewListener = Callable[[JsonObject, list[Op]], None]
"""``listener(value, ops)``: the view after a commit and the operations that made it."""


def root_replacement(value: JsonObject) -> list[Op]:
    """The operations that replace a whole view with ``value``."""
    return [{"op": "set", "path": [], "value": value}]


class ViewState:
    """A read-only replicated state of one conversation's view (R123).

    Get one with ``await conversation.view_state(tail=None)``.
    """

    def __init__(self, mount: ViewMount, report: Callable[[Report], None]) -> None:
        self._mount = mount
        self._report = report
        self._listeners: dict[int, ViewListener] = {}
        self._next = 0

    @property
    def value(self) -> JsonObject:
        """The current view ``{"conversation", "entries", "docs"}`` (read-only)."""
        return self._mount.value

    @property
    def closed(self) -> bool:
        """Whether the view stopped following commits (``close()`` or harness close)."""
        return self._mount.ended

    def subscribe(self, listener: ViewListener) -> Callable[[], None]:
        """Call ``listener(value, ops)`` after each commit that changes the view.

        The listener runs synchronously as the commit publishes and must not
        block; one that raises is unsubscribed and reported.

        Returns:
            A function that unsubscribes (idempotent).
        """
        key = self._next
        self._next += 1
        self._listeners[key] = listener

        def unsubscribe() -> None:
            self._listeners.pop(key, None)

        return unsubscribe

    async def older(self, before: int, limit: int = 50) -> list[JsonObject]:
        """Page the active range backwards from entry ``before`` (see ``ViewMount.older``)."""
        return await self._mount.older(before, limit)

    def close(self) -> None:
        """Stop following commits (idempotent); the value stays as it is."""
        self._mount.detach()
        self._listeners.clear()

    # -- MountObserver --

    def advanced(
        self, before: JsonObject, after: JsonObject, ops: list[Op], info: CommitInfo
    ) -> None:
        """Hand a commit's view operations to every listener."""
        if ops:
            self._notify(after, ops)

    def resynced(self, before: JsonObject, after: JsonObject, seq: int) -> None:
        """Hand a rebuilt view to every listener as a root replacement."""
        self._notify(after, root_replacement(after))

    def ended(self) -> None:
        """The harness closed: nothing follows."""
        self._listeners.clear()

    def _notify(self, value: JsonObject, ops: list[Op]) -> None:
        for key, listener in list(self._listeners.items()):
            try:
                listener(value, ops)
            except Exception as error:  # REMINDER: one bad subscriber must not stop the others.
                self._listeners.pop(key, None)
                self._report(
                    Report("listener_error", f"A view subscriber raised: {error!r}", error)
                )


class ViewWatch(QueuedWatch[WatchFrame]):
    """The frames of one conversation's view as an async iterator, bounded (R124).

    Get one with ``await conversation.watch(tail=None)``; one consumer iterates it.
    """

    def __init__(self, mount: ViewMount) -> None:
        super().__init__(mount, _collapse)
        self._value = mount.value

    @property
    def value(self) -> JsonObject:
        """The view as of the newest frame handed out (or the acquisition)."""
        return self._value

    def __aiter__(self) -> AsyncIterator[WatchFrame]:
        return self._frames()

    async def _frames(self) -> AsyncIterator[WatchFrame]:
        async for frame in self._queue:
            assert frame.value is not None
            self._value = frame.value  # advances just before the frame is handed out (R124)
            yield frame

    async def older(self, before: int, limit: int = 50) -> list[JsonObject]:
        """Page the active range backwards from entry ``before`` (see ``ViewMount.older``)."""
        return await self._mount.older(before, limit)

    # -- MountObserver --

    def advanced(
        self, before: JsonObject, after: JsonObject, ops: list[Op], info: CommitInfo
    ) -> None:
        """Queue a commit's frame."""
        if ops:
            self._queue.push(WatchFrame(after, ops, info.seq))

    def resynced(self, before: JsonObject, after: JsonObject, seq: int) -> None:
        """Queue a root replacement after a rebuild."""
        self._queue.push(WatchFrame(after, root_replacement(after), seq))


def _collapse(newest: WatchFrame) -> WatchFrame:
    assert newest.value is not None
    return WatchFrame(newest.value, root_replacement(newest.value), newest.seq)


async def view_state(
    session: Session, conversation_id: int, tail: int | None, report: Callable[[Report], None]
) -> ViewState:
    """Mount a conversation's view on the line and return it as a state (R123).

    ``report`` receives the failure of a subscriber (which is then unsubscribed).
    """
    return await attach(session, conversation_id, tail, lambda mount: ViewState(mount, report))


async def watch_view(session: Session, conversation_id: int, tail: int | None) -> ViewWatch:
    """Mount a conversation's view on the line and return it as a watch (R124)."""
    return await attach(session, conversation_id, tail, ViewWatch)
