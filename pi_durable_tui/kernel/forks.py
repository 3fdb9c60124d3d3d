"""Fork document copies (R17, R18).

A fork's child sees the parent's entries through the fork entry; no entry is
copied. Each parent conversation document is copied by its stored fork policy:

- ``asOf``: the parent's value as of the fork entry's commit;
- ``current``: the parent's committed value when the fork commits (a fork commit
  that also changes such a document is rejected: the source must be unambiguous);
- ``initial``: nothing; the child creates it fresh on first access.

Task documents are never copied and session documents stay shared. When the
forking commit itself acquires a child document (the harness's creation hook
does), the draft starts from the value the copy would have had and is written as
a creation, so the copy and the draft never collide.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from pi_durable_tui.kernel.errors import KernelError
from pi_durable_tui.storage.records import (
    ConversationRecord,
    ConversationScope,
    DocAddress,
    DocumentRecord,
    ScopeRef,
    StoredEntry,
)
from pi_durable_tui.storage.writes import CopyDocument, Write

if TYPE_CHECKING:
    from pi_durable_tui.kernel.session import Session
    from pi_durable_tui.kernel.tx import Tx


async def _scan_documents(
    session: Session, conversation_id: int, at: int | None
) -> AsyncIterator[DocumentRecord]:
    cursor = None
    while True:
        page = await session.storage.scan_documents(
            ScopeRef("conversation", conversation_id), at=at, limit=200, cursor=cursor
        )
        for record in page.items:
            yield record
        if page.cursor is None:
            return
        cursor = page.cursor


async def fork_entry(session: Session, fork: ConversationRecord) -> StoredEntry:
    """Return the committed fork entry, checking it is visible from the parent (R26).

    Raises:
        KernelError: When the entry is not a committed entry visible from the parent.
    """
    assert fork.parent is not None
    parent_id, at = fork.parent.conversation_id, fork.parent.at
    stored = await session.storage.entry(at, parent_id)
    if stored is None:
        raise KernelError(
            f"Cannot fork conversation {parent_id} at entry {at}: the entry is not visible there"
        )
    return stored


async def fork_sources(
    session: Session, fork: ConversationRecord
) -> list[tuple[DocumentRecord, int]]:
    """Return the parent documents a fork copies, each with the seq to copy it at."""
    assert fork.parent is not None
    stored = await fork_entry(session, fork)
    sources: list[tuple[DocumentRecord, int]] = []
    parent_id = fork.parent.conversation_id
    async for record in _scan_documents(session, parent_id, stored.commit_seq):
        if isinstance(record.scope, ConversationScope) and record.scope.fork == "asOf":
            sources.append((record, stored.commit_seq))
    async for record in _scan_documents(session, parent_id, None):
        if isinstance(record.scope, ConversationScope) and record.scope.fork == "current":
            sources.append((record, session.storage.last_seq))
    return sources


def _child_address(record: DocumentRecord, child_id: int) -> DocAddress:
    return DocAddress(record.kind, ScopeRef("conversation", child_id), record.key)


async def fork_source_for(
    session: Session, tx: Tx, address: DocAddress
) -> tuple[DocumentRecord, int] | None:
    """Return what a child document acquired in its forking commit starts from, if anything."""
    if address.scope.kind != "conversation":
        return None
    for fork in tx.forks:
        if fork.id == address.scope.id:
            for record, at in await fork_sources(session, fork):
                if _child_address(record, fork.id) == address:
                    return record, at
    return None


async def plan_fork_copies(session: Session, tx: Tx) -> list[Write]:
    """Return the copy writes of every fork in a commit (after drafts are finished).

    Raises:
        KernelError: When the commit also changes a parent document with fork
            policy ``current`` (R18), or a fork entry is not visible.
    """
    writes: list[Write] = []
    for fork in tx.forks:
        for record, at in await fork_sources(session, fork):
            scope = record.scope
            assert isinstance(scope, ConversationScope)
            if scope.fork == "current" and tx.changed_document(record.id):
                raise KernelError(
                    f"A commit that forks conversation {scope.conversation_id} cannot also change "
                    f"its fork: current document {record.kind}"
                )
            address = _child_address(record, fork.id)
            if address in tx.drafts or tx.retired_in_this_commit(address):
                continue  # the draft already created the child's document from this source
            writes.append(
                CopyDocument(
                    id=session.storage.mint_id(),
                    kind=record.kind,
                    scope=ConversationScope(fork.id, scope.history, scope.fork),
                    source_id=record.id,
                    source_at=at,
                    key=record.key,
                )
            )
            session.forget_address(address)
    return writes
