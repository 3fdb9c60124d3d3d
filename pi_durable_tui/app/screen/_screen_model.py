"""``LiveScreenModel``: the shown conversation and the session, as the screen renders it.

Built on committed state only (issue 8, "the rule of the screen"): it mounts the
newest page of the shown conversation's entries and its documents ON THE LINE (in
a commit callback that writes nothing, subscribing before the line moves on, so no
commit is missed), then follows commit publications. One commit becomes at most
one ``ViewChange``: blocks appended, cards changed, the queue, the footer, the
status line, the task tree. Older entries are paged in on demand (``load_older``),
so a 10,000-entry session mounts as fast as a short one.

It does not use ``Conversation.view_state`` (R123): that view holds the ACTIVE
entries (a compaction or a reset drops what it summarized), while the transcript
keeps showing the history above a compaction; and one commit's publication gives
everything the screen needs at once (entries, documents, submissions for the
notices, tasks for the tree), where a view would need a second subscription.
Both mount on the line and read one page, so neither is faster.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pi_durable_tui.app._view import (
    ApprovalQuestion,
    Block,
    Footer,
    Notice,
    NoticeLevel,
    QueueItem,
    TaskNode,
    TrustQuestion,
    ViewChange,
)
from pi_durable_tui.app.screen._blocks import (
    apply_result,
    entry_blocks,
    entry_message,
    live_blocks,
    status_line,
    visible,
)
from pi_durable_tui.app.screen._names import conversation_label, conversation_title
from pi_durable_tui.app.screen._permission_view import approval_question, chosen_mode
from pi_durable_tui.app.screen._task_tree import TaskTree
from pi_durable_tui.harness import AGENT_DOC, INBOX_DOC, LIVE_DOC, PERMISSIONS_DOC, USAGE_DOC
from pi_durable_tui.kernel import CommitInfo, Tx
from pi_durable_tui.storage import EntryRecord, JsonObject

if TYPE_CHECKING:
    from pi_durable_tui.app.agent import AgentApp

PAGE = 60
"""Entries mounted at first, and paged in per ``load_older``."""
NOTICES_KEPT = 20


def _usage_total(ledger: Mapping[str, Any] | None) -> dict[str, float]:
    totals = {"input": 0.0, "output": 0.0, "cache_read": 0.0, "cache_write": 0.0, "cost": 0.0}
    for section in ("models", "tools"):
        for usage in ((ledger or {}).get(section) or {}).values():
            for key in ("input", "output", "cache_read", "cache_write"):
                totals[key] += float(usage.get(key) or 0)
            totals["cost"] += float((usage.get("cost") or {}).get("total") or 0)
    return totals


def _context_tokens(message: Mapping[str, Any]) -> int | None:
    usage = message.get("usage") if isinstance(message.get("usage"), dict) else None
    if not usage:
        return None
    total = int(usage.get("total_tokens") or 0)
    if total <= 0:
        total = sum(
            int(usage.get(k) or 0) for k in ("input", "output", "cache_read", "cache_write")
        )
    return total or None


class LiveScreenModel:
    """The ``ScreenModel`` of an open ``AgentApp`` (see the module docstring).

    Args:
        app: The open session.
        verbose: Show system-prompt changes as blocks.
    """

    def __init__(self, app: AgentApp, *, verbose: bool = False) -> None:
        self._app = app
        self._verbose = verbose
        self.conversation_id = app.root.id
        self._stored: list[Block] = []
        self._live: list[Block] = []
        self._cards: dict[str, str] = {}  # call ID -> block key (the newest card of that call)
        self._index: dict[str, int] = {}
        self._oldest: int | None = None
        self._has_older = False
        self._queue: tuple[QueueItem, ...] = ()
        self._footer = Footer(cwd=app.where(app.workspace))
        self._status = ""
        self._busy = False
        self._live_doc: dict[str, Any] = {}
        self._agent: JsonObject = {}
        self._label = "main"
        self._usage: JsonObject = {}
        self._chosen_mode: str | None = None  # the session's mode (F4) in ``pi.permissions``
        self._settings_mode = ""  # the settings' mode, read at mount and each settings check
        self._unplaced_results: dict[str, EntryRecord] = {}
        self._notices: list[Notice] = []
        self._notice_id = 0
        self._context_tokens: int | None = None
        self._listeners: list[Callable[[ViewChange], None]] = []
        self._unsubscribe: Callable[[], None] | None = None
        self._tree = self._new_tree()
        self._ticker: asyncio.Task[None] | None = None
        self._resumed = 0
        self.watched: set[int] = set()
        """Submissions sent from this screen or open when a conversation was shown: their
        ``unanswered`` settlements become notices."""

    # -- ScreenModel --

    @property
    def blocks(self) -> Sequence[Block]:
        """The loaded transcript, oldest first, then what streams."""
        return [*self._stored, *self._live]

    @property
    def has_older(self) -> bool:
        """Whether entries exist before the loaded ones."""
        return self._has_older

    @property
    def queue(self) -> Sequence[QueueItem]:
        """The shown conversation's inbox."""
        return self._queue

    @property
    def tasks(self) -> Sequence[TaskNode]:
        """The live task tree of the session."""
        return self._tree.nodes

    @property
    def footer(self) -> Footer:
        """Spend, context use, cwd, model and thinking level."""
        return self._footer

    @property
    def status(self) -> str:
        """The status line."""
        return self._status

    @property
    def busy(self) -> bool:
        """Whether the shown conversation runs."""
        return self._busy

    @property
    def notices(self) -> Sequence[Notice]:
        """The newest notices."""
        return tuple(self._notices[-4:])

    @property
    def trust_question(self) -> TrustQuestion | None:
        """The project settings content that waits for the user's trust (issue 13)."""
        request = self._app.settings.waiting
        if request is None:
            return None
        return TrustQuestion(
            request.digest, request.question(), request.shown_values(), request.heading()
        )

    @property
    def approval(self) -> ApprovalQuestion | None:
        """The oldest call of the shown conversation waiting for a decision (issue 13)."""
        return approval_question(self._live_doc)

    def trust_changed(self) -> None:
        """Announce that the trust question appeared or was answered."""
        self._emit(ViewChange(trust=True))

    def block(self, key: str) -> Block | None:
        """The loaded block with this key."""
        index = self._index.get(key)
        if index is not None:
            return self._stored[index]
        return next((b for b in self._live if b.key == key), None)

    def subscribe(self, listener: Callable[[ViewChange], None]) -> Callable[[], None]:
        """Call ``listener`` after each change; returns the unsubscribe function."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def show_recovery(self, lines: Sequence[str]) -> None:
        """Append the recovery report as a ``resumed`` separator block (issue 8)."""
        if not lines:
            return
        self._resumed += 1
        block = Block(f"resumed/{self._resumed}", "resumed", None, text="\n".join(lines))
        self._index[block.key] = len(self._stored)
        self._stored.append(block)
        self._emit(ViewChange(blocks_added=(block.key,)))

    def rebind(self, app: AgentApp) -> None:
        """Follow another open session (after ``/new`` or ``/resume``); ``attach`` next."""
        self.detach()
        self._app = app
        self._tree = self._new_tree()
        self.watched.clear()

    def _new_tree(self) -> TaskTree:
        app = self._app
        return TaskTree(
            app.harness.session, app.root.id, lambda: self._emit(ViewChange(tasks=True))
        )

    # -- mounting --

    async def attach(self, conversation_id: int) -> None:
        """Show a conversation: mount its newest page and documents on the line.

        Raises:
            ValueError: The conversation does not exist.
        """
        self.detach()
        session = self._app.harness.session
        storage = session.storage
        root = conversation_id == self._app.root.id  # "main" needs no words
        title = "" if root else await conversation_title(storage, conversation_id)

        async def mount(tx: Tx) -> None:
            record = await tx.conversation(conversation_id)
            if record is None:
                raise ValueError(f"Conversation {conversation_id} does not exist")
            page = await storage.scan_entries(conversation_id, order="desc", limit=PAGE + 1)
            docs = {
                definition.kind: await session.snapshot(definition, conversation_id) or {}
                for definition in (LIVE_DOC, INBOX_DOC, USAGE_DOC, AGENT_DOC)
            }
            chosen = await session.snapshot(PERMISSIONS_DOC) or {}
            # Open submissions are watched like those sent from this screen: a turn a
            # killed process left, resumed after --continue, must not fail silently.
            pending = await storage.scan_submissions(
                conversation_id=conversation_id, status=("queued", "placed"), limit=PAGE
            )
            self.watched.update(submission.id for submission in pending.items)
            # REMINDER: from here on nothing awaits: the state is rebuilt and the model
            # subscribed while this commit holds the line, so no later commit can be
            # published before the mount (it would be lost) or applied to the old one.
            self.conversation_id = conversation_id
            owned = record.owner is not None
            self._label = conversation_label(record.id, owned, self._app.root.id, title)
            entries = [stored.entry for stored in page.items]
            self._chosen_mode = chosen_mode(chosen)
            self._settings_mode = self._read_settings_mode()
            self._mount(entries, docs)
            self._unsubscribe = session.subscribe(self._on_commit)

        await session.commit(mount)
        self._tree.schedule()
        self._emit(
            ViewChange(transcript_reset=True, queue=True, footer=True, status=True, tasks=True)
        )

    def _mount(self, newest_first: list[EntryRecord], docs: Mapping[str, Any]) -> None:
        self._has_older = len(newest_first) > PAGE
        entries = list(reversed(newest_first[:PAGE]))
        self._stored, self._index, self._cards, self._live = [], {}, {}, []
        self._unplaced_results = {}
        self._context_tokens = None
        self._oldest = entries[0].id if entries else None
        self._append_entries(entries, [])
        self._apply_docs(docs)
        self._refresh_live([], [])

    def detach(self) -> None:
        """Stop following commits."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    async def load_older(self, count: int) -> int:
        """Page in up to ``count`` entries before the loaded ones; returns blocks prepended."""
        if not self._has_older or self._oldest is None:
            return 0
        page = await self._app.harness.session.storage.scan_entries(
            self.conversation_id, max_entry_id=self._oldest - 1, order="desc", limit=count + 1
        )
        entries = [stored.entry for stored in page.items]
        self._has_older = len(entries) > count
        entries = list(reversed(entries[:count]))
        if not entries:
            return 0
        self._oldest = entries[0].id
        older: list[Block] = []
        cards: dict[str, int] = {}
        for entry in entries:
            if entry.kind == "pi.tool-result":
                call = str(entry_message(entry).get("tool_call_id", ""))
                if call in cards:
                    index = cards.pop(call)
                    older[index] = _with_result(older[index], entry)
                continue
            for block in visible(entry_blocks(entry), self._verbose):
                if block.tool is not None:
                    cards[block.tool.call_id] = len(older)
                older.append(block)
        # A call at the end of this page may have its result in the page loaded before.
        for call, index in cards.items():
            result = self._unplaced_results.pop(call, None)
            if result is not None:
                older[index] = _with_result(older[index], result)
        self._stored = older + self._stored
        self._reindex()
        self._emit(ViewChange(older_loaded=len(older)))
        return len(older)

    # -- following commits --

    def _on_commit(self, info: CommitInfo) -> None:
        conversation = self.conversation_id
        entries = [e for e in info.entries if e.conversation_id == conversation]
        docs = {
            change.address.kind: change.value
            for change in info.documents
            if change.address.scope.kind == "conversation"
            and change.address.scope.id == conversation
        }
        added: list[str] = []
        changed: list[str] = []
        footer = bool(entries) and self._append_entries(entries, changed, added)
        waiting = approval_question(self._live_doc)
        flags = self._apply_docs(docs) if docs else {}
        for doc in info.documents:
            if doc.address.kind == PERMISSIONS_DOC.kind and doc.address.scope.kind == "session":
                self._chosen_mode = chosen_mode(doc.value)
                flags["footer"] = self._update_footer() or flags.get("footer", False)
        removed: list[str] = []
        status = False
        if entries or LIVE_DOC.kind in docs:
            removed, status = self._refresh_live(added, changed)
        notices = self._settled(info)
        if info.tasks:
            self._tree.schedule()
        fresh = set(added)
        change = ViewChange(
            blocks_added=tuple(added),
            blocks_changed=tuple(key for key in dict.fromkeys(changed) if key not in fresh),
            blocks_removed=tuple(removed),
            queue=flags.get("queue", False),
            footer=footer or flags.get("footer", False),
            status=status,
            notices=notices,
            approval=approval_question(self._live_doc) != waiting,
        )
        if change != ViewChange():
            self._emit(change)

    def _settled(self, info: CommitInfo) -> bool:
        """Notice the watched submissions this commit left unanswered (reference 5.3)."""
        noticed = False
        for record in info.submissions:
            if record.id in self.watched and record.status in ("done", "unanswered"):
                self.watched.discard(record.id)
                if record.status == "unanswered" and record.reason != "aborted":
                    detail = f" {json.dumps(record.detail)}" if record.detail is not None else ""
                    self.add_notice("error", f"No answer: {record.reason}{detail}", emit=False)
                    noticed = True
        return noticed

    def _append_entries(
        self, entries: Sequence[EntryRecord], changed: list[str], added: list[str] | None = None
    ) -> bool:
        """Append the blocks of new entries; returns whether the footer changed."""
        context = self._context_tokens
        for entry in entries:
            if entry.kind == "pi.tool-result":
                call = str(entry_message(entry).get("tool_call_id", ""))
                key = self._cards.get(call)
                index = self._index.get(key) if key is not None else None
                if index is None:
                    # REMINDER: its call may be on a page not loaded yet (load_older).
                    self._unplaced_results[call] = entry
                    continue
                self._stored[index] = _with_result(self._stored[index], entry)
                changed.append(self._stored[index].key)
                continue
            if entry.kind == "pi.assistant":
                message = entry_message(entry)
                if message.get("stop_reason") not in ("error", "aborted"):
                    self._context_tokens = _context_tokens(message) or self._context_tokens
            elif entry.kind in ("pi.compaction", "pi.reset"):
                self._context_tokens = None
            for block in visible(entry_blocks(entry), self._verbose):
                self._index[block.key] = len(self._stored)
                self._stored.append(block)
                if block.tool is not None:
                    self._cards[block.tool.call_id] = block.key
                if added is not None:
                    added.append(block.key)
        if context == self._context_tokens:
            return False
        self._update_footer()
        return True

    def _loaded_card(self, call_id: str) -> Block | None:
        key = self._cards.get(call_id)
        index = self._index.get(key) if key is not None else None
        return self._stored[index] if index is not None else None

    def _refresh_live(self, added: list[str], changed: list[str]) -> tuple[list[str], bool]:
        """Recompute the streaming blocks and running cards.

        Returns:
            ``(live keys removed, whether the status line or busy changed)``.
        """
        live, updated = live_blocks(self._live_doc, self._loaded_card)
        for key, block in updated.items():
            self._stored[self._index[key]] = block
            changed.append(key)
        old = {b.key: b for b in self._live}
        if added:
            # Stored blocks were appended after the live ones: re-add live blocks at the end.
            removed = list(old)
        else:
            removed = [key for key in old if key not in {b.key for b in live}]
        for block in live:
            if block.key in old and block.key not in removed:
                if old[block.key] != block:
                    changed.append(block.key)
            else:
                added.append(block.key)
        self._live = live
        status = status_line(self._live_doc, self._app.harness.session.clock.now())
        busy = "run" in self._live_doc
        moved = (status, busy) != (self._status, self._busy)
        self._status, self._busy = status, busy
        self._tick_while_retrying()
        return removed, moved

    def _apply_docs(self, docs: Mapping[str, Any]) -> dict[str, bool]:
        flags: dict[str, bool] = {}
        if LIVE_DOC.kind in docs:
            self._live_doc = dict(docs[LIVE_DOC.kind] or {})
        if INBOX_DOC.kind in docs:
            items = (docs[INBOX_DOC.kind] or {}).get("items") or []
            self._queue = tuple(_queue_item(item) for item in items if isinstance(item, dict))
            flags["queue"] = True
        if USAGE_DOC.kind in docs or AGENT_DOC.kind in docs:
            if USAGE_DOC.kind in docs:
                self._usage = docs[USAGE_DOC.kind] or {}
            if AGENT_DOC.kind in docs:
                self._agent = docs[AGENT_DOC.kind] or {}
            self._update_footer()
            flags["footer"] = True
        return flags

    def permissions_changed(self) -> None:
        """Show the mode in force again (the settings' ``permission_mode`` may have changed)."""
        self._settings_mode = self._read_settings_mode()
        if self._update_footer():
            self._emit(ViewChange(footer=True))

    def _read_settings_mode(self) -> str:
        with contextlib.suppress(Exception):  # a malformed settings file is reported elsewhere
            return self._app.settings.harness().permissions.mode
        return self._settings_mode

    def _permission_mode(self) -> str:
        """The mode in force: the session's choice (F4), else the settings'."""
        return self._chosen_mode if self._chosen_mode is not None else self._settings_mode

    def _update_footer(self) -> bool:
        """Compute the footer again; returns whether it changed."""
        before = self._footer
        agent = self._agent
        totals = _usage_total(self._usage)
        model = agent.get("model") if isinstance(agent.get("model"), dict) else None
        ref = f"{model['provider']}/{model['model_id']}" if model else ""
        window = 0
        if ref:
            found = self._app.models.get(ref)
            window = found.context_window if found is not None else 0
        self._footer = Footer(
            tokens_in=int(totals["input"]),
            tokens_out=int(totals["output"]),
            cache_read=int(totals["cache_read"]),
            cache_write=int(totals["cache_write"]),
            cost=totals["cost"],
            context_tokens=self._context_tokens,
            context_window=window,
            cwd=self._app.where(self.working_directory),
            model=ref,
            thinking_level=str(agent.get("thinking_level") or "off"),
            conversation_label=self._label,
            permission_mode=self._permission_mode(),
        )
        return self._footer != before

    @property
    def working_directory(self) -> str:
        """Where the shown conversation's tools work (a demo's workspace, a subagent's cwd)."""
        return str(self._agent.get("cwd") or self._app.workspace)

    def _reindex(self) -> None:
        self._index = {block.key: i for i, block in enumerate(self._stored)}

    # -- notices, ticking --

    def add_notice(self, level: NoticeLevel, text: str, *, emit: bool = True) -> None:
        """Show a one-line notice (the newest 20 are kept, 4 shown).

        Args:
            level: ``info``, ``warning`` or ``error``.
            text: One line.
            emit: Announce the change now (``False`` inside a commit's change).
        """
        self._notice_id += 1
        self._notices.append(Notice(level, text, self._notice_id))
        del self._notices[:-NOTICES_KEPT]
        if emit:
            self._emit(ViewChange(notices=True))

    def _tick_while_retrying(self) -> None:
        generation = self._live_doc.get("generation")
        retrying = isinstance(generation, dict) and isinstance(generation.get("retry"), dict)
        if retrying and self._ticker is None:
            self._ticker = asyncio.ensure_future(self._tick())

    async def _tick(self) -> None:
        """Count the retry down once a second of the harness clock (so tests drive it)."""
        clock = self._app.harness.session.clock
        try:
            while True:
                await clock.sleep_until(clock.now() + 1000)
                status = status_line(self._live_doc, clock.now())
                if status != self._status:
                    self._status = status
                    self._emit(ViewChange(status=True))
                if not status.startswith("Retrying in"):
                    return
        finally:
            self._ticker = None

    def _emit(self, change: ViewChange) -> None:
        for listener in list(self._listeners):
            with contextlib.suppress(Exception):
                listener(change)

    async def close(self) -> None:
        """Stop following commits and cancel background refreshes."""
        self.detach()
        await self._tree.close()
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._ticker


def _with_result(block: Block, entry: EntryRecord) -> Block:
    """A card block filled from its ``pi.tool-result`` entry."""
    assert block.tool is not None
    return replace(block, tool=apply_result(block.tool, entry), streaming=False)


def _queue_item(item: Mapping[str, Any]) -> QueueItem:
    mode = item.get("mode")
    if mode == "write":
        entry = item["entry"] if isinstance(item.get("entry"), dict) else {}
        return QueueItem(int(item["id"]), "write", f"<{entry.get('kind', 'entry')}>")
    content = item.get("content")
    text = (
        content
        if isinstance(content, str)
        else "".join(
            b.get("text", "")
            for b in content or []
            if isinstance(b, dict) and b.get("type") == "text"
        )
    )
    return QueueItem(int(item["id"]), "steer" if mode == "steer" else "follow_up", text)
