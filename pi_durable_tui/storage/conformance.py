"""The storage conformance suite: one set of tests every ``Storage`` backend passes.

It checks every rule of the contract in ``pi_durable_tui.storage.protocol`` (and
the shapes of the records in ``records``) through the public API only, so it
runs unchanged against ``MemoryStorage``, ``SqliteStorage``, ``JsonlStorage`` and
any backend someone writes later. It needs ``pytest`` and ``pytest-asyncio`` in
``asyncio_mode = "auto"``; importing it is for test code only.

Usage: subclass ``StorageConformance`` in a ``Test...`` class and say how to open
a store in a directory the suite gives you (empty the first time, the same one
on every reopen)::

    from pathlib import Path

    from pi_durable_tui.storage.conformance import StorageConformance
    from my_backend import MyStorage


    class TestMyStorage(StorageConformance):
        persistent = True  # False: the tests that reopen the store are left out

        async def open_storage(self, directory: Path) -> MyStorage:
            return await MyStorage.open(directory / "store.db")

``reopen(storage)`` closes the instance and calls ``open_storage`` again on the
same directory; override it if your backend needs more. Every test names the
rule it checks in its name and docstring; tests with a ``phase`` parameter run
twice, the second time reopening the store midway. ``snapshot`` and
``canonical`` (everything a store answers, as comparable JSON) are exported for
differential tests.

Groups (one module each under ``_conformance``): ``commits`` (seqs, atomicity,
IDs and minting, written-once records, references, moves, request IDs, strict
JSON, detached copies), ``strings`` (lossless strings, lone surrogates
included), ``history`` (forks, entry lookups and scans, head markers, unknown
conversations), ``scans`` (paging in both orders, cursors, limits, filters),
``documents``
(lifetimes, bases and deltas, versions, history, reclamation), ``copies``
(``document.copy`` and R18) and ``persistence`` (what survives a reopen).
"""

from __future__ import annotations

from pi_durable_tui.storage._conformance.base import ConformanceBase
from pi_durable_tui.storage._conformance.commits import (
    CommitRules,
    IdRules,
    ImmutabilityAndReferenceRules,
    JsonAndCopyRules,
)
from pi_durable_tui.storage._conformance.copies import CopyRules
from pi_durable_tui.storage._conformance.documents import (
    DocumentContentRules,
    DocumentLifetimeRules,
)
from pi_durable_tui.storage._conformance.history import HistoryRules
from pi_durable_tui.storage._conformance.persistence import PersistenceRules
from pi_durable_tui.storage._conformance.scans import FilterRules, PagingRules
from pi_durable_tui.storage._conformance.snapshot import canonical, snapshot
from pi_durable_tui.storage._conformance.strings import StringRules

__all__ = ["StorageConformance", "canonical", "snapshot"]


class StorageConformance(
    CommitRules,
    IdRules,
    ImmutabilityAndReferenceRules,
    JsonAndCopyRules,
    StringRules,
    HistoryRules,
    PagingRules,
    FilterRules,
    DocumentLifetimeRules,
    DocumentContentRules,
    CopyRules,
    PersistenceRules,
    ConformanceBase,
):
    """Every conformance test; subclass it as ``Test<Backend>`` and define ``open_storage``.

    Not collected by itself: pytest collects only classes named ``Test*``.
    """
