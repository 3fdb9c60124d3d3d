"""``watch_events``: one conversation's commits as a stream of coding-agent events (R125).

Experimental in the reference; this is what ``pidurable --mode json`` prints, one
JSON line per event. The stream mounts the conversation's view on the line
(``_view_mount``), so its first batch, ``[snapshot]``, and the registration for
later commits are one atomic step: no commit is missed or seen twice. After
that, every commit touching the conversation yields one batch (a list of
events) in the order of ``_event_translation``; a commit causing no event
yields nothing.

Commits never wait for the consumer: past 100 undelivered batches, the backlog
collapses into one batch holding a fresh ``snapshot`` (R125). The stream ends
when the harness closes (batches queued before the seal are still delivered)
or when ``stop()`` is called (pending batches are discarded unless
``stop(drain=True)``).

Usage::

    stream = await watch_events(harness, conversation.id)
    async for batch in stream:
        for event in batch:
            print(json.dumps(event))
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from pi_durable_tui.harness.views._event_translation import snapshot_event, translate
from pi_durable_tui.harness.views._frame_queue import QueuedWatch
from pi_durable_tui.harness.views._view_mount import ViewMount, attach
from pi_durable_tui.kernel import CommitInfo, Session
from pi_durable_tui.storage.json_ops import JsonObject, Op

EventBatch = list[JsonObject]
"""The events of one commit, in R125 order."""


class EventStream(QueuedWatch[EventBatch]):
    """One conversation's agent events, a batch per commit; one consumer iterates it (R125)."""

    def __init__(self, session: Session, mount: ViewMount) -> None:
        super().__init__(mount, self._collapse)
        self._session = session
        self.snapshot: JsonObject = snapshot_event(mount.conversation_id, mount.value)
        """The ``snapshot`` event at attachment (also the first batch)."""
        self._queue.push([self.snapshot])

    @property
    def conversation_id(self) -> int:
        """The conversation the events are about."""
        return self._mount.conversation_id

    def __aiter__(self) -> AsyncIterator[EventBatch]:
        return aiter(self._queue)

    def _collapse(self, _newest: EventBatch) -> EventBatch:
        return [snapshot_event(self._mount.conversation_id, self._mount.value)]

    # -- MountObserver --

    def advanced(
        self, before: JsonObject, after: JsonObject, ops: list[Op], info: CommitInfo
    ) -> None:
        """Translate a commit into its batch of events."""
        now = self._session.clock.now()
        events = translate(self._mount.conversation_id, before, after, info, now)
        if events:
            self._queue.push(events)

    def resynced(self, before: JsonObject, after: JsonObject, seq: int) -> None:
        """A rebuilt view starts over with a snapshot."""
        self._queue.push([snapshot_event(self._mount.conversation_id, after)])


class HasSession(Protocol):
    """What ``watch_events`` needs of a harness."""

    @property
    def session(self) -> Session:
        """The harness's session."""
        ...


async def watch_events(
    harness: HasSession, conversation_id: int, *, tail: int | None = None
) -> EventStream:
    """Attach to one conversation's agent events (R125, experimental in the reference).

    Reading events never starts scheduling (R23).

    Args:
        harness: An open ``Harness``.
        conversation_id: The conversation.
        tail: Entries in the snapshot: ``None`` for the whole active range, or
            the head marker plus the newest ``tail`` entries.

    Returns:
        The stream; its first batch is ``[snapshot]``.

    Raises:
        UnknownConversation: The conversation does not exist.
        HarnessClosed: After ``close()`` began.
        ValueError: A negative or non-integer ``tail``.
    """
    session = harness.session
    return await attach(session, conversation_id, tail, lambda mount: EventStream(session, mount))
