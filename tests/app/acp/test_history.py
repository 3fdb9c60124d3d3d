"""``session/load``'s replay reads the whole history a page at a time (issue 15).

In process, over a real SQLite session: a 2,500-entry history is replayed in
order, one page read only after the previous page's updates were sent, so the
entries held at once never exceed a page (counted, not timed); a tool call whose
result is on the next page is told once, completed, in its place; the same over
an attached session, through the host's ``history`` intent.
"""

from __future__ import annotations

from typing import Any

from pi_durable_tui.app import attach_screen
from pi_durable_tui.app.acp._history import page_reader, replay_history
from pi_durable_tui.app.acp._updates import Transcript
from tests.app.host.conftest import ServeFactory
from tests.app.screen_support import ScreenFactory, seed_history
from tests.harness.run_support import within

ENTRIES = 2_500
CALL_AT = 1_000


def _expected() -> list[tuple[str, str]]:
    """``(sessionUpdate, text or call id)`` of the seeded history, oldest first."""
    told = []
    for n in range(ENTRIES):
        told.append(("tool_call", "c1") if n == CALL_AT else ("user_message_chunk", f"message {n}"))
    return told


def _told(updates: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [
        (u["sessionUpdate"], u["toolCallId"] if "toolCallId" in u else u["content"]["text"])
        for u in updates
    ]


async def test_a_long_history_is_replayed_in_order_a_page_at_a_time_holding_one_page(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen()
    await seed_history(rig, ENTRIES, call_at=CALL_AT)
    read = page_reader(rig.controller, rig.model.conversation_id)
    storage = rig.app.harness.session.storage
    page = await storage.scan_entries(rig.model.conversation_id, order="asc", limit=ENTRIES + 1)
    call_entry = next(s.entry.id for s in page.items if s.entry.kind == "pi.assistant")
    size = next(i for i, s in enumerate(page.items) if s.entry.id == call_entry) + 1
    assert 1 < size < ENTRIES  # the call ends the first page; its result starts the second
    log: list[tuple[str, int]] = []  # ("read", entries) and ("sent", updates), in order
    sent: list[dict[str, Any]] = []

    async def counting(after: int, count: int) -> dict[str, Any]:
        found = await read(after, count)
        log.append(("read", len(found["entries"])))
        return found

    def send(updates: list[dict[str, Any]]) -> None:
        log.append(("sent", len(updates)))
        sent.extend(updates)

    transcript = Transcript(rig.model, lambda text: text)
    replayed = await within(replay_history(counting, send, transcript, page=size))

    told = _told(sent)
    assert told == _expected()  # every entry, in order, the call in its place
    [call] = [u for u in sent if u["sessionUpdate"] == "tool_call"]
    assert call["status"] == "completed"
    assert replayed.entries == ENTRIES + 1
    assert replayed.pages == -(-(ENTRIES + 1) // size) > 2
    assert replayed.most_held <= size + 1  # a page, and a card waiting for its result
    reads = [n for kind, n in log if kind == "read"]
    assert max(reads) <= size
    # One send per entry: each page was told whole before the next one was read.
    read_so_far, sends_so_far = 0, 0
    for kind, n in log:
        if kind == "read":
            assert sends_so_far == read_so_far
            read_so_far += n
        else:
            sends_so_far += 1
    assert list(transcript.changes()) == []  # the window counts as told: nothing twice


async def test_an_attached_session_is_replayed_through_the_hosts_history_intent(
    serve: ServeFactory,
) -> None:
    served = await serve()
    await seed_history(served.rig, 700)
    model, controller = await within(attach_screen(served.rig.app.store))
    try:
        sent: list[dict[str, Any]] = []
        read = page_reader(controller, model.conversation_id)
        replayed = await within(
            replay_history(read, sent.extend, Transcript(model, lambda text: text), page=300)
        )
    finally:
        await within(controller.close())
    assert [text for _, text in _told(sent)] == [f"message {n}" for n in range(700)]
    assert replayed.pages == 3
