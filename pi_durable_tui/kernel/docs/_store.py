"""The Session's committed documents: a bounded cache and the typed reads (R9, R15, R19, R20).

``DocumentStore`` answers "what is the committed value of the document at this
address" for snapshots, states, watches and transactions, from a bounded LRU
cache in front of storage. It only ever holds committed values: a commit's
changes enter the cache in ``adopt``, after storage confirmed them (R2), so a
commit that fails or is rejected leaves no trace here.

Values in the cache are kernel-owned and shared with publications; they are
never mutated and never handed out without a copy (R10).

Reads never create anything (R9). Typed access checks the stored incarnation
against the definition (scope, history, fork, version) and migrates older
versions in memory only (R15); the next ``tx.doc`` writes the current-version
base (see ``_drafts``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from pi_durable_tui.kernel._errors import DocumentAccessError
from pi_durable_tui.kernel.docs._definitions import DocDefinition
from pi_durable_tui.kernel.docs._drafts import DocChange, Draft
from pi_durable_tui.storage.json_ops import Json, JsonObject, copy_json
from pi_durable_tui.storage.protocol import Storage
from pi_durable_tui.storage.records import DocAddress, DocumentRecord

CACHE_LIMIT = 4096


@dataclass(slots=True)
class DocSlot:
    """The committed state of one live incarnation."""

    record: DocumentRecord
    version: int
    value: JsonObject
    """Committed value at ``version``; kernel-owned, copied before it leaves."""
    deltas_since_base: int


class DocumentStore:
    """Committed documents of one Session, cached in front of storage.

    Args:
        storage: The Session's backend.
        limit: How many addresses and incarnations the cache keeps.
    """

    def __init__(self, storage: Storage, limit: int = CACHE_LIMIT) -> None:
        self._storage = storage
        self._limit = limit
        self._ids: OrderedDict[DocAddress, int | None] = OrderedDict()
        """Address -> live incarnation ID, or ``None`` when known to be absent."""
        self._slots: OrderedDict[int, DocSlot] = OrderedDict()
        self._epoch = 0

    # -- the cache --

    def cached(self, address: DocAddress) -> tuple[bool, DocSlot | None]:
        """What the cache knows of an address: ``(known, slot)``.

        Returns:
            ``(True, slot)`` for a cached incarnation, ``(True, None)`` for an address
            known to be absent, ``(False, None)`` when ``load`` must read storage.
        """
        if address not in self._ids:
            return False, None
        document_id = self._ids[address]
        if document_id is None:
            return True, None
        slot = self._slots.get(document_id)
        return slot is not None, slot

    async def load(self, address: DocAddress) -> DocSlot | None:
        """Return the committed live incarnation at an address, or ``None``."""
        known, slot = self.cached(address)
        if known:
            return slot
        epoch = self._epoch
        record = await self._storage.find_document(address)
        read = None if record is None else await self._storage.document(record.id)
        slot = None
        if read is not None:
            slot = DocSlot(read.record, read.version, read.value, read.deltas_since_base)
        if epoch == self._epoch:  # REMINDER: never cache a read that a commit overtook.
            if slot is None:
                self._remember_absent(address)
            else:
                self._remember(address, slot)
        return slot

    def adopt(self, changes: Iterable[DocChange], copied: Iterable[DocAddress]) -> None:
        """Take in what a stored commit did to documents (before it is published, R2).

        Args:
            changes: The commit's document changes, stamped with its seq.
            copied: Addresses where the commit created fork copies (read on demand).
        """
        self._epoch += 1
        for change in changes:
            record = change.record
            if change.retired:
                self._slots.pop(record.id, None)
                if self._ids.get(change.address) == record.id:
                    self._remember_absent(change.address)
            else:
                self._remember(
                    change.address,
                    DocSlot(record, change.version, change.value, change.deltas_since_base),
                )
        for address in copied:
            self._ids.pop(address, None)

    def _remember(self, address: DocAddress, slot: DocSlot) -> None:
        self._ids[address] = slot.record.id
        self._ids.move_to_end(address)
        self._slots[slot.record.id] = slot
        self._slots.move_to_end(slot.record.id)
        self._trim()

    def _remember_absent(self, address: DocAddress) -> None:
        self._ids[address] = None
        self._ids.move_to_end(address)
        self._trim()

    def _trim(self) -> None:
        while len(self._slots) > self._limit:
            self._slots.popitem(last=False)
        while len(self._ids) > self._limit:
            self._ids.popitem(last=False)

    # -- typed reads --

    async def current(self, definition: DocDefinition, address: DocAddress) -> DocSlot | None:
        """Return the live incarnation after checking it fits the definition (R15).

        Raises:
            DocumentAccessError: When scope, history or fork policy differ.
        """
        slot = await self.load(address)
        if slot is not None:
            definition.check_record(slot.record)
        return slot

    async def value(self, definition: DocDefinition, address: DocAddress) -> JsonObject | None:
        """Return the committed value at the definition's version (not copied), or ``None``.

        Raises:
            DocumentAccessError: When the stored document does not fit (R15).
        """
        slot = await self.current(definition, address)
        return None if slot is None else definition.upgrade(slot.value, slot.version)

    async def value_as_of(
        self, definition: DocDefinition, conversation_id: int, at: int, key: str | None
    ) -> JsonObject | None:
        """Return a rewindable conversation document as of an entry (R19, R20).

        The value is the final state of the commit that holds entry ``at``, read in
        the conversation that owns ``at`` (an ancestor for an inherited entry).

        Raises:
            DocumentAccessError: For a current-only document, an entry not visible from
                the conversation, or a stored document that does not fit (R15).
        """
        if definition.current_only:
            raise DocumentAccessError(
                f"Document {definition.kind} does not retain historical content"
            )
        stored = await self._storage.entry(at, conversation_id)
        if stored is None:
            raise DocumentAccessError(
                f"Entry {at} is not visible from conversation {conversation_id}"
            )
        address = definition.address(stored.entry.conversation_id, key)
        record = await self._storage.find_document(address, stored.commit_seq)
        if record is None:
            return None
        definition.check_record(record)
        read = await self._storage.document(record.id, stored.commit_seq)
        if read is None:
            return None
        return copy_json(definition.upgrade(read.value, read.version))  # type: ignore[return-value]

    # -- drafts --

    async def draft(
        self,
        definition: DocDefinition,
        address: DocAddress,
        seed: Json,
        *,
        live: bool,
        fork_source: tuple[DocumentRecord, int] | None,
    ) -> Draft:
        """Start the draft of a document for a transaction (R9, R15, R17).

        Args:
            definition: The document kind.
            address: Where the document lives.
            seed: The family seed, used only when the document is created.
            live: False when this commit already retired the incarnation at the
                address, so the draft must be a new one.
            fork_source: For a child document of a fork made in this commit, the
                parent incarnation and seq the copy would come from.

        Raises:
            DocumentAccessError: When the stored document (or the fork source) does
                not fit the definition.
        """
        slot = await self.current(definition, address) if live else None
        if slot is not None:
            return _draft_of(definition, address, slot)
        value = None
        if fork_source is not None:
            # A child document acquired in its forking commit starts from what the copy
            # would have had, and is written as a creation (R17, forks module).
            record, at = fork_source
            definition.check_record(record)
            # A current-only source is copied as it is now (``current`` policy, R17), and
            # storage refuses a numeric read of it (R20).
            read = await self._storage.document(record.id, None if record.current_only else at)
            if read is not None:
                value = _copy_object(definition.upgrade(read.value, read.version))
        return self._created(definition, address, seed, value)

    def cached_draft(
        self, definition: DocDefinition, address: DocAddress, seed: Json
    ) -> Draft | None:
        """``draft`` without a read, when the cache knows the address; else ``None``.

        For a live address of a commit that makes no fork of its scope (the caller
        checks): what ``draft`` would return, with nothing to await (issue 14).

        Raises:
            DocumentAccessError: When the cached document does not fit (R15).
        """
        known, slot = self.cached(address)
        if not known:
            return None
        if slot is None:
            return self._created(definition, address, seed, None)
        definition.check_record(slot.record)
        return _draft_of(definition, address, slot)

    def _created(
        self, definition: DocDefinition, address: DocAddress, seed: Json, value: JsonObject | None
    ) -> Draft:
        if value is None:
            value = definition.initial_value(seed)
        minted = self._storage.mint_id()
        return Draft(definition, address, minted, None, {}, definition.version, 0, value)


def _draft_of(definition: DocDefinition, address: DocAddress, slot: DocSlot) -> Draft:
    base = definition.upgrade(slot.value, slot.version)
    return Draft(
        definition,
        address,
        slot.record.id,
        slot.record,
        base,
        slot.version,
        slot.deltas_since_base,
        _copy_object(base),
    )


def _copy_object(value: JsonObject) -> JsonObject:
    copied = copy_json(value)
    assert isinstance(copied, dict)
    return copied
