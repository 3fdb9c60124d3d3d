"""SqliteStorage answers exactly like MemoryStorage, the reference semantics (R128, R129).

Seeded random workloads (``workload.Workload``) are committed to both backends,
with reopens of the SQLite store along the way; every commit outcome (seq, or
error type and message) and every read must be equal, and the SQLite file must
pass ``integrity_check`` and ``foreign_key_check`` afterwards.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_durable_tui.storage.memory import MemoryStorage
from pi_durable_tui.storage.sqlite import SqliteStorage
from tests.storage.workload import Workload, observe, outcome

STEPS = 90
REOPEN_EVERY = 30


@pytest.mark.parametrize("seed", range(6))
async def test_a_random_workload_reads_the_same_as_the_memory_backend(
    tmp_path: Path, seed: int
) -> None:
    memory = MemoryStorage()
    path = tmp_path / "s.sqlite"
    sqlite = await SqliteStorage.open(path)
    workload = Workload(seed)
    try:
        for step in range(STEPS):
            writes = workload.batch()
            expected = await outcome(memory, writes)
            assert await outcome(sqlite, writes) == expected, f"step {step}: {writes}"
            if isinstance(expected, int):
                workload.adopt(writes)
            if step % REOPEN_EVERY == REOPEN_EVERY - 1:
                await sqlite.close()
                sqlite = await SqliteStorage.open(path)
                # IDs minted but never committed may be minted again after a reopen.
                minted = memory.mint_id()
                while sqlite.mint_id() < minted:
                    pass
            else:
                minted = memory.mint_id()
                assert sqlite.mint_id() == minted
            workload.next_id = minted + 1
        assert await observe(sqlite, workload.next_id) == await observe(memory, workload.next_id)
        assert await sqlite.check_integrity() == []
    finally:
        await sqlite.close()
