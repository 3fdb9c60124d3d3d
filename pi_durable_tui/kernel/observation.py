"""Document states and watches: committed values for observers (R2, R9, R124).

- ``DocumentState`` follows an address: its ``value`` is the committed value (or
  ``None`` while absent), and subscribers get ``(value, ops)`` synchronously as each
  commit publishes. Acquiring a state never creates a document.
- ``DocumentWatch`` is bound to one incarnation. It starts from the value current
  at acquisition (a late joiner replays nothing) and yields one ``WatchFrame`` per
  commit that changed it, in order. Commits never wait for a watcher: at most
  ``MAX_PENDING_FRAMES`` (100) undelivered frames are kept, and the next one
  replaces the whole undelivered suffix with a single frame that sets the root to
  the newest value. A retired document ends the watch after a final frame whose
  value is ``None``.

Values handed out are copies; the kernel's committed values are never exposed.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pi_durable_tui.kernel.documents import DocDefinition
from pi_durable_tui.kernel.publication import CommitInfo
from pi_durable_tui.storage.json_ops import JsonObject, Op, copy_json
from pi_durable_tui.storage.records import DocAddress, DocumentRecord

if TYPE_CHECKING:
    from pi_durable_tui.kernel.session import Session

MAX_PENDING_FRAMES = 100
EndReason = Literal["stopped", "session_closed", "retired", "listener_error"]
StateListener = Callable[[JsonObject | None, list[Op]], None]


@dataclass(frozen=True, slots=True)
class WatchFrame:
    """One committed change: the document's value after it and the operations that made it."""

    value: JsonObject | None
    ops: list[Op]
    seq: int


class DocumentState:
    """The committed value of the document at one address, kept current by publications."""

    def __init__(self, owner: Observation, definition: DocDefinition, address: DocAddress) -> None:
        self._owner = owner
        self._definition = definition
        self.address = address
        self._value: JsonObject | None = None
        self._listeners: dict[int, StateListener] = {}
        self._next = 0
        self.ended = False

    @property
    def value(self) -> JsonObject | None:
        """A copy of the committed value, or ``None`` while the document is absent."""
        return None if self._value is None else copy_json(self._value)  # type: ignore[return-value]

    def subscribe(self, listener: StateListener) -> Callable[[], None]:
        """Call ``listener(value, ops)`` after each commit that changes the document.

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

    def set(self, value: JsonObject | None) -> None:
        """Adopt the value at acquisition time."""
        self._value = value

    def apply(self, value: JsonObject | None, ops: list[Op], version: int) -> None:
        """Adopt a committed change and notify subscribers."""
        if value is not None and version != self._definition.version:
            value = self._definition.upgrade(value, version)
            ops = [{"op": "set", "path": [], "value": value}]
        self._value = value
        for listener in list(self._listeners.values()):
            listener(None if value is None else copy_json(value), copy_json(ops))  # type: ignore[arg-type]


class DocumentWatch:
    """A bounded, ordered stream of one document incarnation's committed changes.

    Iterate it (``async for frame in watch``) or ``start(listener)``; ``stop()``
    ends it. ``ended`` resolves with the end reason.
    """

    def __init__(self, owner: Observation, record: DocumentRecord, value: JsonObject) -> None:
        self._owner = owner
        self.record = record
        self._value: JsonObject | None = value
        self._pending: deque[WatchFrame] = deque()
        self._wake = asyncio.Event()
        self.ended: asyncio.Future[EndReason] = asyncio.get_running_loop().create_future()
        self._runner: asyncio.Task[None] | None = None
        self.error: BaseException | None = None

    @property
    def value(self) -> JsonObject | None:
        """A copy of the value as of the newest frame delivered (or acquisition)."""
        return None if self._value is None else copy_json(self._value)  # type: ignore[return-value]

    @property
    def pending(self) -> int:
        """Frames waiting to be delivered."""
        return len(self._pending)

    def push(self, frame: WatchFrame) -> None:
        """Queue a frame; past the bound, collapse the backlog into one root frame."""
        if self.ended.done():
            return
        if len(self._pending) >= MAX_PENDING_FRAMES:
            self._pending.clear()
            root: Op = {"op": "set", "path": [], "value": frame.value}
            frame = WatchFrame(frame.value, [root], frame.seq)
        self._pending.append(frame)
        self._wake.set()

    def end(self, reason: EndReason) -> None:
        """End the watch (pending frames are discarded, except a retirement's final frame)."""
        if self.ended.done():
            return
        if reason != "retired":
            self._pending.clear()
        self.ended.set_result(reason)
        self._owner.unwatch(self)
        self._wake.set()

    def __aiter__(self) -> AsyncIterator[WatchFrame]:
        return self._frames()

    async def _frames(self) -> AsyncIterator[WatchFrame]:
        while True:
            if self._pending:
                frame = self._pending.popleft()
                self._value = frame.value
                yield WatchFrame(
                    None if frame.value is None else copy_json(frame.value),  # type: ignore[arg-type]
                    copy_json(frame.ops),  # type: ignore[arg-type]
                    frame.seq,
                )
                continue
            if self.ended.done():
                return
            self._wake.clear()
            await self._wake.wait()

    def start(self, listener: Callable[[WatchFrame], object | Awaitable[object]]) -> None:
        """Deliver frames to ``listener`` one at a time in a background task.

        A listener that raises ends the watch with ``listener_error`` (``error`` holds it).
        """

        async def run() -> None:
            async for frame in self:
                try:
                    result = listener(frame)
                    if inspect.isawaitable(result):
                        await result
                except Exception as error:
                    self.error = error
                    self.end("listener_error")
                    return

        self._runner = asyncio.ensure_future(run())

    async def stop(self) -> EndReason:
        """Stop the watch (idempotent) and return its end reason.

        Unregisters at once and discards pending frames; a running listener call
        is not interrupted.
        """
        self.end("stopped")
        return await self.ended


class Observation:
    """Registers states and watches and feeds them from commit publications."""

    def __init__(self, session: Session) -> None:
        self._states: dict[DocAddress, DocumentState] = {}
        self._watches: dict[int, set[DocumentWatch]] = {}
        self._ended: EndReason | None = None
        session.subscribe(self._on_commit)

    def state(
        self, definition: DocDefinition, address: DocAddress, value: JsonObject | None
    ) -> DocumentState:
        """Return a state for an address, registered from the value current now."""
        state = self._states.get(address)
        if state is None or state.ended:
            state = DocumentState(self, definition, address)
            self._states[address] = state
        state.set(None if value is None else copy_json(value))  # type: ignore[arg-type]
        if self._ended is not None:
            state.ended = True
        return state

    def pin(self, state: DocumentState) -> None:
        """Keep a subscribed state registered."""
        self._states[state.address] = state

    def unpin(self, state: DocumentState) -> None:
        """Forget a state nobody listens to."""
        if self._states.get(state.address) is state:
            del self._states[state.address]

    def watch(
        self, definition: DocDefinition, record: DocumentRecord, value: JsonObject
    ) -> DocumentWatch:
        """Return a new watch of an incarnation, registered from the value current now."""
        watch = DocumentWatch(self, record, copy_json(value))  # type: ignore[arg-type]
        if self._ended is not None:
            watch.end(self._ended)
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

    def _on_commit(self, info: CommitInfo) -> None:
        if self._ended is not None:
            return  # states keep their last value; nothing after the seal (R27)
        for change in info.documents:
            state = self._states.get(change.address)
            if state is not None:
                if change.retired:
                    state.apply(None, [{"op": "set", "path": [], "value": None}], change.version)
                else:
                    state.apply(change.value, change.ops, change.version)
            for watch in list(self._watches.get(change.record.id, ())):
                if change.ops:
                    watch.push(WatchFrame(change.value, change.ops, info.seq))
                if change.retired:
                    watch.push(
                        WatchFrame(None, [{"op": "set", "path": [], "value": None}], info.seq)
                    )
                    watch.end("retired")

    def session_ended(self, reason: EndReason) -> None:
        """End every watch and freeze every state: they keep their last value."""
        self._ended = reason
        for watches in list(self._watches.values()):
            for watch in list(watches):
                watch.end(reason)
        for state in self._states.values():
            state.ended = True
