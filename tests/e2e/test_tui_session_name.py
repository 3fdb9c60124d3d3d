"""A session's name survives ``kill -9``: the real app in a real terminal (tmux).

``/name`` commits the name in the store before the screen says it, so a
``kill -9`` right after the notice loses nothing: ``pidurable -r`` lists the
session by its name, and ``/session`` in the reopened session shows it. The
picker reads the name's mirror beside the store; a mirror a crash left behind
(deleted here) is written again from the store when the session is opened.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.tui_terminal import Terminal, contains, scripted_terminal

SCRIPT = {
    "when_exhausted": "echo",
    "responses": [{"content": [{"type": "text", "text": "First answer a001."}]}],
}


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    yield from scripted_terminal(tmp_path, SCRIPT)


def test_a_name_given_just_before_a_kill_shows_in_the_resume_picker_and_in_session(
    terminal: Terminal,
) -> None:
    terminal.start("--model", "faux/faux-1")
    terminal.wait_for(contains("F1 help"), "the first frame")
    terminal.submit("hello u001")
    terminal.wait_for(contains("a001"), "the first answer")
    terminal.submit("/name nightly build")
    terminal.wait_for(contains("Session named: nightly build"), "the name said")
    terminal.kill()

    terminal.start("--model", "faux/faux-1", "-r")
    terminal.wait_for(contains("nightly build", "hello u001"), "the picker names the session")
    terminal.press("Enter")
    terminal.wait_for(contains("F1 help", "a001"), "the session reopened")
    terminal.submit("/session")
    terminal.wait_for(contains("name: nightly build", "session ID:"), "/session names it")
    terminal.kill()

    # As if killed between the commit and the mirror beside the store.
    (terminal.store().parent / "name.txt").unlink()
    terminal.start("--model", "faux/faux-1", "--continue")
    terminal.wait_for(contains("F1 help", "a001"), "the session continued")
    terminal.press("C-d")
    terminal.wait_dead()
    terminal.start("--model", "faux/faux-1", "-r")
    terminal.wait_for(contains("nightly build", "hello u001"), "the mirror written again")
