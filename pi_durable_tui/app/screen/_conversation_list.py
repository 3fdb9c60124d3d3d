"""The conversations a session holds, as the conversation picker lists them (issue 12).

The main conversation first, then subagents and forks newest first, each named
by ``_names`` (never a bare id) and marked when it is shown or busy.
"""

from __future__ import annotations

from pi_durable_tui.app._view import ConversationInfo
from pi_durable_tui.app.agent import AgentApp
from pi_durable_tui.app.screen._names import conversation_label, entry_text
from pi_durable_tui.harness import LIVE_DOC

_PAGE = 200


async def list_conversations(app: AgentApp, shown_id: int) -> list[ConversationInfo]:
    """The session's conversations: the main one, then the others newest first.

    Args:
        app: The open session.
        shown_id: The conversation the screen shows.
    """
    storage = app.harness.session.storage
    found: list[ConversationInfo] = []
    cursor = None
    while True:
        page = await storage.scan_conversations(limit=_PAGE, cursor=cursor)
        for record in page.items:
            first = await storage.scan_entries(record.id, order="asc", limit=5)
            users = (entry_text(s.entry) for s in first.items if s.entry.kind == "pi.user")
            title = next(users, "")
            label = conversation_label(record.id, record.owner is not None, app.root.id)
            live = await app.harness.session.snapshot(LIVE_DOC, record.id) or {}
            found.append(
                ConversationInfo(
                    record.id, label, title[:80], shown=record.id == shown_id, busy="run" in live
                )
            )
        if page.cursor is None:
            break
        cursor = page.cursor
    main = [c for c in found if c.conversation_id == app.root.id]
    others = [c for c in found if c.conversation_id != app.root.id]
    return main + sorted(others, key=lambda c: -c.conversation_id)
