"""Fork document copies (R17, R18, R26).

A fork's child sees the parent's entries through the fork entry E; no entry is
copied. Each parent conversation document is copied by its stored fork policy:

- ``asOf``: the value as of E's commit (the final state of the commit holding E).
  It is read in the conversation that owns E: for an entry the parent inherited
  from its own parent, that is the ancestor's history, exactly what
  ``snapshot_as_of(parent, E)`` returns (R19);
- ``current``: the parent's committed value when the fork commits (a fork commit
  that also changes such a document is rejected: the source must be unambiguous,
  R18);
- ``initial``: nothing; the child creates it fresh on first access.

Copies are new incarnations that keep unknown kinds and stored versions (the
backend copies the stored content). Task documents are never copied and session
documents stay shared. When the forking commit itself acquires a child document
(the harness's creation hook does), the draft starts from the value the copy
would have had and is written as a creation, so the copy and the draft never
collide.

The fork entry must be a committed entry visible from the parent (R26).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence

from pi_durable_tui.kernel._errors import KernelError
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.records import (
    ConversationRecord,
    ConversationScope,
    DocAddress,
    DocumentRecord,
    ScopeRef,
)
from pi_durable_tui.storage.writes import CopyDocument

ForkSource = tuple[DocumentRecord, int]
"""A parent incarnation and the seq its content is copied at."""


async def _scan_documents(
    storage: Storage, conversation_id: int, at: int | None
) -> AsyncIterator[DocumentRecord]:
    cursor = None
    while True:
        page = await storage.scan_documents(
            ScopeRef("conversation", conversation_id), at=at, limit=200, cursor=cursor
        )
        for record in page.items:
            yield record
        if page.cursor is None:
            return
        cursor = page.cursor


class ForkPlanner:
    """The document sources of the forks one commit makes (read once per fork).

    Args:
        storage: The Session's backend (committed state only).
        forks: The commit's fork records, in the order they were made.
    """

    def __init__(self, storage: Storage, forks: Sequence[ConversationRecord]) -> None:
        self._storage = storage
        self._forks = forks
        self._sources: dict[int, list[ForkSource]] = {}

    async def sources(self, fork: ConversationRecord) -> list[ForkSource]:
        """Return the parent documents a fork copies, each with the seq to copy it at.

        Raises:
            KernelError: When the fork entry is not a committed entry visible from the
                parent (R26).
        """
        if fork.id not in self._sources:
            self._sources[fork.id] = await self._read_sources(fork)
        return self._sources[fork.id]

    async def _read_sources(self, fork: ConversationRecord) -> list[ForkSource]:
        assert fork.parent is not None
        parent_id, at = fork.parent.conversation_id, fork.parent.at
        stored = await self._storage.entry(at, parent_id)
        if stored is None:
            raise KernelError(
                f"Cannot fork conversation {parent_id} at entry {at}: "
                "the entry is not visible there"
            )
        sources: list[ForkSource] = []
        # REMINDER: asOf reads the conversation that owns E, not always the parent (R19).
        owner = stored.entry.conversation_id
        async for record in _scan_documents(self._storage, owner, stored.commit_seq):
            if isinstance(record.scope, ConversationScope) and record.scope.fork == "asOf":
                sources.append((record, stored.commit_seq))
        async for record in _scan_documents(self._storage, parent_id, None):
            if isinstance(record.scope, ConversationScope) and record.scope.fork == "current":
                sources.append((record, self._storage.last_seq))
        return sources

    def forks_scope(self, address: DocAddress) -> bool:
        """Whether a fork of this commit could be the source of a document at ``address``."""
        return address.scope.kind == "conversation" and any(
            fork.id == address.scope.id for fork in self._forks
        )

    async def source_for(self, address: DocAddress) -> ForkSource | None:
        """Return what a child document acquired in its forking commit starts from."""
        if address.scope.kind != "conversation":
            return None
        for fork in self._forks:
            if fork.id == address.scope.id:
                for source in await self.sources(fork):
                    if child_address(source[0], fork.id) == address:
                        return source
        return None

    async def copies(
        self, changed: set[int], drafted: set[DocAddress], mint_id: Callable[[], int]
    ) -> list[CopyDocument]:
        """Return the copy writes of every fork of the commit (after drafts are finished).

        Args:
            changed: IDs of stored documents the commit changes or retires.
            drafted: Child addresses the commit wrote itself (no copy is needed).
            mint_id: Mints the IDs of the copies.

        Raises:
            KernelError: When the commit also changes a parent document with fork
                policy ``current`` (R18), or a fork entry is not visible (R26).
        """
        writes: list[CopyDocument] = []
        for fork in self._forks:
            for record, at in await self.sources(fork):
                scope = record.scope
                assert isinstance(scope, ConversationScope)
                if scope.fork == "current" and record.id in changed:
                    raise KernelError(
                        f"A commit that forks conversation {scope.conversation_id} cannot "
                        f"also change its fork: current document {record.kind}"
                    )
                if child_address(record, fork.id) in drafted:
                    continue  # the draft already created the child's document from this source
                writes.append(
                    CopyDocument(
                        id=mint_id(),
                        kind=record.kind,
                        scope=ConversationScope(fork.id, scope.history, scope.fork),
                        source_id=record.id,
                        source_at=at,
                        key=record.key,
                    )
                )
        return writes


def child_address(record: DocumentRecord, child_id: int) -> DocAddress:
    """Return the address a parent document's copy takes in a child conversation."""
    return DocAddress(record.kind, ScopeRef("conversation", child_id), record.key)


def copy_address(write: CopyDocument) -> DocAddress:
    """Return the address a copy write creates."""
    return DocAddress(write.kind, ScopeRef.of(write.scope), write.key)
