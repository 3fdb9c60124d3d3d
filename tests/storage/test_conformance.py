"""Runs the storage conformance suite against every backend (DESIGN.md section 4).

``MemoryStorage`` is the reference semantics. ``SqliteStorage`` (default
``synchronous="NORMAL"``) and ``JsonlStorage`` (``fsync=False``) are imported
lazily: a backend whose module does not exist yet is skipped, while any other
import error fails the run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_durable_tui.storage import JsonlStorage, MemoryStorage, PostgresStorage, SqliteStorage
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


def test_a_backend_that_is_not_persistent_has_no_reopen_tests_rather_than_skipped_ones() -> None:
    tests = {name for name in dir(TestMemoryStorage) if callable(getattr(TestMemoryStorage, name))}
    persistent = {name for name in dir(TestSqliteStorage) if name.startswith("test_")}

    assert "test_seqs_continue_after_a_reopen" in persistent
    assert "test_seqs_continue_after_a_reopen" not in tests
    assert "test_a_task_is_replaced_as_a_whole_record" in tests


async def test_reopening_a_store_that_is_not_persistent_fails_and_says_how_to_mark_the_test(
    tmp_path: Path,
) -> None:
    suite = TestMemoryStorage()
    suite._directory = tmp_path
    storage = await suite.open_storage(tmp_path)

    with pytest.raises(TypeError, match="mark a test that reopens with @reopens"):
        await suite.reopen(storage)


class TestPostgresStorage(StorageConformance):
    """The suite on a real PostgreSQL server (``tests.postgres_support``); a store per test."""

    url: str

    @pytest.fixture(autouse=True)
    def _database(self, postgres_url: str) -> None:
        self.url = postgres_url

    async def open_storage(self, directory: Path) -> Storage:
        opened: Storage = await PostgresStorage.open(self.url, str(directory))
        return opened
