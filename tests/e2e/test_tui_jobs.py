"""Ctrl+B in a real terminal: a running command moves to the background and survives Esc (issue 13).

The real app runs in tmux (``tui_terminal``) on a faux script: the first turn
runs a foreground ``bash`` command that prints a line and then sleeps (a
``sleep`` with a duration unique to the test, so ``/proc`` says whether it
runs); Ctrl+B moves it to the background: the turn ends with the script's
answer while the command keeps running as a job (the task tree shows it). The
second turn runs another foreground command, which Esc aborts: the job keeps
running. Quitting asks what becomes of it, and ``y`` ends it.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_durable_tui.bench.leftover_processes import sleepers, unique_duration
from tests.e2e.tui_terminal import Terminal, contains, require_tmux
from tests.test_cli_processes import wait_until


def _call(command: str) -> dict[str, object]:
    return {
        "content": [{"type": "tool_call", "name": "bash", "arguments": {"command": command}}],
        "stop_reason": "toolUse",
    }


@pytest.fixture
def duration() -> Iterator[str]:
    """The job's unique ``sleep`` duration; whatever is left of it is killed after the test."""
    chosen = unique_duration()
    yield chosen
    for pid in sleepers(chosen):
        os.kill(pid, signal.SIGKILL)


@pytest.fixture
def terminal(tmp_path: Path, duration: str) -> Iterator[Terminal]:
    require_tmux()
    script = tmp_path / "script.json"
    responses = [
        _call(f"echo JOB-STARTED; sleep {duration}"),
        {"content": [{"type": "text", "text": "FIRST-DONE"}]},
        _call("echo SECOND-RUNNING; sleep 120"),
        {"content": [{"type": "text", "text": "SECOND-DONE"}]},
    ]
    script.write_text(json.dumps({"responses": responses}))
    shown = Terminal(tmp_path, script)
    yield shown
    shown.close()


def test_ctrl_b_moves_a_running_command_to_a_job_that_survives_esc_and_ends_at_quit(
    terminal: Terminal, duration: str
) -> None:
    terminal.start("--model", "faux/faux-1")
    terminal.wait_for(contains("faux/faux-1", "mode:auto"), "the app's footer")
    terminal.submit("start the server")
    terminal.wait_for(contains("JOB-STARTED"), "the command's live output")
    wait_until(lambda: sleepers(duration), "the command's sleep")
    [pid] = sleepers(duration)

    terminal.press("C-b")
    terminal.wait_for(contains("FIRST-DONE"), "the turn to end with the command moved")
    terminal.wait_for(contains("job: echo JOB-STARTED"), "the job in the task tree")
    assert sleepers(duration) == [pid]

    terminal.submit("now something else")
    terminal.wait_for(contains("SECOND-RUNNING"), "the second command")
    terminal.press("Escape")
    terminal.wait_for(contains("aborted"), "the second turn aborted")
    assert sleepers(duration) == [pid]

    terminal.submit("/quit")
    terminal.wait_for(contains("1 background job is running."), "the quit prompt")
    terminal.press("y")
    terminal.wait_dead()
    wait_until(lambda: not sleepers(duration), "the job ended at exit")
