"""The editor's shell mode in a real terminal: ``!cmd`` goes to the model, a crash cuts it.

The real app runs in tmux (``tui_terminal``) on a faux model whose scripted answer
matches only a request holding ``a001`` (a ``history`` rule: any user message of
the context, not only the newest):

- ``!echo a001`` shows the user's card with the output, starts no turn, and the
  next prompt's request carries it: the model answers ``SAW-A001``;
- ``kill -9`` while a ``!`` command runs, then ``--continue``: the card says it
  was interrupted, with the output it had committed, and it did not run again.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.tui_terminal import Terminal, contains, scripted_terminal

SCRIPT = {
    "responses": [
        {"match": {"history": "a001"}, "content": [{"type": "text", "text": "SAW-A001"}]},
        {"content": [{"type": "text", "text": "MISSED-A001"}]},
    ],
}


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    yield from scripted_terminal(tmp_path, SCRIPT)


def start(terminal: Terminal, *arguments: str) -> None:
    terminal.start("--model", "faux/faux-1", *arguments)
    terminal.wait_for(contains("F1 help"), "the first frame")


def test_a_bang_command_shows_its_output_and_the_next_prompt_carries_it(
    terminal: Terminal,
) -> None:
    start(terminal)
    terminal.submit("!echo a001")
    screen = terminal.wait_for(contains("! echo a001  (you)", "exit 0"), "the shell card")
    assert "a001" in screen.split("! echo a001", 1)[1]
    terminal.submit("what did I run?")
    screen = terminal.wait_for(contains("SAW-A001"), "the answer that saw the output")
    assert "MISSED-A001" not in screen


def test_a_bang_command_cut_by_kill_9_is_interrupted_on_continue_and_never_runs_again(
    terminal: Terminal,
) -> None:
    start(terminal)
    terminal.submit("!echo half; sleep 60; touch ran-to-the-end")
    terminal.wait_for(contains("(esc to stop)", "half"), "the running command's output")
    terminal.kill()
    start(terminal, "--continue")
    screen = terminal.wait_for(contains("[interrupted]"), "the interrupted card")
    assert "was interrupted; it did not run again" in screen
    assert "half" in screen
    assert not (terminal.work / "ran-to-the-end").exists()
