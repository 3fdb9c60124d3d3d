"""Approvals in a real terminal: shown, survived by ``kill -9``, decided once (issue 13).

The real app (``python -m pi_durable_tui``) runs in tmux (``tui_terminal``) on a
faux script whose model calls ``bash`` with a command that appends a line to
``count.txt`` (the side effect counted). In the product's default mode
(``auto-edit``) the command is not read-only, so it waits for the user:

- the approval prompt shows the tool and the whole command, and the footer the
  mode; ``kill -9`` while it waits; ``pidurable --continue`` shows the same
  request again (and the recovery report lists it); nothing ran; ``y`` runs the
  command exactly once;
- ``n`` with a message: the refusal and the message reach the model (the card
  shows the result the model read, and the script's next answer arrives);
  nothing ran;
- F4 moves the footer's mode along plan, auto-edit, ask, auto;
- Ctrl+C over the prompt empties its message line and leaves the editor's
  draft behind it alone (it is there once the prompt is answered); with the
  line empty it shows the exit hint on the prompt, a second press exits
  (status 0, nothing ran) and ``--continue`` asks again;
- a steer typed in the prompt's message line while the call waits reaches the
  model (a script step that answers only a request holding it), and the call,
  still waiting after it, runs once on ``y``.

The prompt's keys count once it has settled (``tui/_prompt_keys``): the tests
press them once its keys line shows them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.tui_terminal import Terminal, contains, require_tmux

COMMAND = "echo ran >> count.txt"
SCRIPT = {
    "responses": [
        {
            "content": [{"type": "tool_call", "name": "bash", "arguments": {"command": COMMAND}}],
            "stop_reason": "toolUse",
        },
        {"content": [{"type": "text", "text": "TURN-DONE"}]},
    ]
}
START = ("--model", "faux/faux-1", "--permission-mode", "auto-edit")


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    """A terminal running the bash-calling script in ``auto-edit`` (closed after the test)."""
    require_tmux()
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    shown = Terminal(tmp_path, script)
    yield shown
    shown.close()


def asked(terminal: Terminal) -> str:
    """Wait for the approval prompt of the scripted command; return that screen."""
    return terminal.wait_for(
        contains("Allow bash?", COMMAND, "Needs your decision", "y allow once"),
        "the approval prompt, settled",
    )


def count(terminal: Terminal) -> int:
    """How many times the command ran (lines in its side-effect file)."""
    made = terminal.work / "count.txt"
    return len(made.read_text().splitlines()) if made.exists() else 0


def test_a_request_survives_kill_9_is_asked_again_by_continue_and_y_runs_it_once(
    terminal: Terminal,
) -> None:
    terminal.start(*START)
    terminal.wait_for(contains("mode:auto-edit"), "the footer's mode")
    terminal.submit("make it")
    asked(terminal)
    terminal.kill()
    assert count(terminal) == 0  # nothing runs before the decision

    terminal.start("--continue", "--permission-mode", "auto-edit")
    asked(terminal)
    assert count(terminal) == 0
    terminal.press("y")
    terminal.wait_for(contains("TURN-DONE"), "the end of the turn")
    # The report stays in the transcript (the prompt covered it): it named the request.
    terminal.wait_for(contains(f"bash `{COMMAND}` waits for your approval"), "the report")
    assert count(terminal) == 1
    terminal.press("C-d")
    assert terminal.wait_dead() == "status 0"
    assert count(terminal) == 1  # allowed once: ran once


def test_n_with_a_message_sends_the_refusal_and_the_message_to_the_model(
    terminal: Terminal,
) -> None:
    terminal.start(*START)
    terminal.wait_for(contains("/compact"), "the first frame")
    terminal.submit("make it")
    asked(terminal)
    terminal.press("n")
    terminal.wait_for(contains("Enter denies with this message"), "the message line")
    terminal.type("use make clean")
    terminal.press("Enter")
    terminal.wait_for(contains("TURN-DONE"), "the model's next answer")
    terminal.press("C-o")  # expand the card: the result the model read
    terminal.wait_for(contains("The user said: use make clean"), "the refusal on the card")
    assert count(terminal) == 0


def test_f4_moves_the_footers_mode(terminal: Terminal) -> None:
    terminal.start(*START)
    terminal.wait_for(contains("mode:auto-edit"), "the footer's mode")
    for mode in ("ask", "auto", "plan", "auto-edit"):
        terminal.press("F4")
        terminal.wait_for(contains(f"Permission mode: {mode}", f"mode:{mode} "), mode)


TWICE_SCRIPT = {
    "responses": [
        SCRIPT["responses"][0],
        {"content": [{"type": "text", "text": "TURN-DONE"}]},
        SCRIPT["responses"][0],
        {"content": [{"type": "text", "text": "SECOND-DONE"}]},
    ]
}
"""Two turns that each run the command once it is allowed."""


def test_ctrl_c_over_the_prompt_clears_its_line_and_never_the_editors_draft(
    terminal: Terminal,
) -> None:
    terminal.script.write_text(json.dumps(TWICE_SCRIPT))
    terminal.start(*START)
    terminal.wait_for(contains("/compact"), "the first frame")
    terminal.submit("make it")
    asked(terminal)
    # A follow-up queued from the prompt brings the second call; text left in the
    # line goes to the editor: the draft that waits there behind the second prompt.
    terminal.press("m")
    terminal.type("go on")
    terminal.press("C-f")
    terminal.wait_for(contains("Queued as a follow-up"), "the follow-up queued")
    terminal.press("m")
    terminal.type("DRAFT-WORDS")
    terminal.press("Tab")
    asked(terminal)
    terminal.press("y")
    terminal.wait_for(contains("TURN-DONE"), "the end of the first turn")
    asked(terminal)  # the follow-up's call
    assert count(terminal) == 1
    terminal.press("n")
    terminal.wait_for(contains("Enter denies with this message"), "the message line")
    terminal.type("LINE-WORDS")
    terminal.press("C-c")
    terminal.wait_for(
        lambda screen: "LINE-WORDS" not in screen and contains("Enter denies")(screen),
        "the message line emptied, the prompt still up",
    )
    terminal.press("Tab")  # back to the choices: the line is empty, Ctrl+C would exit
    asked(terminal)
    terminal.press("C-c")
    terminal.wait_for(
        contains("Press Ctrl+C again to exit.", "Allow bash?"), "the exit hint on the prompt"
    )
    asked(terminal)  # the Ctrl+C was a key: the choices settle again
    terminal.press("y")
    terminal.wait_for(contains("SECOND-DONE", "DRAFT-WORDS"), "the second turn, the draft kept")
    assert count(terminal) == 2


def test_ctrl_c_twice_over_the_prompt_exits_and_continue_asks_again(terminal: Terminal) -> None:
    terminal.start(*START)
    terminal.wait_for(contains("/compact"), "the first frame")
    terminal.submit("make it")
    asked(terminal)
    terminal.press("C-c")
    terminal.wait_for(
        contains("Press Ctrl+C again to exit.", "Allow bash?"), "the exit hint on the prompt"
    )
    # Two presses in one write: whatever the delay since the first, a pair falls
    # within the double-press window.
    terminal.press("C-c", "C-c")
    assert terminal.wait_dead() == "status 0"
    assert count(terminal) == 0  # exiting decided nothing

    terminal.start("--continue", "--permission-mode", "auto-edit")
    asked(terminal)  # the waiting call is asked again
    terminal.press("y")
    terminal.wait_for(contains("TURN-DONE"), "the end of the turn")
    assert count(terminal) == 1


STEER = "STEER-WORDS use make lint too"
STEERED_SCRIPT = {
    "responses": [
        SCRIPT["responses"][0],
        {"match": {"user": "STEER-WORDS"}, "content": [{"type": "text", "text": "SAW-THE-STEER"}]},
        {"content": [{"type": "text", "text": "NO-STEER-SEEN"}]},
    ]
}


def test_a_steer_typed_while_a_call_waits_reaches_the_model_and_the_call_then_runs_once(
    terminal: Terminal,
) -> None:
    terminal.script.write_text(json.dumps(STEERED_SCRIPT))
    terminal.start(*START)
    terminal.wait_for(contains("/compact"), "the first frame")
    terminal.submit("make it")
    asked(terminal)
    terminal.press("m")
    terminal.wait_for(contains("Enter steers the agent"), "the message line")
    terminal.type(STEER)
    terminal.press("Enter")
    terminal.wait_for(contains("Sent as a steer"), "the steer sent")
    asked(terminal)  # the decision still waits
    assert count(terminal) == 0
    terminal.press("y")
    terminal.wait_for(contains("SAW-THE-STEER"), "the answer to the request holding the steer")
    assert "NO-STEER-SEEN" not in terminal.screen()
    assert count(terminal) == 1
