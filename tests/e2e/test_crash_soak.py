"""Soak: a thousand random SIGKILLs per backend (reliability.md 15, K1 and K4 nightly figures).

Opt-in: ``python -m pytest tests/e2e -m soak``. The same chains and checks as
``test_crash_random_kills`` (R2, R22, R36-R40, R129-R131), with up to twelve
kills per chain, so many chains also kill recovery itself several times in a
row (K4). It takes several minutes per backend on two cores.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.crash_campaign import Figures, KillPlan, kill_campaign
from tests.e2e.crash_runner import Backend

SOAK_SEED: dict[Backend, int] = {"sqlite": 30_261_130, "jsonl": 30_271_130, "postgres": 30_281_130}
SOAK_KILLS = 1000


@pytest.mark.soak
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("backend", ["sqlite", "jsonl", "postgres"])
def test_a_thousand_random_sigkills_lose_nothing_acknowledged_and_repeat_no_unsafe_effect(
    backend: Backend, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    database = request.getfixturevalue("postgres_url") if backend == "postgres" else None
    plan = KillPlan(target_kills=SOAK_KILLS, base_seed=SOAK_SEED[backend], max_kills_per_chain=12)
    figures = Figures.of(kill_campaign(backend, tmp_path, plan, database))
    print(figures.summary(f"soak {backend} (base seed {plan.base_seed})"))
    assert not figures.problems, "\n".join(figures.problems[:20])
    assert figures.kills >= SOAK_KILLS
    assert figures.mid_work_kills >= figures.kills // 3
    assert len(figures.resume_steps) >= 6
