"""``RemoteFeed``: the view model's committed state from a session's host, over the wire (issue 15).

The attached terminal's ``LiveScreenModel`` is the host's own class, fed by
this instead of ``LocalFeed``: the host's ``snapshot`` is the mount (its
entries are the same ``EntryRecord`` values, rebuilt from JSON), each
``commit`` message is applied to a ``Mirror`` and handed on as a ``Frame``
holding the changed documents' new values, and an unasked-for ``snapshot``
(the host collapsed this client's backlog, R124) is a ``Frame`` that remounts.
One task reads the link in order, so a mount is always applied before the
frames that follow it, as ``LocalFeed`` guarantees with the commit line.

It also keeps who is attached (``clients``), the host's permission mode in
force (``welcome``, then ``mode``: the footer's), and says when the host is gone
(the link ended without ``bye`` after a ``kill -9``, or with one).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from typing import Any

from pi_durable_tui.app._view import TaskNode, TrustQuestion
from pi_durable_tui.app._wire import Mirror
from pi_durable_tui.app.client import HostGone, HostLink
from pi_durable_tui.app.screen import CompactionFailure, Frame, Mounted, Settled, TaskSource
from pi_durable_tui.harness import MODES
from pi_durable_tui.storage import EntryRecord


def _mode_of(message: dict[str, Any]) -> str:
    """A message's ``mode`` when it is one of ``MODES`` (the footer shows it), else ""."""
    mode = message.get("mode")
    return mode if isinstance(mode, str) and mode in MODES else ""


def task_nodes(data: Sequence[Any]) -> tuple[TaskNode, ...]:
    """``TaskNode`` values from the host's JSON (``app.host`` sends their fields)."""
    nodes = []
    for item in data:
        if isinstance(item, dict):
            fields = dict(item)
            fields["children"] = task_nodes(fields.get("children") or [])
            nodes.append(TaskNode(**fields))
    return tuple(nodes)


class _RemoteTree:
    """The task tree as the host last sent it."""

    def __init__(self, changed: Callable[[], None]) -> None:
        self.nodes: tuple[TaskNode, ...] = ()
        self.changed = changed

    def schedule(self) -> None:
        """The host sends the tree itself when it changes."""

    async def close(self) -> None:
        """Nothing runs here."""


class RemoteFeed:
    """A ``ScreenFeed`` over a ``HostLink`` whose ``welcome`` was read.

    Args:
        link: The connection (the feed reads it from here on).
        welcome: The host's ``welcome`` message.
        context_window: This process's model catalog lookup (0 when unknown).
    """

    def __init__(
        self,
        link: HostLink,
        welcome: dict[str, Any],
        context_window: Callable[[str], int] = lambda ref: 0,
    ) -> None:
        self.link = link
        self.root_id = int(welcome["root"])
        self.workspace = str(welcome.get("cwd") or "")
        self.session = str(welcome.get("session") or "")
        self.host_pid = int(welcome.get("host_pid") or 0)
        self.client_id = int(welcome.get("client") or 0)
        self.clients: list[dict[str, Any]] = list(welcome.get("clients") or [])
        self._context_window = context_window
        windows = welcome.get("windows")
        self._windows: dict[str, int] = dict(windows) if isinstance(windows, dict) else {}
        self._mirror = Mirror()
        self._trees: list[_RemoteTree] = []
        self._mounting: tuple[Callable[[Mounted], None], asyncio.Future[None]] | None = None
        self._on_frame: Callable[[Frame], None] | None = None
        self._on_clients: list[Callable[[list[dict[str, Any]]], None]] = []
        self._on_gone: list[Callable[[str], None]] = []
        self._on_stopped: list[Callable[[str], None]] = []
        self._on_error: list[Callable[[str], None]] = []
        self._on_mode: list[Callable[[str], None]] = []
        self.mode = _mode_of(welcome)
        """The host's permission mode in force (``welcome``, then each ``mode``); "" unknown."""
        self.gone: str | None = None
        """Why the host is gone, once it is."""
        self._reader = asyncio.ensure_future(self._read())

    # -- ScreenFeed --

    def where(self, path: str) -> str:
        """The host already names its workspace as the user reads it."""
        return path

    def now(self) -> float:
        """Wall-clock ms (the host's clock is the wall clock in the product)."""
        return time.time() * 1000

    async def sleep_until(self, at_ms: float) -> None:
        """Sleep on the wall clock."""
        await asyncio.sleep(max(0.0, (at_ms - self.now()) / 1000))

    def context_window(self, ref: str) -> int:
        """As the host's models say, else this process's lookup."""
        found = self._windows.get(ref)
        return int(found) if isinstance(found, int) else self._context_window(ref)

    def trust_question(self) -> TrustQuestion | None:
        """Project settings are read and trusted where the store is held: never here."""
        return None

    def tree(self, changed: Callable[[], None]) -> TaskSource:
        """The tree the host sends."""
        tree = _RemoteTree(changed)
        tree.nodes = task_nodes(self._mirror.tasks)
        self._trees.append(tree)
        return tree

    async def mount(
        self,
        conversation_id: int,
        page: int,
        on_mounted: Callable[[Mounted], None],
        on_frame: Callable[[Frame], None],
    ) -> None:
        """Follow a conversation: its snapshot is the mount (the first one came with hello)."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._on_frame = None
        self._mounting = (on_mounted, future)
        self._pending_frame = on_frame
        if self._mirror.seq and self._mirror.conversation == conversation_id:
            self._finish_mount(self._mounted())
        elif self._mirror.seq:
            self.link.send({"t": "follow", "conversation": conversation_id})
        if self.gone is not None and not future.done():
            raise HostGone(self.gone)
        await future

    def unmount(self) -> None:
        """Frames are dropped until the next mount."""
        self._on_frame = None

    async def older(self, conversation_id: int, before: int, limit: int) -> list[EntryRecord]:
        """A page from the host, newest first."""
        page = await self.link.call("older", before=before, count=limit)
        return [EntryRecord.from_json(e) for e in reversed(page.get("entries") or [])]

    # -- presence and the host's end --

    def on_clients(self, listener: Callable[[list[dict[str, Any]]], None]) -> None:
        """Call ``listener(clients)`` when who is attached changes."""
        self._on_clients.append(listener)

    def on_gone(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(reason)`` once the host is gone."""
        self._on_gone.append(listener)

    def on_stopped(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(notice)`` when the host says its store failed (issue 12)."""
        self._on_stopped.append(listener)

    def on_mode(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(mode)`` when the host's permission mode in force changes."""
        self._on_mode.append(listener)

    def on_error(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(message)`` for an ``error`` the host sent."""
        self._on_error.append(listener)

    # -- reading the link --

    def _mounted(self) -> Mounted:
        mirror = self._mirror
        entries = [EntryRecord.from_json(e) for e in reversed(mirror.entries)]
        owned = mirror.conversation != self.root_id
        return Mounted(owned, mirror.title, entries, mirror.has_older, dict(mirror.docs), [])

    def _finish_mount(self, found: Mounted) -> None:
        if self._mounting is None:
            return
        on_mounted, future = self._mounting
        self._mounting = None
        on_mounted(found)
        self._on_frame = self._pending_frame
        if not future.done():
            future.set_result(None)

    async def _read(self) -> None:
        try:
            while True:
                self._handle(await self.link.receive())
        except HostGone as gone:
            self._end(gone.reason)
        except Exception as error:  # a broken message ends the attachment, said in words
            self._end(f"unreadable message: {error}")

    def _end(self, reason: str) -> None:
        self.gone = reason
        if self._mounting is not None and not self._mounting[1].done():
            self._mounting[1].set_exception(HostGone(reason))
        for listener in list(self._on_gone):
            with contextlib.suppress(Exception):
                listener(reason)

    def _handle(self, message: dict[str, Any]) -> None:
        kind = message["t"]
        if kind == "snapshot":
            self._mirror.apply(message)
            found = self._mounted()
            if self._mounting is not None:
                self._finish_mount(found)
            elif self._on_frame is not None:
                self._on_frame(Frame(remount=found))
            self._trees_changed()
        elif kind == "commit":
            changed = self._mirror.apply(message)
            if changed and self._on_frame is not None:
                self._on_frame(self._frame(message))
        elif kind == "tasks":
            self._mirror.apply(message)
            self._trees_changed()
        elif kind == "clients":
            self.clients = list(message.get("clients") or [])
            for presence in list(self._on_clients):
                presence(self.clients)
        elif kind == "mode":
            mode = _mode_of(message)
            if mode:
                self.mode = mode
                for listener in list(self._on_mode):
                    listener(mode)
        elif kind == "stopped":
            for stopped in list(self._on_stopped):
                stopped(str(message.get("notice") or ""))
        elif kind == "error":
            for refused in list(self._on_error):
                refused(str(message.get("message") or message.get("code")))

    def _frame(self, message: dict[str, Any]) -> Frame:
        docs = {
            change["kind"]: self._mirror.docs.get(change["kind"])
            for change in message.get("docs") or []
        }
        return Frame(
            entries=tuple(EntryRecord.from_json(e) for e in message.get("entries") or []),
            docs=docs,
            submissions=tuple(
                Settled(int(s["id"]), str(s["status"]), s.get("reason"), s.get("detail"))
                for s in message.get("submissions") or []
            ),
            compaction_failures=tuple(
                CompactionFailure.from_json(f) for f in message.get("compaction_failures") or []
            ),
        )

    def _trees_changed(self) -> None:
        nodes = task_nodes(self._mirror.tasks)
        for tree in self._trees:
            tree.nodes = nodes
            tree.changed()

    async def close(self) -> None:
        """Stop reading and close the link."""
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader
        await self.link.close()
