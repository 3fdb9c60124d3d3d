"""A disk that fills under the terminal app, in a real pseudo-terminal (issue 12).

The app's home is a small tmpfs (it needs root; skipped without) that a file
fills after a first answer. The next answer's streamed partials cannot be
committed: the screen must say so in one line (what failed, that nothing
committed was lost, what to do), stop saying it works, keep what is typed, and
quit at once on Ctrl+D.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.support import mount_tmpfs, unmount
from tests.e2e.tui_terminal import Terminal, contains, flat, require_tmux

BIG = "word " * 200_000
"""A 1 MB answer: its partials need more than the room the filled disk leaves."""
SCRIPT = {
    "tokens_per_second": 20_000,
    "responses": [
        {"content": [{"type": "text", "text": "FIRST-ANSWER"}]},
        {"content": [{"type": "text", "text": BIG}]},
    ],
}


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    require_tmux()
    mount_tmpfs(tmp_path / "home", "16m")  # the Terminal's PIDURABLE_HOME
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    made = Terminal(tmp_path, script)
    yield made
    made.close()
    unmount(tmp_path / "home")


def unwrapped(text: str) -> str:
    """Text without any whitespace: a line the screen wrapped, even inside a word, is whole."""
    return "".join(text.split())


def fill_the_disk_under_an_answer(terminal: Terminal) -> str:
    """Start the app, answer once, fill the disk, ask again; the screen once it stopped."""
    terminal.start("--model", "faux/faux-1")
    terminal.wait_for(contains("/compact"), "the first frame")
    terminal.submit("hello")
    terminal.wait_for(contains("FIRST-ANSWER"), "the first answer")
    (terminal.home / "filler").write_bytes(b"\0" * (15 * 1024 * 1024))  # about 1 MiB left
    terminal.submit("a long one please")
    return terminal.wait_for(contains("Stopped: the session store cannot be written"), "the stop")


def test_a_disk_that_fills_under_the_app_is_one_line_and_ctrl_d_quits_at_once(
    terminal: Terminal,
) -> None:
    screen = fill_the_disk_under_an_answer(terminal)
    (store,) = terminal.home.glob("sessions/*/*/session.sqlite")
    line = (
        f"the disk holding the session store {store} is full; nothing committed was lost: "
        "quit, free some space, then `pidurable -c` continues the session"
    )
    assert unwrapped(line) in unwrapped(screen), screen  # the long path wraps anywhere
    assert "Working..." not in screen
    terminal.type("still typing")  # the editor takes keys

    terminal.press("C-c")  # clears the editor
    terminal.wait_for(lambda screen: "still typing" not in screen, "the cleared editor")
    terminal.press("C-d")  # quits, as the status line says
    assert terminal.wait_dead(deadline=20) == "status 0"
    assert "Traceback" not in terminal.history()


def test_a_prompt_sent_right_after_the_stop_is_answered_at_once_and_the_tree_stops(
    terminal: Terminal,
) -> None:
    # The answer came at once before too, but under the stop's notice: its path wraps
    # it over four rows, which filled the notice bar, whose height hid the newer line
    # until the long one expired (12 s later).
    fill_the_disk_under_an_answer(terminal)
    terminal.submit("right after", burst=True)  # no pause: the stop has just shown
    screen = terminal.wait_for(
        contains("submit failed: the session store cannot be written (see the notice)"),
        "the prompt's one-line answer",
    )
    assert "Stopped: the session store cannot be written (ctrl+c twice quits" in flat(screen)
    for word in ("busy", "locked", "timeout", "timed out", "Working...", "running"):
        assert word not in screen, screen
    assert "turn  stopped" in screen, screen  # the task tree no longer says it runs
    assert "right after" in screen  # the text stays in the editor
    # What the status line says: Ctrl+C twice quits, text in the editor or not (Ctrl+D
    # would delete a character there). Both presses in one write: within the window.
    terminal.press("C-c", "C-c")
    assert terminal.wait_dead(deadline=20) == "status 0"
