"""``LiveScreenModel``: the shown conversation and the session, as the screen renders it.

Built on committed state only (issue 8, "the rule of the screen"): it mounts the
newest page of the shown conversation's entries and its documents ON THE LINE (in
a commit callback that writes nothing, subscribing before the line moves on, so no
commit is missed), then follows commit publications. One commit becomes at most
one ``ViewChange``: blocks appended, cards changed, the queue, the footer, the
status line, the task tree. Older entries are paged in on demand (``load_older``),
so a 10,000-entry session mounts as fast as a short one.

Where that state comes from is a ``ScreenFeed`` (``_feed``): ``LocalFeed`` when
this process holds the store, the remote feed of ``app.remote`` when another
process hosts the session (issue 15). The derivation below is the same either
way: one view model, one code path.

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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

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
from pi_durable_tui.app.agent import AgentApp
from pi_durable_tui.app.screen._blocks import (
    entry_blocks,
    entry_message,
    live_blocks,
    status_line,
    visible,
)
from pi_durable_tui.app.screen._doc_values import (
    approval_question,
    context_tokens,
    queue_item,
    usage_total,
    with_result,
)
from pi_durable_tui.app.screen._ending_notices import ending_notices
from pi_durable_tui.app.screen._feed import Frame, LocalFeed, Mounted, ScreenFeed, TaskSource
from pi_durable_tui.app.screen._names import conversation_label
from pi_durable_tui.app.screen._store_failure import STOPPED, stopped_tasks, watch_store_failure
from pi_durable_tui.harness import AGENT_DOC, INBOX_DOC, LIVE_DOC, USAGE_DOC
from pi_durable_tui.storage import EntryRecord, JsonObject

PAGE = 60
"""Entries mounted at first, and paged in per ``load_older``."""
NOTICES_KEPT = 20


class LiveScreenModel:
    """The ``ScreenModel`` of a session (see the module docstring).

    Args:
        source: The open session (``AgentApp``), or a feed of one hosted elsewhere.
        verbose: Show system-prompt changes as blocks.
    """

    def __init__(self, source: AgentApp | ScreenFeed, *, verbose: bool = False) -> None:
        self._feed: ScreenFeed = _feed_of(source)
        self._verbose = verbose
        self.conversation_id = self._feed.root_id
        self._stored: list[Block] = []
        self._live: list[Block] = []
        self._cards: dict[str, str] = {}  # call ID -> block key (the newest card of that call)
        self._index: dict[str, int] = {}
        self._oldest: int | None = None
        self._has_older = False
        self._queue: tuple[QueueItem, ...] = ()
        self._footer = Footer(cwd=self._feed.where(self._feed.workspace))
        self._status = ""
        self._busy = False
        self._live_doc: dict[str, Any] = {}
        self._agent: JsonObject = {}
        self._label = "main"
        self._usage: JsonObject = {}
        self._unplaced_results: dict[str, EntryRecord] = {}
        self._notices: list[Notice] = []
        self._notice_id = 0
        self._context_tokens: int | None = None
        self._listeners: list[Callable[[ViewChange], None]] = []
        self._tree = self._new_tree()
        self._ticker: asyncio.Task[None] | None = None
        self._resumed = 0
        self._attached = 0
        self._permission_mode = ""
        self._stopped = ""
        self._unwatch_store = (
            watch_store_failure(source, self.store_failed)
            if isinstance(source, AgentApp)
            else lambda: None
        )
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
        """The live task tree of the session (every task ``stopped`` once the store failed)."""
        return stopped_tasks(self._tree.nodes) if self._stopped else self._tree.nodes

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
        """Whether the shown conversation runs, or a shell command of the user's does."""
        return self._busy

    @property
    def notices(self) -> Sequence[Notice]:
        """The lasting notices and the newest transient ones, oldest first."""
        newest = {n.id for n in [n for n in self._notices if not n.lasting][-4:]}
        return tuple(n for n in self._notices if n.lasting or n.id in newest)

    @property
    def trust_question(self) -> TrustQuestion | None:
        """The project settings content that waits for the user's trust (issue 13)."""
        return self._feed.trust_question()

    @property
    def approval(self) -> ApprovalQuestion | None:
        """The oldest call of the shown conversation waiting for a decision (issue 13).

        None once stopped (``stop``): no decision can be stored or sent from here;
        the call still waits, and ``--continue`` asks it again.
        """
        return None if self._stopped else approval_question(self._live_doc)

    def set_attached(self, count: int) -> None:
        """Show how many other terminals and clients share the session (the footer)."""
        if count != self._attached:
            self._attached = count
            self._update_footer()
            self._emit(ViewChange(footer=True))

    def set_permission_mode(self, mode: str) -> None:
        """Show the permission mode in force in the footer (issue 13)."""
        if mode != self._permission_mode:
            self._permission_mode = mode
            self._update_footer()
            self._emit(ViewChange(footer=True))

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
        self._feed = LocalFeed(app)
        self._tree = self._new_tree()
        self.watched.clear()
        self._unwatch_store()
        self._unwatch_store = watch_store_failure(app, self.store_failed)
        self._stopped = ""

    def store_failed(self, line: str) -> None:
        """Say that the store failed under the session (issue 12).

        One error notice (``line``: what failed, that nothing committed was lost,
        what to do), the status line stops saying the agent works and the task
        tree shows every task ``stopped``: no commit can land any more, so
        ``pi.live`` and the tree would say it works forever. An attached client
        is told by its host (the wire's ``stopped``) and calls this too.
        """
        self.stop(line, STOPPED)

    def stop(self, line: str, status: str) -> None:
        """Say that nothing more runs from this screen: the store failed, the host is gone.

        ``line`` is one lasting error notice (what happened, what to do), ``status``
        replaces the status line, the task tree shows every task ``stopped`` and
        an approval prompt goes away (``approval``): no commit reaches this screen
        any more, so what it last saw would say the agent works forever.
        """
        self._stopped = status
        self._status, self._busy = status, False
        self.add_notice("error", line, emit=False, lasting=True)
        self._emit(ViewChange(status=True, notices=True, tasks=True, approval=True))

    @property
    def feed(self) -> ScreenFeed:
        """Where the committed state comes from."""
        return self._feed

    def _new_tree(self) -> TaskSource:
        return self._feed.tree(lambda: self._emit(ViewChange(tasks=True)))

    # -- mounting --

    async def attach(self, conversation_id: int) -> None:
        """Show a conversation: mount its newest page and documents, then follow it.

        Raises:
            ValueError: The conversation does not exist.
        """
        self.detach()

        def mounted(found: Mounted) -> None:
            # REMINDER: called before the first frame of the new mount (on the line
            # locally, before the next wire message remotely): rebuild synchronously.
            self.conversation_id = conversation_id
            self._apply_mount(found)

        await self._feed.mount(conversation_id, PAGE, mounted, self._on_frame)
        self._tree.schedule()
        self._emit_reset()

    def _apply_mount(self, found: Mounted) -> None:
        # Open submissions are watched like those sent from this screen: a turn a
        # killed process left, resumed after --continue, must not fail silently.
        self.watched.update(found.pending)
        self._label = conversation_label(
            self.conversation_id, found.owned, self._feed.root_id, found.title
        )
        self._mount(found.newest_first, found.has_older, found.docs)

    def _emit_reset(self) -> None:
        self._emit(
            ViewChange(
                transcript_reset=True,
                queue=True,
                footer=True,
                status=True,
                tasks=True,
                approval=True,  # the mounted conversation may hold a waiting request
            )
        )

    def _mount(
        self, newest_first: list[EntryRecord], has_older: bool, docs: Mapping[str, Any]
    ) -> None:
        self._has_older = has_older
        entries = list(reversed(newest_first))
        self._stored, self._index, self._cards, self._live = [], {}, {}, []
        self._unplaced_results = {}
        self._context_tokens = None
        self._oldest = entries[0].id if entries else None
        self._append_entries(entries, [])
        self._apply_docs(docs)
        self._refresh_live([], [])

    def detach(self) -> None:
        """Stop following commits."""
        self._feed.unmount()

    async def load_older(self, count: int) -> int:
        """Page in up to ``count`` entries before the loaded ones; returns blocks prepended."""
        if not self._has_older or self._oldest is None:
            return 0
        entries = await self._feed.older(self.conversation_id, self._oldest, count + 1)
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
                    older[index] = with_result(older[index], entry)
                continue
            for block in visible(entry_blocks(entry), self._verbose):
                if block.tool is not None:
                    cards[block.tool.call_id] = len(older)
                older.append(block)
        # A call at the end of this page may have its result in the page loaded before.
        for call, index in cards.items():
            result = self._unplaced_results.pop(call, None)
            if result is not None:
                older[index] = with_result(older[index], result)
        self._stored = older + self._stored
        self._reindex()
        self._emit(ViewChange(older_loaded=len(older)))
        return len(older)

    # -- following commits --

    def _on_frame(self, frame: Frame) -> None:
        if frame.remount is not None:
            self._apply_mount(frame.remount)
            self._emit_reset()
            return
        entries = frame.entries
        docs = frame.docs
        added: list[str] = []
        changed: list[str] = []
        footer = bool(entries) and self._append_entries(entries, changed, added)
        waiting = approval_question(self._live_doc)
        flags = self._apply_docs(docs) if docs else {}
        removed: list[str] = []
        status = False
        if entries or LIVE_DOC.kind in docs:
            removed, status = self._refresh_live(added, changed)
        notices = self._settled(frame)
        if frame.tasks:
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

    def _settled(self, frame: Frame) -> bool:
        """Notice what this commit ended badly (``ending_notices``)."""
        notices = ending_notices(frame, self.watched)
        for level, text in notices:
            self.add_notice(level, text, emit=False)
        return bool(notices)

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
                self._stored[index] = with_result(self._stored[index], entry)
                changed.append(self._stored[index].key)
                continue
            if entry.kind == "pi.assistant":
                message = entry_message(entry)
                if message.get("stop_reason") not in ("error", "aborted"):
                    self._context_tokens = context_tokens(message) or self._context_tokens
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
        status = self._stopped or status_line(self._live_doc, self._feed.now())
        busy = not self._stopped and ("run" in self._live_doc or "shell" in self._live_doc)
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
            self._queue = tuple(queue_item(item) for item in items if isinstance(item, dict))
            flags["queue"] = True
        if USAGE_DOC.kind in docs or AGENT_DOC.kind in docs:
            if USAGE_DOC.kind in docs:
                self._usage = docs[USAGE_DOC.kind] or {}
            if AGENT_DOC.kind in docs:
                self._agent = docs[AGENT_DOC.kind] or {}
            self._update_footer()
            flags["footer"] = True
        return flags

    def _update_footer(self) -> None:
        agent = self._agent
        totals = usage_total(self._usage)
        model = agent.get("model") if isinstance(agent.get("model"), dict) else None
        ref = f"{model['provider']}/{model['model_id']}" if model else ""
        window = self._feed.context_window(ref) if ref else 0
        self._footer = Footer(
            tokens_in=int(totals["input"]),
            tokens_out=int(totals["output"]),
            cache_read=int(totals["cache_read"]),
            cache_write=int(totals["cache_write"]),
            cost=totals["cost"],
            context_tokens=self._context_tokens,
            context_window=window,
            cwd=self._feed.where(self.working_directory),
            model=ref,
            thinking_level=str(agent.get("thinking_level") or "off"),
            conversation_label=self._label,
            attached=self._attached,
            permission_mode=self._permission_mode,
        )

    @property
    def working_directory(self) -> str:
        """Where the shown conversation's tools work (a demo's workspace, a subagent's cwd)."""
        return str(self._agent.get("cwd") or self._feed.workspace)

    def _reindex(self) -> None:
        self._index = {block.key: i for i, block in enumerate(self._stored)}

    # -- notices, ticking --

    def add_notice(
        self, level: NoticeLevel, text: str, *, emit: bool = True, lasting: bool = False
    ) -> None:
        """Show a one-line notice (the newest 20 are kept, 4 shown).

        Args:
            level: ``info``, ``warning`` or ``error``.
            text: One line.
            emit: Announce the change now (``False`` inside a commit's change).
            lasting: Keep it on screen rather than let it expire (``Notice``).
        """
        self._notice_id += 1
        self._notices.append(Notice(level, text, self._notice_id, lasting))
        # REMINDER: a lasting notice is kept whatever comes after it: the status
        # line says "see the notice" for as long as the session lives.
        kept = {n.id for n in [n for n in self._notices if not n.lasting][-NOTICES_KEPT:]}
        self._notices = [n for n in self._notices if n.lasting or n.id in kept]
        if emit:
            self._emit(ViewChange(notices=True))

    def _tick_while_retrying(self) -> None:
        generation = self._live_doc.get("generation")
        retrying = isinstance(generation, dict) and isinstance(generation.get("retry"), dict)
        if retrying and self._ticker is None:
            self._ticker = asyncio.ensure_future(self._tick())

    async def _tick(self) -> None:
        """Count the retry down once a second of the harness clock (so tests drive it)."""
        feed = self._feed
        try:
            while True:
                await feed.sleep_until(feed.now() + 1000)
                status = status_line(self._live_doc, feed.now())
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
        self._unwatch_store()
        await self._tree.close()
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._ticker


def _feed_of(source: AgentApp | ScreenFeed) -> ScreenFeed:
    """An open ``AgentApp`` is read through a ``LocalFeed``; a feed is used as it is."""
    return LocalFeed(source) if isinstance(source, AgentApp) else source
