"""What every storage backend shares: the ID counter, the newest seq, the task scan's face.

Every backend mints IDs the same way (R-1.2: above every committed or minted
ID, refused past ``MAX_ID``), answers ``last_seq`` from its newest adopted
commit and takes the eight keywords of ``Storage.scan_tasks``. ``StorageBackend``
writes these once; a backend sets ``_seq`` and ``_next_id``, defines
``_check_open`` and ``_scan_tasks``, and overrides ``_fresh_id`` or
``last_seq`` only where its bookkeeping lives elsewhere (JSONL keeps both in its
index).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from pi_durable_tui.storage.errors import StorageRejected
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.protocol import DEFAULT_PAGE, ScanOrder
from pi_durable_tui.storage.records import MAX_ID, Page, TaskRecord, TaskStatus


class TaskFilters(NamedTuple):
    """The filters of a task scan, as the caller gave them; every given one must match."""

    conversation_id: int | None
    kind: str | None
    status: TaskStatus | Sequence[TaskStatus] | None
    abort_requested: bool | None
    background: bool | None


class StorageBackend:
    """The base of the backends: ``last_seq``, ``mint_id`` and ``scan_tasks`` written once."""

    _seq: int
    _next_id: int

    @property
    def last_seq(self) -> int:
        """The sequence number of the newest commit (0 for an empty store)."""
        return self._seq

    def mint_id(self) -> int:
        """Return a fresh ID above every committed or previously minted one (no I/O).

        Raises:
            StorageRejected: With ``ID space is exhausted`` past ``MAX_ID``.
        """
        self._check_open()
        minted = self._fresh_id()
        if minted > MAX_ID:
            raise StorageRejected("ID space is exhausted")
        self._next_id = minted + 1
        return minted

    async def scan_tasks(
        self,
        *,
        conversation_id: int | None = None,
        kind: str | None = None,
        status: TaskStatus | Sequence[TaskStatus] | None = None,
        abort_requested: bool | None = None,
        background: bool | None = None,
        order: ScanOrder | None = None,
        limit: int = DEFAULT_PAGE,
        cursor: JsonObject | None = None,
    ) -> Page[TaskRecord]:
        """Scan tasks by ID; every given filter must match."""
        filters = TaskFilters(conversation_id, kind, status, abort_requested, background)
        return await self._scan_tasks(filters, order, limit, cursor)

    def _fresh_id(self) -> int:
        """The next ID to mint, before the ``MAX_ID`` check."""
        return self._next_id

    def _check_open(self) -> None:
        """Refuse a call on a store that cannot serve it."""
        raise NotImplementedError

    async def _scan_tasks(
        self, filters: TaskFilters, order: ScanOrder | None, limit: int, cursor: JsonObject | None
    ) -> Page[TaskRecord]:
        raise NotImplementedError
