"""Runs the storage conformance suite against every backend (DESIGN.md section 4).

``MemoryStorage`` is the reference semantics. ``SqliteStorage`` (default
``synchronous="NORMAL"``) and ``JsonlStorage`` (``fsync=False``) are imported
lazily: a backend whose module does not exist yet is skipped, while any other
import error fails the run.
"""

from __future__ import annotations

from pathlib import Path

from pi_durable_tui.storage import JsonlStorage, MemoryStorage, SqliteStorage
from pi_durable_tui.storage.conformance import StorageConformance
from pi_durable_tui.storage.protocol import Storage


class TestMemoryStorage(StorageConformance):
    persistent = False

    async def open_storage(self, directory: Path) -> Storage:
        return MemoryStorage()


class TestSqliteStorage(StorageConformance):
    async def open_storage(self, directory: Path) -> Storage:
        opened: Storage = await SqliteStorage.open(directory / "store.sqlite")
        return opened


class TestJsonlStorage(StorageConformance):
    async def open_storage(self, directory: Path) -> Storage:
        opened: Storage = await JsonlStorage.open(directory, fsync=False)
        return opened
