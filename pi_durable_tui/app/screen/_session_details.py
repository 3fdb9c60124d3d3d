"""What ``/session`` lists about the open session, read from committed state.

``session_details`` is what the process holding the store knows: where the
store is (a database URL with its password hidden), the session's ID and when
it was created (its directory's name), its name (``pi.session``), the entries
of the shown conversation, the spend of every conversation (``Harness.usage``,
R116), the subagent conversations and the live background tasks. A session's
host answers an attached client's ``session`` call with the same values; each
screen then adds what its footer shows of its own conversation
(``SessionDetails.with_footer``).
"""

from __future__ import annotations

from pi_durable_tui.app._view import SessionDetails
from pi_durable_tui.app.agent import AgentApp
from pi_durable_tui.app.files import (
    database_url,
    describe_store,
    session_created_ms,
    session_dir_id,
)
from pi_durable_tui.app.screen._session_name import session_name
from pi_durable_tui.storage import LIVE_TASK_STATUSES

ENTRIES_CAP = 100_000
"""Entries counted at most: past it ``/session`` says ``100000+`` rather than read them all."""
_PAGE = 1000


async def session_details(app: AgentApp, conversation_id: int) -> SessionDetails:
    """The session's facts for ``/session``, with the entries of ``conversation_id``.

    The shown conversation's own figures (model, context use) are the footer's:
    the caller adds them with ``with_footer``.
    """
    storage = app.harness.session.storage
    entries, capped = await _count_entries(app, conversation_id)
    usage = await app.harness.usage()
    cost = usage.get("cost") if isinstance(usage.get("cost"), dict) else {}
    subagents = 0
    cursor = None
    while True:
        page = await storage.scan_conversations(limit=_PAGE, cursor=cursor)
        subagents += sum(record.owner is not None for record in page.items)
        if page.cursor is None:
            break
        cursor = page.cursor
    background = 0
    cursor = None
    while True:
        tasks = await storage.scan_tasks(
            background=True, status=LIVE_TASK_STATUSES, limit=_PAGE, cursor=cursor
        )
        background += len(tasks.items)
        if tasks.cursor is None:
            break
        cursor = tasks.cursor
    return SessionDetails(
        store=_store_text(app),
        session_id=session_dir_id(app.store),
        created_ms=session_created_ms(app.store),
        name=await session_name(app),
        entries=entries,
        entries_capped=capped,
        tokens_in=int(usage.get("input") or 0),
        tokens_out=int(usage.get("output") or 0),
        cache_read=int(usage.get("cache_read") or 0),
        cache_write=int(usage.get("cache_write") or 0),
        cost=float((cost or {}).get("total") or 0.0),
        subagents=subagents,
        background_tasks=background,
        cwd=app.where(app.workspace),
    )


def _store_text(app: AgentApp) -> str:
    """The store file, or the database without its password and the store's name in it."""
    named = describe_store(app.store)
    if named == str(app.store):
        return named
    # REMINDER: a database URL may hold a password: only its redacted form is shown.
    from pi_durable_tui.storage.postgres import redact  # loaded only for a database

    return f"{redact(database_url() or '')} (store {named})"


async def _count_entries(app: AgentApp, conversation_id: int) -> tuple[int, bool]:
    """The entries of a conversation's visible history, up to ``ENTRIES_CAP``."""
    storage = app.harness.session.storage
    count = 0
    cursor = None
    while count < ENTRIES_CAP:
        page = await storage.scan_entries(conversation_id, order="asc", limit=_PAGE, cursor=cursor)
        count += len(page.items)
        if page.cursor is None:
            return count, False
        cursor = page.cursor
    return count, True
