"""What a killed (or exited) ``pidurable`` left in its store, read after the process is dead.

Used by ``test_tui_pty``. ``read_store`` opens the session's SQLite store
through the ``Storage`` protocol only (never a Session, which could commit while
reconciling) and reads every conversation's entries and live documents, every
submission and task, plus ``integrity_check`` and ``foreign_key_check`` (R129,
reliability.md 9.5). The pieces it shares with the other crash tests come from
``crash_store`` (paging, SQLite health) and ``agent_store`` (an entry's message
and diagnostics).

The scenarios mark their text with *tokens* (``w017``, ``a005``: a letter and
three digits) in prompts, scripted answers and command output, so "every text
shown was committed" becomes a set comparison: the tokens of a screen against the
tokens of every string the store holds (``StoreSnapshot.tokens``).
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pi_durable_tui.storage import ScopeRef, StoredEntry, SubmissionRecord, TaskRecord
from pi_durable_tui.storage.sqlite import SqliteStorage
from tests.e2e.agent_store import diagnostic_codes, message, text_of
from tests.e2e.crash_store import all_pages, sqlite_health

TOKEN = re.compile(r"\b[a-z]\d{3}\b")
"""A scenario's marker: one lowercase letter and three digits, a whole word."""


def tokens(text: str) -> set[str]:
    """The marker tokens in a text (a screen, an answer)."""
    return set(TOKEN.findall(text))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


@dataclass(frozen=True, slots=True)
class StoreSnapshot:
    """Everything the checks read from one store at one moment."""

    entries: list[StoredEntry]
    submissions: list[SubmissionRecord]
    tasks: list[TaskRecord]
    documents: list[dict[str, Any]]
    """The current value of every live document (``pi.live`` holds streamed partials)."""
    health: list[str]
    """What ``integrity_check`` and ``foreign_key_check`` report: ``[]`` when healthy."""

    def tokens(self) -> set[str]:
        """The marker tokens in every committed string: entries and live documents."""
        found: set[str] = set()
        for stored in self.entries:
            for text in _strings([stored.entry.model, stored.entry.data]):
                found |= tokens(text)
        for value in self.documents:
            for text in _strings(value):
                found |= tokens(text)
        return found

    def of_kind(self, kind: str, conversation: int | None = None) -> list[StoredEntry]:
        """The entries of one kind (in one conversation), oldest first."""
        return [
            s
            for s in self.entries
            if s.entry.kind == kind and conversation in (None, s.entry.conversation_id)
        ]

    def assistant(self, *, aborted: bool, conversation: int | None = None) -> list[str]:
        """The texts of the assistant messages that were (not) cut short."""
        return [
            text_of(s)
            for s in self.of_kind("pi.assistant", conversation)
            if (stop_reason(s) == "aborted") == aborted
        ]

    def tool_results(self) -> dict[tuple[int, str], dict[str, Any]]:
        """Tool results by conversation and call ID: their diagnostic codes and text."""
        results: dict[tuple[int, str], dict[str, Any]] = {}
        for stored in self.of_kind("pi.tool-result"):
            call = (stored.entry.conversation_id, str(message(stored).get("tool_call_id")))
            results[call] = {"codes": diagnostic_codes(stored), "text": text_of(stored)}
        return results

    def duplicates(self) -> list[str]:
        """What was placed twice: user texts, request IDs, submissions' entries, answers."""
        found: list[str] = []
        users = Counter((s.entry.conversation_id, text_of(s)) for s in self.of_kind("pi.user"))
        found += [f"user text {key} placed {n} times" for key, n in users.items() if n > 1]
        requests = Counter(
            (s.conversation_id, s.request_id) for s in self.submissions if s.request_id
        )
        found += [f"request {key} submitted {n} times" for key, n in requests.items() if n > 1]
        placed = Counter(s.entry for s in self.submissions if s.entry is not None)
        found += [f"entry {key} placed by {n} submissions" for key, n in placed.items() if n > 1]
        answers = Counter(
            (s.entry.conversation_id, text_of(s))
            for s in self.of_kind("pi.assistant")
            if stop_reason(s) != "aborted"
        )
        found += [f"answer {key} stored {n} times" for key, n in answers.items() if n > 1]
        calls = Counter(
            (s.entry.conversation_id, str(message(s).get("tool_call_id")))
            for s in self.of_kind("pi.tool-result")
        )
        found += [f"tool call {key} has {n} results" for key, n in calls.items() if n > 1]
        return found

    def live_tasks(self) -> list[TaskRecord]:
        """Tasks not yet terminal."""
        return [t for t in self.tasks if t.status != "terminal"]


def stop_reason(stored: StoredEntry) -> str | None:
    """An assistant entry's stop reason."""
    reason = message(stored).get("stop_reason")
    return None if reason is None else str(reason)


async def _read(path: Path) -> StoreSnapshot:
    storage = await SqliteStorage.open(path)
    try:
        conversations = await all_pages(lambda c: storage.scan_conversations(limit=500, cursor=c))
        entries: list[StoredEntry] = []
        documents: list[dict[str, Any]] = []
        for conversation in conversations:
            entries += await all_pages(
                lambda c, i=conversation.id: storage.scan_entries(
                    i, order="asc", limit=500, cursor=c
                )
            )
            scope = ScopeRef("conversation", conversation.id)
            for record in await all_pages(
                lambda c, s=scope: storage.scan_documents(s, limit=500, cursor=c)
            ):
                read = await storage.document(record.id)
                if read is not None:
                    documents.append(read.value)
        submissions = await all_pages(lambda c: storage.scan_submissions(limit=500, cursor=c))
        tasks = await all_pages(lambda c: storage.scan_tasks(limit=500, cursor=c))
    finally:
        await storage.close()
    return StoreSnapshot(entries, submissions, tasks, documents, sqlite_health(path))


def read_store(path: Path) -> StoreSnapshot:
    """Open a store no process holds and read everything the checks need."""
    return asyncio.run(_read(path))
