"""``LiveScreenModel``: the shown conversation and the session, as the screen renders it.

Built on committed state only (issue 8, "the rule of the screen"): it mounts the
newest page of the shown conversation's entries and its documents ON THE LINE (in
a commit callback that writes nothing, subscribing before the line moves on, so no
commit is missed), then follows commit publications. One commit becomes at most
one ``ViewChange``: blocks appended, cards changed, the queue, the footer, the
status line, the task tree. Older entries are paged in on demand (``load_older``),
so a 10,000-entry session mounts as fast as a short one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pi_durable_tui.app._blocks import (
    apply_result,
    entry_blocks,
    entry_message,
    live_blocks,
    status_line,
    visible,
)
from pi_durable_tui.app._task_tree import build_tree
from pi_durable_tui.app._view import (
    Block,
    Footer,
    Notice,
    QueueItem,
    TaskNode,
    ViewChange,
)
from pi_durable_tui.harness import AGENT_DOC, INBOX_DOC, LIVE_DOC, USAGE_DOC
from pi_durable_tui.kernel import CommitInfo, Tx
from pi_durable_tui.storage import EntryRecord

if TYPE_CHECKING:
    from pi_durable_tui.app._agent_app import AgentApp

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
        self._footer = Footer(cwd=app.cwd)
        self._status = ""
        self._busy = False
        self._live_doc: dict[str, Any] = {}
        self._notices: list[Notice] = []
        self._notice_id = 0
        self._tasks: tuple[TaskNode, ...] = ()
        self._context_tokens: int | None = None
        self._listeners: list[Callable[[ViewChange], None]] = []
        self._unsubscribe: Callable[[], None] | None = None
        self._labels: dict[int, str] = {}
        self._tree_task: asyncio.Task[None] | None = None
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
        return self._tasks

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
        """Follow another open session (after ``/new`` or ``/resume``)."""
        self.detach()
        self._app = app
        self._labels.clear()
        self.watched.clear()

    # -- mounting --

    async def attach(self, conversation_id: int) -> None:
        """Show a conversation: mount its newest page and documents on the line."""
        self.detach()
        session = self._app.harness.session
        storage = session.storage

        async def mount(_tx: Tx) -> tuple[list[EntryRecord], dict[str, Any]]:
            page = await storage.scan_entries(conversation_id, order="desc", limit=PAGE + 1)
            docs = {
                definition.kind: await session.snapshot(definition, conversation_id) or {}
                for definition in (LIVE_DOC, INBOX_DOC, USAGE_DOC, AGENT_DOC)
            }
            # Open submissions are watched like those sent from this screen: a turn a
            # killed process left, resumed after --continue, must not fail silently.
            pending = await storage.scan_submissions(
                conversation_id=conversation_id, status=("queued", "placed"), limit=PAGE
            )
            self.watched.update(record.id for record in pending.items)
            # REMINDER: subscribing inside the callback, while this commit holds the
            # line, is what guarantees that no commit lands between mount and follow.
            self._unsubscribe = session.subscribe(self._on_commit)
            return [stored.entry for stored in page.items], docs

        entries, docs = await session.commit(mount)
        self.conversation_id = conversation_id
        self._has_older = len(entries) > PAGE
        entries = list(reversed(entries[:PAGE]))
        self._stored, self._index, self._cards, self._live = [], {}, {}, []
        self._context_tokens = None
        self._oldest = entries[0].id if entries else None
        self._append_entries(entries, [])
        self._apply_docs(docs)
        self._live_doc = docs[LIVE_DOC.kind]
        self._refresh_live([], [])
        self._schedule_tree()
        self._emit(
            ViewChange(transcript_reset=True, queue=True, footer=True, status=True, tasks=True)
        )

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
                    block = older[cards[call]]
                    assert block.tool is not None
                    older[cards[call]] = replace(
                        block, tool=apply_result(block.tool, entry), streaming=False
                    )
                continue
            for block in visible(entry_blocks(entry), self._verbose):
                if block.tool is not None:
                    cards[block.tool.call_id] = len(older)
                older.append(block)
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
        if entries:
            self._append_entries(entries, changed, added)
        change = ViewChange()
        if docs:
            flags = self._apply_docs(docs)
            change = ViewChange(
                queue=flags.get("queue", False),
                footer=flags.get("footer", False),
                status=flags.get("status", False),
            )
        if entries or LIVE_DOC.kind in docs:
            removed = self._refresh_live(added, changed)
            change = replace(change, blocks_removed=tuple(removed))
        for record in info.submissions:
            if record.id in self.watched and record.status in ("done", "unanswered"):
                self.watched.discard(record.id)
                if record.status == "unanswered" and record.reason != "aborted":
                    detail = f" {record.detail}" if record.detail is not None else ""
                    self.add_notice("error", f"No answer: {record.reason}{detail}", emit=False)
                    change = replace(change, notices=True)
        if info.tasks:
            self._schedule_tree()
        change = replace(change, blocks_added=tuple(added), blocks_changed=tuple(changed))
        if change != ViewChange():
            self._emit(change)

    def _append_entries(
        self, entries: Sequence[EntryRecord], changed: list[str], added: list[str] | None = None
    ) -> None:
        for entry in entries:
            if entry.kind == "pi.tool-result":
                message = entry_message(entry)
                key = self._cards.get(str(message.get("tool_call_id", "")))
                index = self._index.get(key) if key is not None else None
                if index is not None:
                    block = self._stored[index]
                    assert block.tool is not None
                    self._stored[index] = replace(
                        block, tool=apply_result(block.tool, entry), streaming=False
                    )
                    changed.append(block.key)
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
        self._update_footer()

    def _refresh_live(self, added: list[str], changed: list[str]) -> list[str]:
        """Recompute the streaming blocks and running cards; returns live keys removed."""
        cards = {
            call: self._stored[self._index[key]]
            for call, key in self._cards.items()
            if key in self._index
        }
        live, updated = live_blocks(self._live_doc, cards)
        for key, block in updated.items():
            self._stored[self._index[key]] = block
            if key not in changed:
                changed.append(key)
        old = {b.key: b for b in self._live}
        removed = [key for key in old if key not in {b.key for b in live}]
        if added:
            # Stored blocks were appended after the live ones: re-add live blocks at the end.
            removed = list(old)
        for block in live:
            if block.key in old and block.key not in removed:
                if old[block.key] != block:
                    changed.append(block.key)
            else:
                added.append(block.key)
        self._live = live
        status = status_line(self._live_doc, self._app.harness.session.clock.now())
        self._busy = "run" in self._live_doc
        if status != self._status:
            self._status = status
        self._tick_while_retrying()
        return removed

    def _apply_docs(self, docs: Mapping[str, Any]) -> dict[str, bool]:
        flags: dict[str, bool] = {}
        if LIVE_DOC.kind in docs:
            self._live_doc = dict(docs[LIVE_DOC.kind] or {})
            flags["status"] = True
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

    def _update_footer(self) -> None:
        agent = getattr(self, "_agent", {}) or {}
        totals = _usage_total(getattr(self, "_usage", {}))
        model = agent.get("model") if isinstance(agent.get("model"), dict) else None
        ref = f"{model['provider']}/{model['model_id']}" if model else ""
        window = 0
        if ref:
            found = self._app.models.get(ref)
            window = found.context_window if found is not None else 0
        label = (
            "main"
            if self.conversation_id == self._app.root.id
            else f"subagent {self.conversation_id}"
        )
        self._footer = Footer(
            tokens_in=int(totals["input"]),
            tokens_out=int(totals["output"]),
            cache_read=int(totals["cache_read"]),
            cache_write=int(totals["cache_write"]),
            cost=totals["cost"],
            context_tokens=self._context_tokens,
            context_window=window,
            cwd=str(agent.get("cwd") or self._app.cwd),
            model=ref,
            thinking_level=str(agent.get("thinking_level") or "off"),
            conversation_label=label,
        )

    def _reindex(self) -> None:
        self._index = {block.key: i for i, block in enumerate(self._stored)}

    # -- notices, ticking, the task tree --

    def add_notice(self, level: str, text: str, *, emit: bool = True) -> None:
        """Show a one-line notice (the newest 20 are kept, 4 shown)."""
        self._notice_id += 1
        self._notices.append(Notice(level, text, self._notice_id))  # type: ignore[arg-type]
        del self._notices[:-NOTICES_KEPT]
        if emit:
            self._emit(ViewChange(notices=True))

    def _tick_while_retrying(self) -> None:
        generation = self._live_doc.get("generation")
        retrying = isinstance(generation, dict) and isinstance(generation.get("retry"), dict)
        if retrying and self._ticker is None:
            self._ticker = asyncio.ensure_future(self._tick())

    async def _tick(self) -> None:
        try:
            while True:
                await asyncio.sleep(1.0)
                status = status_line(self._live_doc, self._app.harness.session.clock.now())
                if status != self._status:
                    self._status = status
                    self._emit(ViewChange(status=True))
                if not status.startswith("Retrying in"):
                    return
        finally:
            self._ticker = None

    def _schedule_tree(self) -> None:
        if self._tree_task is None or self._tree_task.done():
            self._tree_task = asyncio.ensure_future(self._refresh_tree())

    async def _refresh_tree(self) -> None:
        await asyncio.sleep(0)  # coalesce the commits of one burst
        session = self._app.harness.session
        graph = session.task_graph()
        records = {}
        for key in graph.get("tasks") or {}:
            record = await session.read_task(int(key))
            if record is not None:
                records[int(key)] = record
        for task_id, record in records.items():
            if task_id not in self._labels:
                self._labels[task_id] = await self._label(record)
        self._labels = {k: v for k, v in self._labels.items() if k in records}
        self._tasks = build_tree(
            graph,
            lambda node: self._labels.get(int(node["id"]), str(node.get("kind"))),
            lambda task_id: records[task_id].started_at if task_id in records else None,
            session.clock.now(),
        )
        self._emit(ViewChange(tasks=True))

    async def _label(self, record: Any) -> str:
        data = record.input if isinstance(record.input, dict) else {}
        if record.kind == "pi.generation":
            return (
                "turn"
                if record.conversation_id == self._app.root.id
                else f"turn (subagent {record.conversation_id})"
            )
        if record.kind == "pi.compaction":
            return f"compaction ({data.get('reason', 'manual')})"
        if record.kind == "pi.subagent":
            return f"subagent: {str(data.get('prompt', ''))[:40]}"
        if record.kind == "pi.tool":
            stored = await self._app.harness.session.storage.entry(int(data.get("assistant") or 0))
            message = entry_message(stored.entry) if stored is not None else {}
            for block in message.get("content") or []:
                if isinstance(block, dict) and block.get("id") == data.get("call_id"):
                    return _tool_label(str(block.get("name")), block.get("arguments") or {})
            return "tool"
        return record.kind

    def _emit(self, change: ViewChange) -> None:
        for listener in list(self._listeners):
            with contextlib.suppress(Exception):
                listener(change)

    async def close(self) -> None:
        """Stop following commits and cancel background refreshes."""
        self.detach()
        for task in (self._tree_task, self._ticker):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task


def _tool_label(name: str, arguments: Mapping[str, Any]) -> str:
    for key in ("command", "path", "task"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            short = " ".join(value.split())
            return f"{name}: {short[:48]}{'…' if len(short) > 48 else ''}"
    return name


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
