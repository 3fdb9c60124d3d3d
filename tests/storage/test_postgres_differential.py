"""PostgresStorage answers exactly like MemoryStorage, the reference semantics (R128, R129).

The PostgreSQL store checks commits against a cached view of what it committed
(``storage.postgres._view``), so a stale answer would accept what the reference
refuses or refuse what it accepts. Seeded random workloads (``workload.Workload``,
valid and invalid batches of every kind) go to both backends, with reopens (which
start the cache over) along the way; every commit outcome (seq, or error type and
message) and every read must be equal, and ``check_integrity`` must find nothing.
"""

from __future__ import annotations

import pytest

from pi_durable_tui.storage import PostgresStorage
from pi_durable_tui.storage.memory import MemoryStorage
from tests.storage.workload import Workload, observe, outcome

STEPS = 90
REOPEN_EVERY = 45


@pytest.mark.parametrize(
    "seed",
    # Every read of ``observe`` is a round trip: one seed by default, more in the soak.
    [0, *(pytest.param(seed, marks=pytest.mark.soak) for seed in range(1, 6))],
)
async def test_a_random_workload_reads_the_same_as_the_memory_backend(
    postgres_url: str, store_name: str, seed: int
) -> None:
    memory = MemoryStorage()
    postgres = await PostgresStorage.open(postgres_url, store_name)
    workload = Workload(seed)
    try:
        for step in range(STEPS):
            writes = workload.batch()
            expected = await outcome(memory, writes)
            assert await outcome(postgres, writes) == expected, f"step {step}: {writes}"
            if isinstance(expected, int):
                workload.adopt(writes)
            if step % REOPEN_EVERY == REOPEN_EVERY - 1:
                await postgres.close()
                postgres = await PostgresStorage.open(postgres_url, store_name)
                # IDs minted but never committed may be minted again after a reopen.
                minted = memory.mint_id()
                while postgres.mint_id() < minted:
                    pass
            else:
                minted = memory.mint_id()
                assert postgres.mint_id() == minted
            workload.next_id = minted + 1
        assert await observe(postgres, workload.next_id) == await observe(memory, workload.next_id)
        assert await postgres.check_integrity() == []
    finally:
        await postgres.close()
