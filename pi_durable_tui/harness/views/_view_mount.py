"""The view mount of a conversation: active entries and built-in documents, kept by commits (R123).

A mount's value is ``{"conversation": <record json>, "entries": [<entry json>...],
"docs": {"<kind>": <value>...}}``:

- ``entries`` are the raw active entries (R71, as ``ContextView.entries``): the
  newest head marker first, then the non-marker entries from its ``head`` on.
  With ``tail=N`` the mount keeps the marker and only the newest ``N`` non-marker
  entries (``older()`` pages the rest), so a 10,000-entry session mounts as fast
  as a short one. The marker stays even when it is older than the tail, because
  it says where the context starts (a compaction summary, a reset) and because
  it lets every later head marker be applied without reading storage (below).
- ``docs`` holds the built-in documents (``pi.agent``, ``pi.provider``,
  ``pi.live``, ``pi.inbox``, ``pi.usage``); absent ones are absent.

``attach`` builds the mount ON THE LINE, inside a commit callback that writes
nothing, and registers for publications in the same callback: no commit can land
between the read and the registration, so none is missed or seen twice. Later
revisions derive from each commit's publication, one batch of operations per
commit that touches the conversation (none for a commit touching nothing
mounted), in the storage operation format (``storage.json_ops``), so a remote
client can replay them with ``apply_ops``:

- a document op on ``[path]`` becomes an op on ``["docs", kind, *path]``; a
  created (or migrated) document is one ``set`` of ``["docs", kind]``, a retired
  one a ``delete``;
- an appended non-marker entry is a splice at the end of ``entries`` (and, past
  the tail, a splice removing the oldest kept one);
- an appended head marker makes the list "marker + kept entries" with one splice
  at 0: the kept entries (``id >= head``) are always a suffix of what the mount
  holds. The one exception is a raw commit whose marker points before the start
  of the current range while the mount holds the whole range: the entries it
  brings back are not in memory, so the mount resyncs: it ignores publications
  until a read on the line rebuilds it, then observers get one root replacement.

A mount ends when its observer detaches or the session closes; publications that
settle during close are never applied (R27).

Values are shared with observers and never mutated after they are handed out
(every revision is a new object along the changed paths): treat them as
read-only and copy before changing them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from pi_durable_tui.harness._errors import HarnessClosed, HarnessError
from pi_durable_tui.harness.state import BUILTIN_DOCS
from pi_durable_tui.kernel import CloseReason, CommitInfo, KernelError, Session, Tx
from pi_durable_tui.storage.json_ops import JsonObject, Op
from pi_durable_tui.storage.records import ConversationRecord

VIEW_DOCS = {definition.kind: definition for definition in BUILTIN_DOCS}
"""The documents a view mounts, by kind (R123)."""

PAGE_SIZE = 256


class UnknownConversation(HarnessError):
    """A view was asked for a conversation that does not exist."""

    def __init__(self, conversation_id: int) -> None:
        super().__init__(f"Conversation {conversation_id} does not exist")
        self.conversation_id = conversation_id


class MountObserver(Protocol):
    """What a mount tells the one view, watch or event stream built on it."""

    def advanced(
        self, before: JsonObject, after: JsonObject, ops: list[Op], info: CommitInfo
    ) -> None:
        """A commit touched the conversation (``ops`` may be empty: tasks or submissions only)."""
        ...

    def resynced(self, before: JsonObject, after: JsonObject, seq: int) -> None:
        """The mount was rebuilt from storage as of ``seq``; ``after`` replaces the value whole."""
        ...

    def ended(self) -> None:
        """The session closed or failed; nothing follows."""
        ...


class ViewMount:
    """One conversation's mounted view, advanced by commit publications.

    Build it with ``attach``. ``value`` is the current revision (read-only).
    """

    def __init__(
        self, session: Session, conversation: ConversationRecord, tail: int | None
    ) -> None:
        self._session = session
        self.conversation_id = conversation.id
        self.tail = tail
        self._conversation = conversation.to_json()
        self._marker: JsonObject | None = None
        self._window: list[JsonObject] = []
        """The non-marker active entries held, ascending (all, or the newest ``tail``)."""
        self._docs: JsonObject = {}
        self._entries: list[JsonObject] = []
        self._value: JsonObject = {}
        self._observer: MountObserver | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._stale = False
        self._resync: asyncio.Task[None] | None = None
        self._ended = False

    @property
    def value(self) -> JsonObject:
        """The current revision: ``{conversation, entries, docs}`` (read-only, shared)."""
        return self._value

    @property
    def ended(self) -> bool:
        """Whether the mount stopped following commits."""
        return self._ended

    # -- reading (on the line) --

    async def load(self) -> None:
        """Read the active range and the documents from committed state (on the line)."""
        storage = self._session.storage
        cid = self.conversation_id
        newest = await storage.scan_entries(cid, order="desc", limit=1)
        marker = None
        window: list[JsonObject] = []
        if newest.items:
            found = await storage.find_latest_head_marker(cid, newest.items[0].entry.id)
            start = found.entry.head if found is not None else None
            marker = found.entry.to_json() if found is not None else None
            if self.tail is None:
                window = await self._scan(start, None, None, "asc")
            else:
                window = list(reversed(await self._scan(start, None, self.tail, "desc")))
        docs: JsonObject = {}
        for kind, definition in VIEW_DOCS.items():
            value = await self._session.snapshot(definition, cid)
            if value is not None:
                docs[kind] = value
        self._marker, self._window, self._docs = marker, window, docs
        self._rebuild(entries_changed=True)

    async def _scan(
        self, start: int | None, before: int | None, limit: int | None, order: Any
    ) -> list[JsonObject]:
        """Non-marker entries with ``start <= id < before``, in ``order``, at most ``limit``."""
        found: list[JsonObject] = []
        cursor: JsonObject | None = None
        while limit is None or len(found) < limit:
            # A tail reads about what it keeps: only head markers make it read more.
            wanted = PAGE_SIZE if limit is None else min(PAGE_SIZE, limit - len(found))
            page = await self._session.storage.scan_entries(
                self.conversation_id,
                min_entry_id=start,
                max_entry_id=None if before is None else before - 1,
                order=order,
                limit=wanted,
                cursor=cursor,
            )
            found.extend(s.entry.to_json() for s in page.items if s.entry.head is None)
            if page.cursor is None:
                break
            cursor = page.cursor
        return found if limit is None else found[:limit]

    async def older(self, before: int, limit: int = 50) -> list[JsonObject]:
        """Return active non-marker entries older than entry ``before``, newest first.

        This pages a tail mount's range backwards: pass the ID of the oldest
        entry held. Entries are immutable, so this reads storage off the line.

        Args:
            before: An entry ID; only entries with a smaller ID are returned.
            limit: The most entries to return.

        Returns:
            Entry JSON objects, newest first (empty at the start of the range).
        """
        start = self._marker.get("head") if self._marker is not None else None
        return await self._scan(start, before, limit, "desc")

    def _rebuild(self, *, entries_changed: bool) -> None:
        if entries_changed:
            # REMINDER: a fresh list per revision; ``_window`` is private and mutated in place.
            marker = [self._marker] if self._marker is not None else []
            self._entries = [*marker, *self._window]
        self._value = {
            "conversation": self._conversation,
            "entries": self._entries,
            "docs": self._docs,
        }

    # -- following commits --

    def start(self, observer: MountObserver) -> None:
        """Register for publications (call on the line, right after ``load``)."""
        self._observer = observer
        self._unsubscribe = self._session.subscribe(self._on_commit)
        self._session.closed.add_done_callback(self._on_closed)

    def detach(self) -> None:
        """Stop following commits (idempotent)."""
        self._ended = True
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._session.closed.remove_done_callback(self._on_closed)

    def _on_closed(self, _future: asyncio.Future[CloseReason]) -> None:
        if not self._ended:
            self.detach()
            if self._observer is not None:
                self._observer.ended()

    def _on_commit(self, info: CommitInfo) -> None:
        # REMINDER: nothing from a commit that settles after the seal of close() (R27).
        if self._ended or self._stale or self._session.closing:
            return
        cid = self.conversation_id
        before = self._value
        ops = self._advance(info)
        if ops is None:
            self._start_resync()
            return
        if not ops and not (
            any(task.conversation_id == cid for task in info.tasks)
            or any(record.conversation_id == cid for record in info.submissions)
        ):
            return
        assert self._observer is not None
        self._observer.advanced(before, self._value, ops, info)

    def _advance(self, info: CommitInfo) -> list[Op] | None:
        """Apply a commit; return its view ops, or ``None`` when a resync is needed."""
        cid = self.conversation_id
        ops: list[Op] = []
        docs = self._docs
        for change in info.documents:
            address = change.address
            definition = VIEW_DOCS.get(address.kind)
            if (
                definition is None
                or address.key is not None
                or address.scope.kind != "conversation"
                or address.scope.id != cid
            ):
                continue
            path: list[str | int] = ["docs", address.kind]
            if docs is self._docs:
                docs = dict(docs)  # a new revision never shares its docs dict with the old one
            if change.retired:
                if docs.pop(address.kind, None) is not None:
                    ops.append({"op": "delete", "path": path})
            elif change.created or address.kind not in docs or change.version != definition.version:
                value = definition.upgrade(change.value, change.version)
                docs[address.kind] = value
                ops.append({"op": "set", "path": path, "value": value})
            else:
                docs[address.kind] = change.value
                ops.extend({**op, "path": [*path, *op["path"]]} for op in change.ops)
        entries_changed = False
        for entry in info.entries:
            if entry.conversation_id != cid:
                continue
            item = entry.to_json()
            if entry.head is None:
                ops.extend(self._append(item))
            else:
                marker_ops = self._place_marker(item, entry.head)
                if marker_ops is None:
                    return None
                ops.extend(marker_ops)
            entries_changed = True
        if docs is not self._docs or entries_changed:
            self._docs = docs
            self._rebuild(entries_changed=entries_changed)
        return ops

    def _offset(self) -> int:
        return 1 if self._marker is not None else 0

    def _append(self, item: JsonObject) -> list[Op]:
        ops = [_splice(self._offset() + len(self._window), 0, [item])]
        self._window.append(item)
        if self.tail is not None and len(self._window) > self.tail:
            drop = len(self._window) - self.tail
            del self._window[:drop]
            ops.append(_splice(self._offset(), drop, []))
        return ops

    def _place_marker(self, item: JsonObject, head: int) -> list[Op] | None:
        holds_all = self.tail is None or len(self._window) < self.tail
        start = self._marker.get("head") if self._marker is not None else None
        if holds_all and start is not None and head < start:
            # REMINDER: only a raw commit can do this (R63 makes such a write stale);
            # the entries it brings back are not in memory.
            return None
        # Kept entries (id >= head) are a suffix of the window; a full tail window
        # already holds the newest ``tail`` of them (see the module docstring).
        kept = [entry for entry in self._window if entry["id"] >= head]
        removed = self._offset() + len(self._window) - len(kept)
        self._marker, self._window = item, kept
        return [_splice(0, removed, [item])]

    def _start_resync(self) -> None:
        self._stale = True
        self._resync = asyncio.ensure_future(self._reload())

    async def _reload(self) -> None:
        async def reread(_tx: Tx) -> None:
            if self._ended:
                return
            before = self._value
            await self.load()
            self._stale = False
            assert self._observer is not None
            self._observer.resynced(before, self._value, self._session.storage.last_seq)

        # The session closing meanwhile ends the mount through ``_on_closed``.
        with contextlib.suppress(KernelError):
            await self._session.commit(reread)


def _splice(index: int, remove: int, insert: list[Any]) -> Op:
    return {"op": "splice", "path": ["entries"], "index": index, "remove": remove, "insert": insert}


ObserverT = TypeVar("ObserverT", bound=MountObserver)


def check_tail(tail: int | None) -> None:
    """Reject a tail that is not ``None`` or a non-negative integer.

    Raises:
        ValueError: Naming the bad value and what to pass instead.
    """
    if tail is not None and (isinstance(tail, bool) or not isinstance(tail, int) or tail < 0):
        raise ValueError(
            f"tail must be None (every active entry) or a number of entries >= 0, got {tail!r}"
        )


async def attach(
    session: Session,
    conversation_id: int,
    tail: int | None,
    create: Callable[[ViewMount], ObserverT],
) -> ObserverT:
    """Mount a conversation's view on the line and register ``create(mount)`` as its observer.

    Args:
        session: The harness's session.
        conversation_id: The conversation.
        tail: ``None`` for every active entry, or how many non-marker entries to keep.
        create: Builds the observer from the loaded mount (called on the line).

    Returns:
        The observer, registered for every commit after the mount and none before.

    Raises:
        ValueError: A bad ``tail``.
        UnknownConversation: The conversation does not exist.
        HarnessClosed: After ``close()`` began.
    """
    check_tail(tail)
    if session.closing:
        raise HarnessClosed()

    async def mount(tx: Tx) -> ObserverT:
        conversation = await tx.conversation(conversation_id)
        if conversation is None:
            raise UnknownConversation(conversation_id)
        view = ViewMount(session, conversation, tail)
        await view.load()
        observer = create(view)
        view.start(observer)
        return observer

    return await session.commit(mount)
