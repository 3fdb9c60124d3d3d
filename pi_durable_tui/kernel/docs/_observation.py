"""Document states and watches: committed values for observers (R2, R9, R27, R124).

Both are fed by commit publications only, so they never see an uncommitted value.
Acquiring either never creates a document; the Session registers them on the
line, between two publications, so none is missed or seen twice.

- ``DocumentState`` follows an address: ``value`` is the committed value (or
  ``None`` while absent), kept current for as long as the state is referenced,
  and subscribers get ``(value, ops)`` synchronously as each commit publishes. A
  subscriber that raises is dropped and reported; it disturbs no other observer.
- ``DocumentWatch`` is bound to one incarnation and never follows a re-created
  one. It starts from the value current at acquisition (a late joiner replays
  nothing) and yields one ``WatchFrame`` per commit that changed it, in order.
  Commits never wait for a watcher: at most ``MAX_PENDING_FRAMES`` (100)
  undelivered frames are kept (not counting the one being delivered), and the
  next one replaces the whole undelivered suffix with a single frame that sets
  the root to the newest value; later frames follow normally.

A watch ends with a reason, which ``ended`` resolves to and ``stop()`` returns:

- ``stopped``: ``stop()`` (idempotent): unregisters at once and discards pending
  frames, without interrupting a listener call in progress;
- ``retired``: the incarnation was retired; ``ended`` resolves once the frames
  up to and including a final frame with value ``None`` are delivered;
- ``listener_error``: the ``start()`` listener raised (``error`` holds it);
  pending frames are discarded;
- ``cancelled``: the task running the ``start()`` listener was cancelled;
- ``session_closed``: the Session closed or failed. States stop changing at the
  same moment and keep their last value (R27).

The first reason wins. Values handed out are copies; the kernel's committed
values are never exposed.
"""

from __future__ import annotations

import asyncio
import inspect
import weakref
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from pi_durable_tui.kernel.docs._definitions import DocDefinition
from pi_durable_tui.kernel.docs._drafts import DocChange
from pi_durable_tui.storage.json_ops import JsonObject, Op, copy_json
from pi_durable_tui.storage.records import DocAddress, DocumentRecord

MAX_PENDING_FRAMES = 100
"""Undelivered frames a watch keeps before the backlog collapses into one root frame."""
EndReason = Literal["stopped", "cancelled", "session_closed", "retired", "listener_error"]
StateListener = Callable[[JsonObject | None, list[Op]], None]
ObserverFailed = Callable[[BaseException, str], None]
"""Receives an observer's exception and who raised it; the Session reports it."""
_ROOT_NONE: Op = {"op": "set", "path": [], "value": None}


@dataclass(frozen=True, slots=True)
class WatchFrame:
    """One committed change: the document's value after it and the operations that made it."""

    value: JsonObject | None
    ops: list[Op]
    seq: int


def _copy(value: JsonObject | None) -> JsonObject | None:
    return None if value is None else copy_json(value)  # type: ignore[return-value]


class DocumentState:
    """The committed value of the document at one address, kept current by publications."""

    def __init__(
        self,
        owner: Observation,
        definition: DocDefinition,
        address: DocAddress,
        value: JsonObject | None,
    ) -> None:
        self._owner = owner
        self._definition = definition
        self.address = address
        self._value = value
        self._listeners: dict[int, StateListener] = {}
        self._next = 0
        self.ended = False

    @property
    def value(self) -> JsonObject | None:
        """A copy of the committed value, or ``None`` while the document is absent."""
        return _copy(self._value)

    def subscribe(self, listener: StateListener) -> Callable[[], None]:
        """Call ``listener(value, ops)`` after each commit that changes the document.

        A listener that raises is unsubscribed and reported.

        Returns:
            A function that unsubscribes (idempotent).
        """
        key = self._next
        self._next += 1
        self._listeners[key] = listener
        self._owner.pin(self)

        def unsubscribe() -> None:
            self._listeners.pop(key, None)
            if not self._listeners:
                self._owner.unpin(self)

        return unsubscribe

    def _apply(self, change: DocChange) -> None:
        """Adopt a committed change and notify subscribers."""
        if self.ended:
            return
        value: JsonObject | None
        if change.retired:
            value, ops = None, [_ROOT_NONE]
        elif change.version != self._definition.version:
            try:
                value = self._definition.upgrade(change.value, change.version)
            except Exception as error:  # another definition wrote a version this one cannot read
                self._owner.report(error, f"Document state of {self.address.kind}")
                return
            ops = [{"op": "set", "path": [], "value": value}]
        else:
            value, ops = change.value, change.ops
        self._value = value
        for key, listener in list(self._listeners.items()):
            try:
                listener(_copy(value), copy_json(ops))  # type: ignore[arg-type]
            except Exception as error:  # REMINDER: one bad subscriber must not stop the others.
                self._listeners.pop(key, None)
                self._owner.report(error, f"A subscriber of {self.address.kind}")
        if not self._listeners:
            self._owner.unpin(self)


class DocumentWatch:
    """A bounded, ordered stream of one document incarnation's committed changes.

    Iterate it (``async for frame in watch``) or ``start(listener)``; ``stop()``
    ends it. ``ended`` resolves with the end reason (see the module docstring).
    """

    def __init__(self, owner: Observation, record: DocumentRecord, value: JsonObject) -> None:
        self._owner = owner
        self.record = record
        self._value: JsonObject | None = value
        self._pending: deque[WatchFrame] = deque()
        self._wake = asyncio.Event()
        self._reason: EndReason | None = None
        self.ended: asyncio.Future[EndReason] = asyncio.get_running_loop().create_future()
        self._runner: asyncio.Task[None] | None = None
        self.error: BaseException | None = None

    @property
    def value(self) -> JsonObject | None:
        """A copy of the value as of the newest frame delivered (or acquisition)."""
        return _copy(self._value)

    @property
    def pending(self) -> int:
        """Frames waiting to be delivered."""
        return len(self._pending)

    def _push(self, frame: WatchFrame) -> None:
        """Queue a frame; past the bound, collapse the backlog into one root frame."""
        if self._reason is not None:
            return
        if len(self._pending) >= MAX_PENDING_FRAMES:
            self._pending.clear()
            root: Op = {"op": "set", "path": [], "value": frame.value}
            frame = WatchFrame(frame.value, [root], frame.seq)
        self._pending.append(frame)
        self._wake.set()

    def _end(self, reason: EndReason) -> None:
        """End the watch: unregister it, and discard pending frames unless it was retired."""
        if self._reason is None:
            self._reason = reason
            self._owner.unwatch(self)
        if reason != "retired":
            self._pending.clear()
        if not self._pending:
            self._resolve()
        self._wake.set()

    def _resolve(self) -> None:
        if not self.ended.done():
            assert self._reason is not None
            self.ended.set_result(self._reason)

    def __aiter__(self) -> AsyncIterator[WatchFrame]:
        return self._frames()

    async def _frames(self) -> AsyncIterator[WatchFrame]:
        while True:
            if self._pending:
                frame = self._pending.popleft()
                self._value = frame.value  # advances just before the frame is handed out
                yield WatchFrame(_copy(frame.value), copy_json(frame.ops), frame.seq)  # type: ignore[arg-type]
                continue
            if self._reason is not None:
                self._resolve()
                return
            self._wake.clear()
            await self._wake.wait()

    def start(self, listener: Callable[[WatchFrame], object | Awaitable[object]]) -> None:
        """Deliver frames to ``listener`` one at a time in a background task.

        Raises:
            RuntimeError: When the watch was already started.
        """
        if self._runner is not None:
            raise RuntimeError("Watch already started")
        self._runner = asyncio.ensure_future(self._run(listener))

    async def _run(self, listener: Callable[[WatchFrame], object | Awaitable[object]]) -> None:
        try:
            async for frame in self:
                try:
                    result = listener(frame)
                    if inspect.isawaitable(result):
                        await result
                except Exception as error:
                    self.error = error
                    self._end("listener_error")
                    return
        except asyncio.CancelledError:
            self._end("cancelled")
            raise

    async def stop(self) -> EndReason:
        """Stop the watch (idempotent) and return its end reason.

        Unregisters at once and discards pending frames; a running listener call
        is not interrupted.
        """
        self._end("stopped")
        return await self.ended


class Observation:
    """Registers states and watches and feeds them from commit publications.

    Args:
        on_error: Receives the exception of an observer that raised, and who it was.
    """

    def __init__(self, on_error: ObserverFailed) -> None:
        self._on_error = on_error
        self._states: dict[DocAddress, weakref.WeakSet[DocumentState]] = {}
        """Every state in use, by address; a state nobody references goes away."""
        self._pinned: set[DocumentState] = set()
        """States with subscribers, kept alive by their subscriptions."""
        self._watches: dict[int, set[DocumentWatch]] = {}
        self._ended: EndReason | None = None

    def report(self, error: BaseException, who: str) -> None:
        """Report an observer's failure (it never fails a commit)."""
        self._on_error(error, who)

    def state(
        self, definition: DocDefinition, address: DocAddress, value: JsonObject | None
    ) -> DocumentState:
        """Return a new state for an address, registered from the value current now."""
        state = DocumentState(self, definition, address, _copy(value))
        if self._ended is not None:
            state.ended = True
        else:
            self._states.setdefault(address, weakref.WeakSet()).add(state)
        return state

    def pin(self, state: DocumentState) -> None:
        """Keep a subscribed state alive."""
        if not state.ended:
            self._pinned.add(state)

    def unpin(self, state: DocumentState) -> None:
        """Let a state without subscribers go when nobody references it."""
        self._pinned.discard(state)

    def watch(self, record: DocumentRecord, value: JsonObject) -> DocumentWatch:
        """Return a new watch of an incarnation, registered from the value current now."""
        watch = DocumentWatch(self, record, _copy(value))  # type: ignore[arg-type]
        if self._ended is not None:
            watch._end(self._ended)
        else:
            self._watches.setdefault(record.id, set()).add(watch)
        return watch

    def unwatch(self, watch: DocumentWatch) -> None:
        """Unregister a watch."""
        watches = self._watches.get(watch.record.id)
        if watches is not None:
            watches.discard(watch)
            if not watches:
                del self._watches[watch.record.id]

    def publish(self, seq: int, changes: Iterable[DocChange]) -> None:
        """Feed a published commit's document changes to the states and watches they concern."""
        if self._ended is not None:
            return  # states keep their last value; nothing after the seal (R27)
        for change in changes:
            states = self._states.get(change.address)
            if states is not None:
                for state in list(states):
                    state._apply(change)
                if not states:
                    del self._states[change.address]
            for watch in list(self._watches.get(change.record.id, ())):
                if change.ops:
                    watch._push(WatchFrame(change.value, change.ops, seq))
                if change.retired:
                    watch._push(WatchFrame(None, [_ROOT_NONE], seq))
                    watch._end("retired")

    def session_ended(self, reason: EndReason) -> None:
        """End every watch and freeze every state: they keep their last value."""
        if self._ended is not None:
            return
        self._ended = reason
        for watches in list(self._watches.values()):
            for watch in list(watches):
                watch._end(reason)
        for states in self._states.values():
            for state in states:
                state.ended = True
        self._states.clear()
        self._pinned.clear()
