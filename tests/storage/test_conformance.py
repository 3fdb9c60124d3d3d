"""Runs the storage conformance suite against every backend (DESIGN.md section 4).

``MemoryStorage`` is the reference semantics. ``SqliteStorage`` (default
``synchronous="NORMAL"``) and ``JsonlStorage`` (``fsync=False``) are imported
lazily: a backend whose module does not exist yet is skipped, while any other
import error fails the run.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.storage import MemoryStorage
from pi_durable_tui.storage.conformance import StorageConformance
from pi_durable_tui.storage.protocol import Storage


def backend(module: str, name: str) -> Any:
    """Import a backend class, skipping only while its module does not exist."""
    try:
        return getattr(importlib.import_module(f"pi_durable_tui.storage.{module}"), name)
    except ModuleNotFoundError as error:
        if error.name != f"pi_durable_tui.storage.{module}":
            raise
        pytest.skip(f"pi_durable_tui.storage.{module} does not exist yet")


class TestMemoryStorage(StorageConformance):
    persistent = False

    async def open_storage(self, directory: Path) -> Storage:
        return MemoryStorage()


class TestSqliteStorage(StorageConformance):
    async def open_storage(self, directory: Path) -> Storage:
        opened: Storage = await backend("sqlite", "SqliteStorage").open(directory / "store.sqlite")
        return opened


class TestJsonlStorage(StorageConformance):
    async def open_storage(self, directory: Path) -> Storage:
        opened: Storage = await backend("jsonl", "JsonlStorage").open(directory, fsync=False)
        return opened
