"""``--mode json``: the root conversation's committed progress as JSON lines.

Each line is one event derived from a commit, never from anything uncommitted:
``entry_appended`` with the entry as stored, and ``live`` with the changes of
``pi.live`` (the streamed partial, tool slots, retries) as JSON operations that
apply to the previous value. A consumer that applies them sees exactly what the
screen sees.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any, TextIO

from pi_durable_tui.harness import LIVE_DOC
from pi_durable_tui.kernel import CommitInfo

if TYPE_CHECKING:
    from pi_durable_tui.app._agent_app import AgentApp


class JsonEventPrinter:
    """Prints one JSON line per event of the root conversation's commits."""

    def __init__(self, app: AgentApp, out: TextIO) -> None:
        self._app = app
        self._out = out
        self._queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._unsubscribe: Any = None
        self._writer: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Subscribe to commits and start writing."""
        conversation = self._app.root.id
        self._unsubscribe = self._app.harness.session.subscribe(
            lambda info: self._on_commit(conversation, info)
        )
        self._writer = asyncio.ensure_future(self._write())

    def _on_commit(self, conversation: int, info: CommitInfo) -> None:
        for entry in info.entries:
            if entry.conversation_id == conversation:
                self._queue.put_nowait({"type": "entry_appended", "entry": entry.to_json()})
        for change in info.documents:
            scope = change.address.scope
            if change.address.kind == LIVE_DOC.kind and scope.id == conversation and change.ops:
                self._queue.put_nowait({"type": "live", "seq": info.seq, "ops": change.ops})

    async def _write(self) -> None:
        while True:
            event = await self._queue.get()
            if event is None:
                return
            self._out.write(json.dumps(event, ensure_ascii=False) + "\n")
            self._out.flush()

    async def flush(self) -> None:
        """Wait until every queued event is written."""
        while not self._queue.empty():
            await asyncio.sleep(0)

    async def stop(self) -> None:
        """Unsubscribe and write what is queued."""
        if self._unsubscribe is not None:
            self._unsubscribe()
        self._queue.put_nowait(None)
        if self._writer is not None:
            await self._writer
