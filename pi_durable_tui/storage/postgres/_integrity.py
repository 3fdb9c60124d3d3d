"""The PostgreSQL store's consistency check: its rows against each other (R129).

SQLite has ``integrity_check``; a PostgreSQL server keeps its own files sound,
so what can go wrong is the store's rows: a record naming a missing parent
(the deferred foreign keys should make that impossible), a live document
without a base, a revision of another seq than any commit made, or a store row
behind its newest entry. ``problems`` runs one query per check, each a scan of
this store's rows (linear in the store: for crash tests and repair tools, never
on open).
"""

from __future__ import annotations

import asyncpg

from pi_durable_tui.storage.postgres._schema import SCHEMA

_CHECKS: tuple[tuple[str, str], ...] = (
    (
        "entry {} names a missing conversation",
        f"SELECT e.id FROM {SCHEMA}.entries e WHERE e.store = $1 AND NOT EXISTS"
        f" (SELECT 1 FROM {SCHEMA}.conversations c WHERE c.store = $1"
        " AND c.id = e.conversation_id)",
    ),
    (
        "task {} names a missing conversation",
        f"SELECT t.id FROM {SCHEMA}.tasks t WHERE t.store = $1 AND NOT EXISTS"
        f" (SELECT 1 FROM {SCHEMA}.conversations c WHERE c.store = $1"
        " AND c.id = t.conversation_id)",
    ),
    (
        "submission {} names a missing conversation",
        f"SELECT s.id FROM {SCHEMA}.submissions s WHERE s.store = $1 AND NOT EXISTS"
        f" (SELECT 1 FROM {SCHEMA}.conversations c WHERE c.store = $1"
        " AND c.id = s.conversation_id)",
    ),
    (
        "conversation {} forks from a missing conversation",
        f"SELECT c.id FROM {SCHEMA}.conversations c WHERE c.store = $1"
        " AND c.parent_id IS NOT NULL AND NOT EXISTS"
        f" (SELECT 1 FROM {SCHEMA}.conversations p WHERE p.store = $1 AND p.id = c.parent_id)",
    ),
    (
        "a revision names missing document {}",
        f"SELECT DISTINCT r.document_id FROM {SCHEMA}.document_revisions r WHERE r.store = $1"
        f" AND NOT EXISTS (SELECT 1 FROM {SCHEMA}.documents d WHERE d.store = $1"
        " AND d.id = r.document_id)",
    ),
    (
        "live document {} has no base",
        f"SELECT d.id FROM {SCHEMA}.documents d WHERE d.store = $1 AND d.retired_at IS NULL"
        f" AND NOT EXISTS (SELECT 1 FROM {SCHEMA}.document_revisions r WHERE r.store = $1"
        " AND r.document_id = d.id AND r.kind = 'base')",
    ),
    (
        "entry {} carries a seq no commit made yet",
        f"SELECT e.id FROM {SCHEMA}.entries e WHERE e.store = $1 AND e.seq >= $2",
    ),
    (
        "document {} has a revision of a seq no commit made yet",
        f"SELECT DISTINCT r.document_id FROM {SCHEMA}.document_revisions r"
        " WHERE r.store = $1 AND r.seq >= $2",
    ),
)


async def problems(conn: asyncpg.Connection, store: int, next_seq: int) -> list[str]:
    """Return what is inconsistent in the store's rows (empty: sound).

    Args:
        conn: The store's connection.
        store: The store's ID.
        next_seq: The seq the next commit will get.
    """
    found: list[str] = []
    for message, query in _CHECKS:
        params = (store, next_seq) if "$2" in query else (store,)
        for row in await conn.fetch(query + " LIMIT 20", *params):
            found.append(message.format(row[0]))
    return found
