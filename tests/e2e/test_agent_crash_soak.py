"""Soak: hundreds of SIGKILLs of real ``pidurable -p`` processes (reliability.md 15, K1-K4, S1).

Opt-in: ``python -m pytest tests/e2e/test_agent_crash_soak.py -m soak -s``. The
same scripted session and checks as ``test_agent_crash`` (R2, R59, R92, R95,
R100), with 400 kills at random times and one kill inside the effect window of
every read, write, edit and bash call of the session (82 more). It takes about
ten minutes on two cores.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.e2e.agent_campaign import AgentFigures, AgentPlan, agent_campaign
from tests.e2e.agent_scenario import build_scenario

SOAK_SEED = 30_261_201
SOAK_KILLS = 400


@pytest.mark.soak
@pytest.mark.timeout(3600)
def test_hundreds_of_sigkills_lose_no_acknowledged_entry_and_repeat_no_unsafe_effect(
    tmp_path: Path,
) -> None:
    scenario = build_scenario()
    targets = tuple(c.call_id for c in scenario.calls if c.tool != "subagent")
    plan = AgentPlan(
        random_kills=SOAK_KILLS,
        window_targets=targets,
        base_seed=SOAK_SEED,
        max_kills_per_chain=5,
        workers=12,
    )
    started = time.monotonic()
    figures = AgentFigures.of(agent_campaign(tmp_path, plan, scenario), time.monotonic() - started)
    print(figures.summary(f"agent crash soak (base seed {SOAK_SEED})"))
    assert not figures.problems, "\n".join(figures.problems[:20])
    assert figures.random_kills >= SOAK_KILLS
    assert sum(figures.window_kills.values()) == len(targets)
    assert figures.lost_acked == figures.repeated_unsafe == figures.duplicate_prompts == 0
    assert figures.integrity_failures == 0
    assert figures.max_restarts <= 5
    assert figures.window_landed["bash"] == figures.window_kills["bash"]
