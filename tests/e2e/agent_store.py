"""Reading what an agent crash chain left in its session store (reliability.md 15: K1, S1).

``read_session`` opens the store with ``SqliteStorage`` once no process holds
it (never through a Harness or a Session, which could commit while recovering)
and reads every conversation, entry, task and root submission. ``Transcript``
names the conversations the way ``agent_scenario`` does (``root``, or the task
marker of a subagent child, found in the child's first user message) and
offers the views the checks need: tool results by call ID, assistant answers,
interrupted calls.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pi_durable_tui.storage import ConversationRecord, StoredEntry, TaskRecord
from pi_durable_tui.storage.records import SubmissionRecord
from pi_durable_tui.storage.sqlite import SqliteStorage
from tests.e2e.agent_scenario import ROOT
from tests.e2e.crash_store import all_pages

ROOT_CONVERSATION = 1


@dataclass(slots=True)
class SessionDump:
    """Everything the checks read from one store."""

    conversations: list[ConversationRecord]
    entries: list[StoredEntry]
    tasks: list[TaskRecord]
    submissions: list[SubmissionRecord]
    """The root conversation's submissions."""


async def _read(store: Path) -> SessionDump:
    storage = await SqliteStorage.open(store)
    try:
        conversations: list[ConversationRecord] = await all_pages(
            lambda c: storage.scan_conversations(limit=500, cursor=c)
        )
        entries: list[StoredEntry] = []
        for conversation in conversations:
            entries += await all_pages(
                lambda c, i=conversation.id: storage.scan_entries(
                    i, order="asc", limit=500, cursor=c
                )
            )
        tasks: list[TaskRecord] = await all_pages(lambda c: storage.scan_tasks(limit=500, cursor=c))
        submissions: list[SubmissionRecord] = await all_pages(
            lambda c: storage.scan_submissions(
                conversation_id=ROOT_CONVERSATION, limit=500, cursor=c
            )
        )
    finally:
        await storage.close()
    return SessionDump(conversations, entries, tasks, submissions)


def read_session(store: Path) -> SessionDump:
    """Read a store that no process holds (see the module docstring)."""
    return asyncio.run(_read(store))


def message(stored: StoredEntry) -> dict[str, Any]:
    """The single message an entry contributes (``{}`` when none)."""
    model = stored.entry.model or []
    first = model[0] if model else {}
    return first if isinstance(first, dict) else {}


def text_of(stored: StoredEntry, kind: str = "text") -> str:
    """The text of an entry's ``text`` (or ``thinking``) blocks."""
    content = message(stored).get("content")
    if isinstance(content, str):
        return content if kind == "text" else ""
    key = "thinking" if kind == "thinking" else "text"
    return "".join(
        str(block.get(key, ""))
        for block in content or []
        if isinstance(block, dict) and block.get("type") == kind
    )


def diagnostic_codes(stored: StoredEntry) -> list[str]:
    data = stored.entry.data if isinstance(stored.entry.data, dict) else {}
    return [str(d.get("code")) for d in data.get("diagnostics") or [] if isinstance(d, dict)]


class Transcript:
    """The entries of a dump grouped by conversation label (see the module docstring)."""

    def __init__(self, dump: SessionDump) -> None:
        by_conversation: dict[int, list[StoredEntry]] = defaultdict(list)
        for stored in dump.entries:
            by_conversation[stored.entry.conversation_id].append(stored)
        self.labels: dict[int, str] = {}
        for conversation_id, entries in by_conversation.items():
            self.labels[conversation_id] = self._label(conversation_id, entries)
        self.entries: dict[str, list[StoredEntry]] = defaultdict(list)
        for conversation_id, entries in by_conversation.items():
            self.entries[self.labels[conversation_id]] += entries

    @staticmethod
    def _label(conversation_id: int, entries: list[StoredEntry]) -> str:
        if conversation_id == ROOT_CONVERSATION:
            return ROOT
        for stored in entries:
            if stored.entry.kind == "pi.user":
                return text_of(stored).split(":")[0]
        return f"conversation {conversation_id}"

    def of_kind(self, label: str, kind: str) -> list[StoredEntry]:
        return [s for s in self.entries.get(label, []) if s.entry.kind == kind]

    def results(self) -> dict[str, list[tuple[str, StoredEntry]]]:
        """Tool-result entries by call ID, each with its conversation's label."""
        found: dict[str, list[tuple[str, StoredEntry]]] = defaultdict(list)
        for label, entries in self.entries.items():
            for stored in entries:
                if stored.entry.kind == "pi.tool-result":
                    found[str(message(stored).get("tool_call_id"))].append((label, stored))
        return found

    def answers(self, label: str) -> list[StoredEntry]:
        """Assistant entries that ended normally (not a partial kept as ``aborted``)."""
        return [
            s
            for s in self.of_kind(label, "pi.assistant")
            if message(s).get("stop_reason") not in ("aborted", "error")
        ]

    def partials(self, label: str) -> list[tuple[StoredEntry, StoredEntry | None]]:
        """Each kept partial (``aborted`` entry, R92) with the next normal answer after it."""
        found: list[tuple[StoredEntry, StoredEntry | None]] = []
        entries = self.of_kind(label, "pi.assistant")
        for index, stored in enumerate(entries):
            if message(stored).get("stop_reason") not in ("aborted", "error"):
                continue
            after = [
                s
                for s in entries[index + 1 :]
                if message(s).get("stop_reason") not in ("aborted", "error")
            ]
            found.append((stored, after[0] if after else None))
        return found


def call_ids(stored: StoredEntry) -> list[str]:
    """The tool call IDs an assistant entry makes, in order."""
    content = message(stored).get("content") or []
    return [
        str(block.get("id"))
        for block in content
        if isinstance(block, dict) and block.get("type") == "tool_call"
    ]
