"""``session/load``: a stored session's whole history replayed as updates, page by page (issue 15).

The protocol says a loaded session's history is replayed to the client as
``session/update`` notifications before the load is answered. The view model
holds only the newest window (a screen pages older entries in as it scrolls),
so the replay reads the conversation itself, forward from its first entry, one
page of ``PAGE`` entries at a time (``app.host.history_page``: through this
process's session when it holds the store, through the host's ``history``
intent when the session is attached), turns each entry into the blocks a
screen shows (``app.screen.entry_blocks``) and sends their updates before it
reads the next page. Memory is bounded by a page, not by the history: what it
keeps across pages is only the tool cards whose result entry is on a later
page (a card is told once, with its final status, when its result comes, or
at the end as the view model shows it now for a call still running).

Then ``Transcript.mark_seen`` counts the view model's window as told, so a
following turn reports only what is new.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pi_durable_tui.app._ports import Controller
from pi_durable_tui.app._view import Block
from pi_durable_tui.app.acp._updates import Transcript
from pi_durable_tui.app.host import history_page
from pi_durable_tui.app.screen import AgentController, entry_blocks, with_result
from pi_durable_tui.storage import EntryRecord

PAGE = 200
"""Entries read (and held) at a time."""

ReadPage = Callable[[int, int], Awaitable[dict[str, Any]]]
"""``read_page(after, count)``: ``{entries, has_newer}``, oldest first (the ``history`` intent)."""
Send = Callable[[list[dict[str, Any]]], None]


@dataclass(frozen=True, slots=True)
class Replayed:
    """What a replay did: entries read, pages read, and the most entries it held at once."""

    entries: int
    pages: int
    most_held: int


def page_reader(controller: Controller, conversation: int) -> ReadPage:
    """How to read the shown conversation's history: the store, or the host's ``history``."""
    if isinstance(controller, AgentController):
        session = controller.app.harness.session
        return lambda after, count: history_page(session, conversation, after, count)
    feed = getattr(controller, "feed", None)  # RemoteController: the link to the host
    link = getattr(feed, "link", None)
    if link is None:
        raise TypeError(f"no history source for {type(controller).__name__}")

    async def remote(after: int, count: int) -> dict[str, Any]:
        found = await link.call("history", after=after, count=count)
        return found if isinstance(found, dict) else {"entries": [], "has_newer": False}

    return remote


async def replay_history(
    read_page: ReadPage, send: Send, transcript: Transcript, page: int = PAGE
) -> Replayed:
    """Send every entry's updates, oldest first, one page read at a time; then ``mark_seen``."""
    after, entries, pages, most_held = 0, 0, 0, 0
    waiting: dict[str, Block] = {}  # tool cards whose result is on a later page
    while True:
        found = await read_page(after, page)
        batch = [EntryRecord.from_json(e) for e in found.get("entries") or []]
        pages += 1
        entries += len(batch)
        most_held = max(most_held, len(batch) + len(waiting))
        for entry in batch:
            send(_entry_updates(entry, waiting, transcript))
        if not batch or not found.get("has_newer"):
            break
        after = batch[-1].id
        del batch  # REMINDER: nothing of a page outlives it but the waiting cards
    shown = {b.tool.call_id: b for b in transcript.model.blocks if b.tool is not None}
    for call_id, block in waiting.items():  # still running: as the screen shows it now
        send(transcript.told(shown.get(call_id, block)))
    transcript.mark_seen()
    return Replayed(entries, pages, most_held)


def _entry_updates(
    entry: EntryRecord, waiting: dict[str, Block], transcript: Transcript
) -> list[dict[str, Any]]:
    if entry.kind == "pi.tool-result":
        message = (entry.model or [{}])[0]
        call_id = str(message.get("tool_call_id", "")) if isinstance(message, dict) else ""
        card = waiting.pop(call_id, None)
        return transcript.told(with_result(card, entry)) if card is not None else []
    updates: list[dict[str, Any]] = []
    for block in entry_blocks(entry):
        if block.tool is not None and block.tool.status == "pending":
            waiting[block.tool.call_id] = block  # its result entry comes later
        else:
            updates += transcript.told(block)
    return updates
