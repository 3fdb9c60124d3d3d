"""The agent crash checks catch what they claim to catch (so the campaign cannot pass vacuously).

One real chain of a short session (12 root turns and a subagent: a kill inside
the effect window of a ``bash`` call, then a restart to completion) passes
``check_agent_chain``; then each test damages a copy of its evidence in one way
and requires the matching finding: an acknowledged entry lost or changed (R2),
an unsafe effect run twice (ledger or rename, R95), a read run again after a run
that was not killed, a prompt admitted twice (S1, R59), a transcript other than
the script, an answer before its round's results (R90), a kept partial that is
not a prefix of its answer (R92), a task left live, a window kill that did not
interrupt its call (K3, R100), a line that is not JSON, and a damaged SQLite
file (reliability.md 9.5). A few of them change the store as read, in memory.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e import agent_verify
from tests.e2e.agent_campaign import replay_planner
from tests.e2e.agent_runner import AgentChain, Kill, Trial, run_chain
from tests.e2e.agent_scenario import PROMPT, Scenario, build_scenario
from tests.e2e.agent_store import SessionDump, message, read_session
from tests.e2e.agent_verify import check_agent_chain
from tests.e2e.crash_store import damage_sqlite

SCENARIO = build_scenario(root_turns=12)
TARGET = "bash-07"


@pytest.fixture(scope="module")
def clean_chain(tmp_path_factory: pytest.TempPathFactory) -> AgentChain:
    trial = Trial("verifier", tmp_path_factory.mktemp("agent-verifier") / "chain")
    chain = run_chain(trial, SCENARIO, replay_planner([TARGET]), None)
    report = check_agent_chain(chain, SCENARIO)
    assert not report.problems, "\n".join(report.problems)
    assert [run.killed for run in chain.runs] == [True, False]
    assert TARGET in report.interrupted
    return chain


def copy_chain(chain: AgentChain, tmp_path: Path) -> AgentChain:
    """Return the chain over a copy of its directory (every process has ended)."""
    directory = tmp_path / "copy"
    shutil.copytree(chain.trial.directory, directory)
    runs = [
        dataclasses.replace(run, events=[dict(e) for e in run.events], effects=Counter(run.effects))
        for run in chain.runs
    ]
    trial = dataclasses.replace(chain.trial, directory=directory)
    return dataclasses.replace(
        chain, trial=trial, runs=runs, effects=Counter(chain.effects), ledger=list(chain.ledger)
    )


def findings(chain: AgentChain, scenario: Scenario = SCENARIO) -> str:
    return "\n".join(check_agent_chain(chain, scenario).problems)


def test_an_acknowledged_entry_missing_from_the_store_is_reported_lost(
    clean_chain: AgentChain, tmp_path: Path
) -> None:
    chain = copy_chain(clean_chain, tmp_path)
    fake = {**chain.runs[0].acks[-1], "id": 10**9}
    chain.runs[0].events.append({"t": "commit", "seq": 10**9, "entries": [fake]})
    assert "LOST acknowledged entry 1000000000" in findings(chain)


def test_an_acknowledged_entry_the_store_holds_differently_is_reported(
    clean_chain: AgentChain, tmp_path: Path
) -> None:
    chain = copy_chain(clean_chain, tmp_path)
    message = next(m for m in chain.runs[0].events if m.get("entries"))
    first, *rest = message["entries"]  # a new list: the copy shares the clean chain's
    message["entries"] = [{**first, "kind": "pi.other"}, *rest]
    assert "but the store holds" in findings(chain)


def test_a_bash_ledger_line_written_twice_is_reported_as_a_duplicate_unsafe_effect(
    clean_chain: AgentChain, tmp_path: Path
) -> None:
    chain = copy_chain(clean_chain, tmp_path)
    chain.ledger.append("bash-03")
    assert "DUPLICATE unsafe effect: bash bash-03 ran 2 times" in findings(chain)


def test_a_second_rename_onto_a_written_file_is_reported_as_a_duplicate_unsafe_effect(
    clean_chain: AgentChain, tmp_path: Path
) -> None:
    chain = copy_chain(clean_chain, tmp_path)
    chain.effects[("write", "write-04")] += 1
    assert "DUPLICATE unsafe effect: write write-04 ran 2 times" in findings(chain)


def test_a_read_run_again_after_a_process_that_was_not_killed_is_reported(
    clean_chain: AgentChain, tmp_path: Path
) -> None:
    chain = copy_chain(clean_chain, tmp_path)
    chain.runs[0].effects[("read", "read-24")] += 1  # read-24 ran in the last run
    chain.runs[0] = dataclasses.replace(chain.runs[0], returncode=0, sent=None, kill=None)
    assert "read read-24 ran again after a run that was not killed" in findings(chain)


def test_a_kill_in_a_bash_effect_window_that_did_not_interrupt_the_call_is_reported(
    clean_chain: AgentChain, tmp_path: Path
) -> None:
    chain = copy_chain(clean_chain, tmp_path)
    kill = Kill(effect="bash-03", effect_tool="bash")  # bash-03 completed
    chain.runs[0] = dataclasses.replace(chain.runs[0], kill=kill)
    assert "the kill inside bash-03's effect window did not interrupt it" in findings(chain)


def test_answers_other_than_the_script_are_reported(
    clean_chain: AgentChain, tmp_path: Path
) -> None:
    chain = copy_chain(clean_chain, tmp_path)
    shorter = build_scenario(root_turns=11)  # it ends one round earlier
    found = findings(chain, shorter)
    made, expected = len(SCENARIO.root_call_ids()), len(shorter.root_call_ids())
    assert f"the root answers made {made} calls, expected {expected}" in found
    assert "an effect of unknown call read-24" in found


def with_dump(
    monkeypatch: pytest.MonkeyPatch, chain: AgentChain, change: Callable[[SessionDump], None]
) -> None:
    """Make the checks read the chain's store as ``change`` leaves it (in memory)."""
    [store] = chain.trial.stores()
    dump = read_session(store)
    change(dump)
    monkeypatch.setattr(agent_verify, "read_session", lambda _store: dump)


def test_an_answer_committed_before_the_results_of_the_previous_round_is_reported(
    clean_chain: AgentChain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    moved: list[str] = []

    def move_first_result_late(dump: SessionDump) -> None:
        index = next(i for i, s in enumerate(dump.entries) if s.entry.kind == "pi.tool-result")
        # The first round's calls run side by side: whichever result was committed
        # first is the one moved past the next assistant entry.
        moved.append(str(message(dump.entries[index]).get("tool_call_id")))
        dump.entries.insert(index + 3, dump.entries.pop(index))

    chain = copy_chain(clean_chain, tmp_path)
    with_dump(monkeypatch, chain, move_first_result_late)
    found = findings(chain)
    assert f"came before the results of {moved}" in found


def test_a_kept_partial_that_is_not_a_prefix_of_the_answer_replacing_it_is_reported(
    clean_chain: AgentChain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def insert_partial(dump: SessionDump) -> None:
        index = next(i for i, s in enumerate(dump.entries) if s.entry.kind == "pi.assistant")
        stored = dump.entries[index]
        text = {"type": "text", "text": "Something the model never said"}
        partial = {**message(stored), "content": [text], "stop_reason": "aborted"}
        entry = dataclasses.replace(stored.entry, id=10**9, model=[partial])
        dump.entries.insert(index, dataclasses.replace(stored, entry=entry))

    chain = copy_chain(clean_chain, tmp_path)
    with_dump(monkeypatch, chain, insert_partial)
    assert "is not a prefix of the answer that replaced it" in findings(chain)


def test_a_task_still_live_after_the_session_completed_is_reported(
    clean_chain: AgentChain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def revive_a_task(dump: SessionDump) -> None:
        task = dump.tasks[0]
        dump.tasks[0] = dataclasses.replace(task, state={"status": "pending", "checkpoint": {}})

    chain = copy_chain(clean_chain, tmp_path)
    with_dump(monkeypatch, chain, revive_a_task)
    assert "1 tasks are still live" in findings(chain)


def test_a_line_that_is_not_json_is_reported(clean_chain: AgentChain, tmp_path: Path) -> None:
    chain = copy_chain(clean_chain, tmp_path)
    chain.runs[1].garbled.append('{"t": "commit", "ent')
    assert "printed a line that is not JSON" in findings(chain)


def test_the_prompt_sent_again_under_another_request_id_is_reported_duplicate_s1(
    clean_chain: AgentChain, tmp_path: Path
) -> None:
    chain = copy_chain(clean_chain, tmp_path)
    trial = chain.trial
    [store] = trial.stores()
    command = [sys.executable, "-m", "pi_durable_tui", "--session", str(store), "-p", PROMPT]
    command += ["--request-id", "another-request", "--faux-script", str(trial.script)]
    command += ["--permission-mode", "auto"]
    subprocess.run(
        command, cwd=trial.workspace, env=trial.environment(), capture_output=True, check=False
    )
    assert "DUPLICATE or lost prompt: 1 submissions with request ID" in findings(chain)


def test_a_damaged_sqlite_file_fails_the_integrity_check_or_the_reopen(
    clean_chain: AgentChain, tmp_path: Path
) -> None:
    chain = copy_chain(clean_chain, tmp_path)
    [store] = chain.trial.stores()
    damage_sqlite(store)
    found = findings(chain)
    assert "integrity_check" in found or "does not reopen" in found, found
