"""SIGKILLs of real ``pidurable -p`` processes in a scripted coding session (issue 7).

Reliability.md 15, rows K1 (random kills), K3 (kills inside effect windows),
K4 (kills during recovery: a random kill often lands before the restarted
process acknowledged anything), S1 (a resubmitted request ID) and X1 (secrets),
on the real product: ``python -m pi_durable_tui -p PROMPT --request-id ID
--mode json`` runs the 50-step faux session of ``agent_scenario`` (reads,
writes, edits, bash commands and two foreground subagents; parallel and
sequential rounds; streamed text and thinking), is killed with SIGKILL, and is
restarted with ``-c -p`` until the session completes. ``agent_verify`` checks
every chain (R2, R59, R92, R95, R100); the figures are printed (``-s``) and
asserted here, one row per test.

One campaign (``campaign``, module scope) feeds every test: at least 50 kills
at random times on chains of at most 4 kills (a quarter timed from the spawn, so
they land in start-up and recovery, the rest from the first JSON line), 4 kills
right after each of a fresh session's first COMMITs (one of them between the
prompt's admission and its acknowledgement), 3 kills right after a process
printed its first, second or third streamed ``commit`` line (mid-stream, R92),
plus 16 kills inside the effect
windows of reads, writes, edits and bash commands of the root conversation, of
a subagent's conversation and of a sequential round. The chains run at once
(about 20 processes, mostly waiting on the faux pacing): about 75 s of CPU in
all. Seeds are fixed; a failure message names the trial, the kill times and the
command that replays it. The soak variant is in ``test_agent_crash_soak``.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.e2e.agent_campaign import AgentFigures, AgentPlan, agent_campaign
from tests.e2e.agent_scenario import build_scenario

RANDOM_KILLS = 50
BASE_SEED = 20_261_201
pytestmark = pytest.mark.timeout(1200)
"""The campaign runs in the first test's setup: about 75 s of CPU, minutes of wall
time beside other heavy work (12 to 15 min at load averages of 40 to 80 on two
cores, issue 12). A stuck process is caught by its own silence timeout
(``agent_runner``), with its stacks; this one only bounds the whole campaign."""
WINDOW_TARGETS = (
    "bash-07", "bash-13", "bash-38", "bash-65",
    "write-10", "write-14", "write-46", "write-72",
    "edit-06", "edit-19", "edit-37", "edit-80",
    "read-22", "read-43", "read-50", "read-75",
)  # fmt: skip
"""Four of each tool: a parallel round, a subagent's conversation, a sequential round."""


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> AgentFigures:
    root: Path = tmp_path_factory.mktemp("agent-crash")
    plan = AgentPlan(random_kills=RANDOM_KILLS, window_targets=WINDOW_TARGETS, base_seed=BASE_SEED)
    started = time.monotonic()
    reports = agent_campaign(root, plan, build_scenario())
    figures = AgentFigures.of(reports, time.monotonic() - started)
    print(figures.summary(f"agent crash campaign (base seed {BASE_SEED})"))
    return figures


def test_every_chain_of_kills_ends_in_a_complete_session_with_every_check_passing(
    campaign: AgentFigures,
) -> None:
    assert not campaign.problems, "\n".join(campaign.problems[:20])
    assert campaign.random_kills >= RANDOM_KILLS, campaign.summary("too few random kills")
    assert campaign.max_restarts <= 5


def test_random_kills_lose_no_acknowledged_entry_and_leave_an_intact_store_k1_k4_r2(
    campaign: AgentFigures,
) -> None:
    assert campaign.lost_acked == 0
    assert campaign.integrity_failures == 0
    # The kills landed everywhere: during start-up and recovery, mid-stream (a
    # partial kept as an aborted entry, R92), and inside tool rounds.
    assert campaign.recovery_kills >= 2, campaign.summary("no kill landed during recovery")
    # Three chains are killed right after a streamed update line (a committed
    # partial), whatever the machine's speed; random kills add more.
    assert campaign.stream_kills == 3, campaign.summary("a stream kill missed")
    assert campaign.partials >= 3, campaign.summary("no kill landed mid-stream")
    assert campaign.sequential_rounds > 0
    assert campaign.parallel_rounds > 0


def test_kills_inside_effect_windows_never_repeat_an_unsafe_effect_k3_r95_r100(
    campaign: AgentFigures,
) -> None:
    assert campaign.repeated_unsafe == 0
    assert sum(campaign.window_kills.values()) == len(WINDOW_TARGETS)
    # A slowed bash command is killed while it sleeps after its ledger line: it
    # always ends interrupted (with its committed output, checked per chain).
    assert campaign.window_landed["bash"] == campaign.window_kills["bash"]
    assert campaign.interrupted >= campaign.window_kills["bash"]
    assert campaign.safe_reruns >= 1, campaign.summary("no replay-safe call ran again")


def test_a_prompt_resent_with_its_request_id_after_kills_is_admitted_once_s1_r59(
    campaign: AgentFigures,
) -> None:
    assert campaign.duplicate_prompts == 0
    assert campaign.resubmissions >= 10, campaign.summary("too few resubmissions")
    assert campaign.admission_kills >= 1, campaign.summary("no kill in the admission window")


def test_tool_processes_never_see_the_api_key_in_their_environment_x1(
    campaign: AgentFigures,
) -> None:
    assert campaign.scrubbed[False] == 0
    assert campaign.scrubbed[True] >= 1


def test_no_byte_of_the_canary_key_reaches_the_store_its_wal_or_the_logs_x1(
    campaign: AgentFigures,
) -> None:
    # The canary reaches the bash output (the file it cats); the harness redacts
    # it before any commit, so no entry, WAL frame or printed line holds it.
    assert campaign.redacted[False] == 0
    assert campaign.redacted[True] >= 1
    assert campaign.canary_files["home"] == 0, campaign.summary("the canary was persisted")
    assert campaign.canary_files["logs"] == 0, campaign.summary("the canary was printed")


def test_no_byte_of_the_canary_key_reaches_a_spill_file_x1(campaign: AgentFigures) -> None:
    assert campaign.canary_files["tmp"] == 0, campaign.summary("the canary was spilled")
