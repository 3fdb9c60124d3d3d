"""The documents of one transaction: acquisition, retirement and the writes they become.

``Tx.doc`` and ``Tx.retire_doc`` delegate here (R7, R9):

- The first acquisition of an address in a commit is memoized, including
  concurrent ones: they share one load, and for a missing family member the first
  caller's seed wins (later seeds are ignored).
- A load still running when the callback settles rejects the commit (R7):
  ``pending`` tells the Session.
- ``retire`` persists the draft's final content, then retires the incarnation; a
  later acquisition of the same address in the same commit creates a new
  incarnation with a new ID. Retiring an address that has no live incarnation
  (never had one, or this commit already retired it) does nothing.
- ``finish`` turns every draft into storage writes and the ``DocChange``s to
  publish (see ``_drafts``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pi_durable_tui.kernel.docs._definitions import DocDefinition
from pi_durable_tui.kernel.docs._drafts import DocChange, Draft
from pi_durable_tui.kernel.docs._forks import ForkPlanner
from pi_durable_tui.kernel.docs._store import DocumentStore
from pi_durable_tui.storage.json_ops import Json, JsonObject
from pi_durable_tui.storage.records import DocAddress, DocumentRecord
from pi_durable_tui.storage.writes import RetireDocument, Write


class TxDocuments:
    """What one commit does to documents.

    Args:
        store: The Session's committed documents.
        forks: The forks the commit makes (a child document acquired in its forking
            commit starts from the copy's source).
    """

    def __init__(self, store: DocumentStore, forks: ForkPlanner) -> None:
        self._store = store
        self._forks = forks
        self.drafts: dict[DocAddress, Draft] = {}
        """Live drafts by address (retired ones leave this map)."""
        self._retired: list[Draft] = []
        self._retired_addresses: set[DocAddress] = set()
        self._retired_ids: set[int] = set()
        self._retire_writes: list[Write] = []
        self.changes: list[DocChange] = []
        """What the commit did to documents, in order; complete after ``finish``."""
        self._loads: dict[DocAddress, asyncio.Task[Draft]] = {}

    @property
    def touched(self) -> bool:
        """Whether the commit acquired, loads or retired any document."""
        return bool(self.drafts or self._loads or self._retired or self._retire_writes)

    @property
    def pending(self) -> bool:
        """Whether an acquisition is still loading (R7)."""
        return any(not load.done() for load in self._loads.values())

    async def acquire(self, definition: DocDefinition, address: DocAddress, seed: Json) -> Draft:
        """Return the commit's draft at an address, loading or creating it once (R9)."""
        draft = self.drafts.get(address)
        if draft is not None:
            return draft
        load = self._loads.get(address)
        if (
            load is None
            and address not in self._retired_addresses
            and not self._forks.forks_scope(address)
        ):
            # REMINDER: a cached document is drafted at once, with no load task for
            # concurrent callers to share: nothing is awaited, so none can interleave.
            draft = self._store.cached_draft(definition, address, seed)
            if draft is not None:
                self.drafts[address] = draft
                return draft
        if load is None:
            load = asyncio.ensure_future(self._load(definition, address, seed))
            load.add_done_callback(_retrieve)
            self._loads[address] = load
        # Shielded: a cancelled caller must not fail the other callers sharing the load.
        return await asyncio.shield(load)

    async def _load(self, definition: DocDefinition, address: DocAddress, seed: Json) -> Draft:
        try:
            live = address not in self._retired_addresses
            source = await self._forks.source_for(address) if live else None
            draft = await self._store.draft(
                definition, address, seed, live=live, fork_source=source
            )
            self.drafts[address] = draft
            return draft
        finally:
            del self._loads[address]

    async def retire(self, definition: DocDefinition, address: DocAddress) -> bool:
        """Retire the live incarnation at an address after persisting its final content.

        Returns:
            Whether an incarnation was retired.
        """
        if address not in self.drafts:
            if address in self._retired_addresses:
                return False
            if await self._store.current(definition, address) is None:
                return False
        self.retire_draft(await self.acquire(definition, address, None))
        return True

    def retire_draft(self, draft: Draft) -> None:
        """Retire a document this commit acquired; its final content is persisted (R9)."""
        if self.drafts.get(draft.address) is draft:
            del self.drafts[draft.address]
            draft.retired = True
            self._retired.append(draft)
            self._retired_addresses.add(draft.address)
            self._retired_ids.add(draft.document_id)

    def retire_record(self, record: DocumentRecord, value: JsonObject) -> None:
        """Retire a stored incarnation (kernel use, R56); a drafted one retires its draft."""
        for draft in list(self.drafts.values()):
            if draft.document_id == record.id:
                self.retire_draft(draft)
                return
        if record.id in self._retired_ids:
            return
        self._retired_ids.add(record.id)
        self._retired_addresses.add(record.address)
        self._retire_writes.append(RetireDocument(record.id))
        # The version is unknown here and irrelevant: a retirement publishes no value.
        self.changes.append(DocChange(record.address, record, 0, [], value, 0, retired=True))

    def detach(self) -> None:
        """Detach every draft from the callback that edited it (R6; see ``Draft.detach``)."""
        for draft in (*self._retired, *self.drafts.values()):
            draft.detach()

    def filter_values(self, fn: Callable[[Json], Json]) -> None:
        """Replace every draft's value by ``fn(value)`` (before ``finish``)."""
        for draft in (*self._retired, *self.drafts.values()):
            value = fn(draft.value)
            if value is not draft.value:
                if not isinstance(value, dict):
                    raise TypeError(f"{draft.where}: the commit filter returned a non-object")
                draft.value = value

    def finish(self, seq_hint: int) -> list[Write]:
        """Return the document writes of the commit and record the changes to publish.

        Raises:
            TypeError: A non-JSON value in a draft (message names its path).
            ValueError: A non-finite number or a cycle in a draft (path named).
            Exception: Whatever a ``checkpoint_when`` raises (R13).
        """
        writes = list(self._retire_writes)
        for draft in (*self._retired, *self.drafts.values()):
            draft_writes, change = draft.finish(seq_hint)
            writes.extend(draft_writes)
            if change is not None:
                self.changes.append(change)
        return writes

    def changed_ids(self) -> set[int]:
        """IDs of stored incarnations the commit changes or retires (after ``finish``)."""
        return {change.record.id for change in self.changes if not change.created}

    def written_addresses(self) -> set[DocAddress]:
        """Addresses whose documents the commit wrote itself (fork copies skip them)."""
        return set(self.drafts) | self._retired_addresses

    def close(self) -> None:
        """Stop loads nobody will use (the commit settled without them)."""
        for load in list(self._loads.values()):
            load.cancel()


def _retrieve(task: asyncio.Task[Draft]) -> None:
    # A load whose callers were all cancelled must not log "exception never retrieved".
    if not task.cancelled():
        task.exception()
