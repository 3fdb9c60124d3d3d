"""Longer journeys through the real app in a real terminal: quit somewhere, come back there.

The real ``pidurable`` runs in tmux (``tui_terminal``) on a faux script:

- the user forks with ``/fork`` (before the second message), works in the fork,
  quits with Ctrl+D; ``pidurable --continue`` reopens on the fork (its footer
  names it, its message is shown), not on the main conversation;
- killed with ``kill -9`` right after switching back to the main conversation
  with ``/agents``, ``--continue`` reopens on the main one: what was shown was
  committed first.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.tui_terminal import Terminal, contains, scripted_terminal

SCRIPT = {
    "when_exhausted": "echo",
    "responses": [
        {"content": [{"type": "text", "text": "First answer a001."}]},
        {"content": [{"type": "text", "text": "Second answer a002."}]},
    ],
}


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    yield from scripted_terminal(tmp_path, SCRIPT)


def footer(screen: str) -> str:
    """The footer's second line: conversation, model, thinking, mode."""
    return next(line for line in reversed(screen.splitlines()) if "thinking:" in line)


def fork_and_work(terminal: Terminal) -> None:
    """Two prompts, then ``/fork`` before the second and a message in the fork."""
    terminal.start("--model", "faux/faux-1")
    terminal.wait_for(contains("F1 help"), "the first frame")
    terminal.submit("hello u001")
    terminal.wait_for(contains("a001"), "the first answer")
    terminal.submit("again u002")
    terminal.wait_for(contains("a002"), "the second answer")
    terminal.submit("/fork")
    terminal.wait_for(contains("Fork from an earlier message"), "the fork picker")
    terminal.press("Enter")  # the newest message: the fork sees what came before it
    terminal.wait_for(lambda s: "fork of hello u001" in footer(s), "the fork shown")
    terminal.press("C-u")  # the forked message's text came back into the editor
    terminal.submit("in the fork u003")
    # The answer, not the message: the typed text shows in the editor before it is
    # sent. The script answers by position: the fork's second message gets a002 (the
    # fork shows none of the main conversation's second exchange).
    terminal.wait_for(contains("in the fork u003", "a002"), "the fork's answer")


def test_continue_after_working_in_a_fork_reopens_on_the_fork(terminal: Terminal) -> None:
    fork_and_work(terminal)
    terminal.press("C-d")
    terminal.wait_dead()

    terminal.start("--model", "faux/faux-1", "--continue")
    screen = terminal.wait_for(contains("F1 help", "u003"), "the fork reopened")

    assert footer(screen).split()[:2] == ["fork", "of"]
    assert "again u002" not in screen  # the main conversation's second message


def test_a_kill_right_after_switching_back_to_main_reopens_on_main(terminal: Terminal) -> None:
    fork_and_work(terminal)
    terminal.submit("/agents")
    terminal.wait_for(contains("Conversations"), "the conversation picker")
    terminal.type("main")  # filters the list down to the main conversation
    terminal.press("Enter")
    terminal.wait_for(lambda s: footer(s).split()[0] == "main", "the main conversation shown")
    terminal.kill()

    terminal.start("--model", "faux/faux-1", "--continue")
    screen = terminal.wait_for(contains("F1 help", "again u002"), "main reopened")

    assert footer(screen).split()[0] == "main"
    assert "u003" not in screen
