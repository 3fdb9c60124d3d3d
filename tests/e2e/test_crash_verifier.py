"""The crash checks themselves catch what they claim to catch (so K1-K4 cannot pass vacuously).

One real chain (a kill right after a commit in the middle of the workload, then a
recovery to completion) passes ``check_chain``; then each test damages a copy of
its evidence in one way and requires the matching finding: a lost acknowledged
commit (R2), a store that reopens more than one commit ahead of what was
published (R1), a resurrected task (R22, R131), a replay-unsafe effect run twice
(R39, R40), a tick run twice in one process, a wrong final state, and a damaged
SQLite file (R129, reliability.md 9.5).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from tests.e2e.crash_runner import Chain, Run, Setup, run_failpoint_chain
from tests.e2e.crash_store import damage_sqlite, read_ledger
from tests.e2e.crash_verify import DONE_KINDS, check_chain


@pytest.fixture(scope="module")
def clean_chain(tmp_path_factory: pytest.TempPathFactory) -> Chain:
    directory = tmp_path_factory.mktemp("verifier") / "chain"
    directory.mkdir()
    setup = Setup(name="verifier", backend="sqlite", directory=directory, seed=7)
    chain = run_failpoint_chain(setup, ["sqlite.after_commit:30"])
    report = check_chain(chain)
    assert not report.problems, report.problems
    assert len(chain.runs) == 2
    assert chain.runs[0].killed
    return chain


def copy_chain(chain: Chain, tmp_path: Path, seed: int | None = None) -> Chain:
    """Return the chain over a copy of its directory (the store was closed cleanly)."""
    directory = tmp_path / "copy"
    shutil.copytree(chain.setup.directory, directory)
    setup = dataclasses.replace(
        chain.setup, directory=directory, seed=chain.setup.seed if seed is None else seed
    )
    runs = [dataclasses.replace(run, lines=list(run.lines)) for run in chain.runs]
    return Chain(setup, chain.chain_seed, runs)


def findings(chain: Chain) -> str:
    return "\n".join(check_chain(chain).problems)


def finished_in_first_run(run: Run) -> dict[str, object]:
    ack = next(a for a in run.acks if a["kind"] in DONE_KINDS)
    return {"label": ack["data"]["label"], "kind": "crash.effect", "status": "pending", "memos": {}}


def test_an_acknowledged_entry_missing_from_the_store_is_reported_lost(
    clean_chain: Chain, tmp_path: Path
) -> None:
    chain = copy_chain(clean_chain, tmp_path)
    fake = {**chain.runs[0].acks[-1], "entry": 10**9}
    chain.runs[0].lines.append(("ack", fake))
    assert "LOST acknowledged commit: entry 1000000000" in findings(chain)


def test_a_store_two_commits_ahead_of_the_last_publication_is_reported(
    clean_chain: Chain, tmp_path: Path
) -> None:
    chain = copy_chain(clean_chain, tmp_path)
    killed = chain.runs[0]
    last = max(i for i, (word, _) in enumerate(killed.lines) if word == "published")
    del killed.lines[last]
    assert "2 commits landed unpublished at one kill" in findings(chain)


def test_a_finished_task_listed_again_at_reopen_is_reported_resurrected(
    clean_chain: Chain, tmp_path: Path
) -> None:
    chain = copy_chain(clean_chain, tmp_path)
    task = finished_in_first_run(chain.runs[0])
    chain.runs[1].lines.insert(3, ("resume-task", {**task, "task": 0, "checkpoint": {}}))
    assert f"RESURRECTED or phantom task {task['label']}" in findings(chain)


def test_an_unsafe_effect_in_the_ledger_twice_is_reported_duplicate(
    clean_chain: Chain, tmp_path: Path
) -> None:
    chain = copy_chain(clean_chain, tmp_path)
    unsafe = next(line for line in read_ledger(chain.setup) if line["effect"] == "unsafe")
    with chain.setup.ledger.open("a") as ledger:
        ledger.write(json.dumps({**unsafe, "run": 2}) + "\n")
    assert f"DUPLICATE unsafe effect {unsafe['label']}" in findings(chain)


def test_a_tick_executed_twice_by_one_process_is_reported(
    clean_chain: Chain, tmp_path: Path
) -> None:
    chain = copy_chain(clean_chain, tmp_path)
    tick = next(line for line in read_ledger(chain.setup) if line["effect"] == "tick")
    with chain.setup.ledger.open("a") as ledger:
        ledger.write(json.dumps(tick) + "\n")
    assert "ran twice in one run" in findings(chain)


def test_a_final_state_other_than_the_reference_is_reported(
    clean_chain: Chain, tmp_path: Path
) -> None:
    chain = copy_chain(clean_chain, tmp_path, seed=8)
    assert "final state differs from the reference" in findings(chain)


def test_a_damaged_sqlite_file_fails_the_integrity_check_or_the_reopen(
    clean_chain: Chain, tmp_path: Path
) -> None:
    chain = copy_chain(clean_chain, tmp_path)
    damage_sqlite(chain.setup.store)
    found = findings(chain)
    assert "integrity_check" in found or "does not reopen" in found, found
