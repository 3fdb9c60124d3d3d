"""Random SIGKILLs of a real workload process, restarted until it completes (K1, K4).

Reliability.md section 15, row K1 (random kill across a scripted run) and K4
(kill again during recovery): the child ``crash_workload`` runs a scripted
durable workload on a SQLite, JSONL or PostgreSQL store; the test kills it with SIGKILL at a
uniform random time after its ``ready`` line (printed before the store is
opened, so some kills land in reopening and reconciliation, R22), starts it again
in a fresh process, kills it again, and so on until a run completes. Every chain
is then checked by ``crash_verify.check_chain``: 0 lost acknowledged commits
(R2), at most one unpublished commit per kill, every task continued from its
last committed checkpoint (R22, R36-R38), unsafe effects at most once and safe
ones at least once (R39, R40), the reference final state except for
``interrupted`` effects, ``PRAGMA integrity_check`` ok and
``foreign_key_check`` empty (R129; PostgreSQL: ``check_integrity`` empty), and a
clean JSONL reopen (R130, R131). PostgreSQL runs fewer kills by default (each run
starts a process that connects to the server); the soak runs as many.

Seeds are fixed: chain ``i`` uses chain seed ``BASE_SEED[backend] + i`` (kill
delays) and workload seed ``1 + i % 8``; failure messages name the trial, both
seeds and every kill time. The soak variant is in ``test_crash_soak``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.crash_campaign import Figures, KillPlan, kill_campaign
from tests.e2e.crash_runner import Backend

BASE_SEED: dict[Backend, int] = {"sqlite": 20_261_130, "jsonl": 20_271_130, "postgres": 20_281_130}
TARGET_KILLS: dict[Backend, int] = {"sqlite": 55, "jsonl": 50, "postgres": 24}
MAX_DELAY: dict[Backend, float] = {"sqlite": 0.2, "jsonl": 0.2, "postgres": 2.5}
"""Seconds after ``ready`` within which a kill lands: opening a PostgreSQL store takes
a connection and a few round trips, so its kills are spread over a longer window."""
KILLS_PER_CHAIN: dict[Backend, int] = {"sqlite": 6, "jsonl": 6, "postgres": 3}
"""Fewer kills per PostgreSQL chain: more chains, so restarts land all over the script."""


@pytest.mark.parametrize("backend", ["sqlite", "jsonl", "postgres"])
def test_random_sigkills_lose_no_acknowledged_commit_and_every_chain_ends_in_the_reference_state(
    backend: Backend, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    database = request.getfixturevalue("postgres_url") if backend == "postgres" else None
    plan = KillPlan(
        target_kills=TARGET_KILLS[backend],
        base_seed=BASE_SEED[backend],
        max_delay=MAX_DELAY[backend],
        max_kills_per_chain=KILLS_PER_CHAIN[backend],
    )
    figures = Figures.of(kill_campaign(backend, tmp_path, plan, database))
    print(figures.summary(f"K1 {backend} (base seed {plan.base_seed})"))
    assert not figures.problems, "\n".join(figures.problems[:20])
    assert figures.kills >= plan.target_kills, figures.summary("too few kills")
    # The kills really landed during work (a kill after completion does not count):
    # many killed runs had acknowledged work, and the restarts resumed all over the
    # script, not at one place.
    assert figures.mid_work_kills >= figures.kills // 3, figures.summary("kills missed the work")
    assert len(figures.resume_steps) >= 6, figures.summary("kills bunched at a few steps")
    assert figures.lost_acknowledged == figures.duplicate_unsafe == 0
    assert figures.integrity_failures == 0
    assert set(figures.unpublished) <= {0, 1}
