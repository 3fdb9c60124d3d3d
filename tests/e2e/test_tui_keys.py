"""Keys in a real terminal where Pilot cannot show them (issue 12): focus, a 24-row screen.

The real app runs in tmux (``tui_terminal``) at 80x24 on a faux model whose
answer streams slowly, so the agent works while the keys are pressed:

- Tab while the agent works leaves the focus in the editor: what is typed next
  shows there (it used to go to a panel that dropped it);
- Alt+Down moves into the queue, whose title says it has the focus, and typing
  there goes to the editor;
- a 40-line bracketed paste shows as one placeholder and the model receives
  the whole text (its scripted answer matches the paste's last line);
- F1 at 24 rows shows the help inside the screen and PageDown scrolls it to the
  commands; the transcript and the footer stay on screen;
- Ctrl+C over the help shows "Press Ctrl+C again to exit." on it (the main
  screen's notices are behind it), and a second press exits;
- Ctrl+Z suspends the app to the shell it was started from, and ``fg`` brings it
  back with its draft, answering as before;
- Ctrl+G gives the terminal to ``$VISUAL`` (a script that shows the draft, reads
  a line typed there, and replaces the file), and the text it saved is the draft
  Enter sends to the model; Ctrl+C there ends the editor, not the app, and the
  draft stays as it was.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.agent_store import text_of
from tests.e2e.tui_store import read_store
from tests.e2e.tui_terminal import ScreenTest, Terminal, contains, flat, scripted_terminal

PASTED = "".join(f"log line l{n:03d}\n" for n in range(1, 41)) + "l040 end of log"
WORDS = " ".join(f"w{n:03d}" for n in range(1, 400))
SCRIPT = {
    "tokens_per_second": 25,
    "responses": [
        {"content": [{"type": "text", "text": f"Streaming slowly: {WORDS} END-SLOW"}]},
        {"content": [{"type": "text", "text": "Steered. END-STEER"}]},
        {
            "match": {"user": "replaced by the editor: typed there"},
            "content": [{"type": "text", "text": "Got the edited draft. END-EDITED"}],
        },
        {
            "match": {"user": "l040 end of log"},
            "content": [{"type": "text", "text": "Got the whole log. END-PASTE"}],
        },
    ],
}


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    yield from scripted_terminal(tmp_path, SCRIPT, size=(80, 24))


def help_box(screen: str) -> list[str]:
    """The help overlay's rows, cut to its box: the transcript streaming around it is left out."""
    rows = screen.splitlines()
    top = next(n for n, row in enumerate(rows) if "╭" in row)
    left, right = rows[top].index("╭"), rows[top].index("╮")
    bottom = next(n for n in range(top + 1, len(rows)) if rows[n][left : left + 1] == "╰")
    return [row[left : right + 1] for row in rows[top : bottom + 1]]


def scrolled_from(before: str, still: float = 0.3) -> ScreenTest:
    """A screen test: the help box moved from ``before`` and has stood still for ``still`` s.

    A page press animates the scroll; pressing again mid-animation (a slow machine)
    scrolls from wherever it got to, so the next press waits for the box to settle.
    """
    last, since = help_box(before), time.monotonic()

    def test(screen: str) -> bool:
        nonlocal last, since
        box = help_box(screen)
        if box != last:
            last, since = box, time.monotonic()
            return False
        return box != help_box(before) and time.monotonic() - since >= still

    return test


def start(terminal: Terminal) -> None:
    """Start the app on the faux model and wait for its first frame."""
    terminal.start("--model", "faux/faux-1")
    terminal.wait_for(contains("F1 help"), "the first frame")


def start_working(terminal: Terminal) -> None:
    """Start the app and send a prompt whose answer streams for a while."""
    start(terminal)
    terminal.submit("go")
    terminal.wait_for(contains("Streaming slowly"), "the answer streaming")


def test_tab_while_the_agent_works_keeps_typing_in_the_editor_and_alt_down_enters_the_queue(
    terminal: Terminal,
) -> None:
    start_working(terminal)
    terminal.press("Tab")
    terminal.type("after tab")  # waits until the editor shows it: nothing was dropped
    terminal.press("Enter")  # a steer, queued behind the streaming answer
    terminal.wait_for(contains("[steer] after tab"), "the queued steer")
    terminal.press("M-Down")
    terminal.wait_for(contains("focused: esc back to the editor"), "the focused queue")
    terminal.type("typed in the queue")
    screen = terminal.wait_for(contains("Queued (1, delete withdraws)"), "focus back in the editor")
    assert "focused:" not in screen


def test_the_help_fits_a_24_row_screen_and_page_down_scrolls_it(terminal: Terminal) -> None:
    start_working(terminal)
    terminal.press("F1")
    screen = terminal.wait_for(contains("Keys"), "the help")
    assert len(screen.splitlines()) <= 24
    assert "Esc, F1 or q closes this help." not in screen  # more than fits: it scrolls
    for _ in range(8):  # one page at a time, as a person presses (each press animates)
        if "Esc, F1 or q closes this help." in screen:
            break
        terminal.press("NPage")
        screen = terminal.wait_for(scrolled_from(screen), "the help scrolled a page")
    assert "Esc, F1 or q closes this help." in screen
    terminal.press("Escape")
    screen = terminal.wait_for(lambda s: "closes this help" not in s, "the help closed")
    assert "Streaming slowly" in screen or "END-SLOW" in screen  # the transcript is visible
    assert "F1 help" in screen.splitlines()[-1]  # the footer is the last row


def test_ctrl_c_over_the_help_shows_the_exit_hint_on_it_and_a_second_press_exits(
    terminal: Terminal,
) -> None:
    start(terminal)
    terminal.press("F1")
    terminal.wait_for(contains("Keys"), "the help")
    terminal.press("C-c")
    screen = terminal.wait_for(contains("Press Ctrl+C again to exit."), "the exit hint")
    assert "Keys" in screen  # still over the help
    # Two presses in one write: a pair falls within the double-press window however
    # long the wait above took.
    terminal.press("C-c", "C-c")
    assert terminal.wait_dead() == "status 0"


def test_a_bracketed_paste_of_forty_lines_is_one_placeholder_and_the_model_gets_all_of_it(
    terminal: Terminal,
) -> None:
    start(terminal)
    terminal.type("read this: ")
    terminal.paste(PASTED)
    screen = terminal.wait_for(contains("[Pasted text #1 +41 lines]"), "the placeholder")
    assert "log line l001" not in screen
    terminal.press("Enter")
    screen = terminal.wait_for(contains("END-PASTE"), "the answer to the whole paste")
    assert "l040 end of log" in screen  # the transcript shows what was sent
    terminal.kill()
    users = [text_of(s) for s in read_store(terminal.store()).of_kind("pi.user")]
    assert users == ["read this: " + PASTED]


def test_ctrl_z_suspends_to_the_shell_and_fg_brings_the_app_back_with_its_draft(
    terminal: Terminal,
) -> None:
    terminal.start_in_shell("--model", "faux/faux-1")
    terminal.wait_for(contains("F1 help"), "the first frame")
    terminal.type("kept draft")
    terminal.press("C-z")
    screen = terminal.wait_for(contains("Stopped"), "the shell's report of the stopped job")
    assert "F1 help" not in screen  # the app gave the screen back to the shell
    terminal.press("f", "g", "Enter")
    terminal.wait_for(contains("kept draft", "F1 help"), "the app back with its draft")
    terminal.type(" go")
    terminal.press("Enter")
    terminal.wait_for(contains("Streaming slowly"), "an answer after the suspension")


EDITOR_SCRIPT = """#!/bin/sh
printf 'EXTERNAL EDITOR on: %s\\n' "$(cat "$1")"
read -r line
printf 'replaced by the editor: %s\\n' "$line" > "$1"
"""
"""An editor on the real terminal: it shows the draft, reads a line, replaces the file."""


@pytest.fixture
def visual(terminal: Terminal, tmp_path: Path) -> Terminal:
    """The terminal, its app started with ``EDITOR_SCRIPT`` as ``$VISUAL``."""
    editor = tmp_path / "editor.sh"
    editor.write_text(EDITOR_SCRIPT)
    editor.chmod(0o700)
    terminal.environment["VISUAL"] = str(editor)
    start(terminal)
    return terminal


def test_ctrl_g_edits_the_draft_in_visual_and_the_edited_message_is_sent(
    visual: Terminal,
) -> None:
    terminal = visual
    terminal.type("old draft")
    terminal.press("C-g")
    screen = terminal.wait_for(contains("EXTERNAL EDITOR on: old draft"), "the editor running")
    assert "F1 help" not in screen  # the app gave the terminal to the editor
    terminal.type("typed there")  # the editor reads the real terminal
    terminal.press("Enter")
    terminal.wait_for(
        contains("replaced by the editor: typed there", "F1 help"), "the app back, edited"
    )
    terminal.press("Enter")
    terminal.wait_for(contains("END-EDITED"), "the model's answer to the edited draft")
    terminal.kill()
    users = [text_of(s) for s in read_store(terminal.store()).of_kind("pi.user")]
    assert users == ["replaced by the editor: typed there"]


def test_ctrl_c_in_the_external_editor_ends_the_editor_not_the_app_and_the_draft_stays(
    visual: Terminal,
) -> None:
    terminal = visual
    terminal.type("old draft")
    terminal.press("C-g")
    terminal.wait_for(contains("EXTERNAL EDITOR on: old draft"), "the editor running")
    terminal.press("C-c")
    screen = terminal.wait_for(contains("was ended by SIGINT", "F1 help"), "the app back")
    assert "the draft is unchanged" in flat(screen)
    assert "old draft" in screen
    assert not terminal.dead()
