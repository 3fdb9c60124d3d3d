"""Every runnable example in ``pi_durable_tui.examples`` runs offline and shows what it claims."""

from __future__ import annotations

import subprocess
import sys

import pytest


def run_example(name: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", f"pi_durable_tui.examples.{name}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_documents_example_reads_a_rewindable_document_now_and_as_of_an_entry() -> None:
    out = run_example("documents")
    assert "now:        {'title': 'Groceries for Sunday', 'lines': ['milk', 'bread']}" in out
    assert "as of first: {'title': 'Groceries', 'lines': ['milk']}" in out


def test_the_forks_example_copies_each_document_by_its_fork_policy() -> None:
    out = run_example("forks")
    assert "child entries: ['outline']" in out
    assert "plan (asOf):    {'steps': ['outline']}" in out
    assert "budget (current): {'left': 40}" in out
    assert "scratch (initial): None" in out


def test_the_watches_example_streams_text_as_append_operations() -> None:
    out = run_example("watches")
    assert "frame -> [{'op': 'append', 'path': ['text'], 'text': 'streams '}]" in out
    assert "late joiner starts from: {'text': 'Durable streams cost their new bytes.'}" in out


def test_the_tasks_example_completes_a_parent_after_its_child() -> None:
    out = run_example("tasks")
    assert "outcome: {'status': 'completed', 'result': {'child': {'words': 5}}}" in out
    assert "example.report#3 waiting" in out


@pytest.mark.timeout(120)
def test_the_recovery_example_resumes_a_killed_task_at_its_last_tick_with_one_effect() -> None:
    out = run_example("recovery")
    assert "worker 1 was killed with SIGKILL" in out
    lines = out.splitlines()
    reopened = next(line for line in lines if line.startswith("worker 2: reopened:"))
    # The kill lands while tick 3 (or, on a slow machine, a later tick) is running.
    tick = int(reopened.rsplit("'tick': ", 1)[1].rstrip("}"))
    assert tick >= 3
    assert "is pending at {'phase': 'tick'" in reopened
    assert lines[lines.index(reopened) + 1] == f"worker 2: tick {tick}"
    assert "worker 2: outcome: {'status': 'completed', 'result': {'ticks': 8}}" in out
    ledger = next(line for line in out.splitlines() if line.startswith("ledger:"))
    assert ledger.count("copied") == 1
