"""Starting the terminal app in a real pseudo-terminal: paint first, then open (issue 8).

``pidurable`` paints its first frame before it opens the session (``Opening
session...``), so a problem found while opening (here: the session is open in
another process) must leave the screen, restore the terminal and print one line,
exactly as it did before a screen existed; a stop signal while it opens must
close everything and say so. ``pidurable -r`` paints, then shows the session
picker; the session opens once one is picked, and closing the picker exits.
With standard error redirected to a file, the screen still draws on the terminal.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.tui_store import read_store
from tests.e2e.tui_terminal import DEADLINE, Terminal, contains, flat, require_tmux

SCRIPT = {"responses": [{"content": [{"type": "text", "text": "READY-ANSWER"}]}]}


@pytest.fixture
def terminals(tmp_path: Path) -> Iterator[list[Terminal]]:
    require_tmux()
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    made = [Terminal(tmp_path / "first", script), Terminal(tmp_path / "second", script)]
    # Both terminals work in one directory with one home: the second sees the first's session.
    made[1].home, made[1].work = made[0].home, made[0].work
    yield made
    for terminal in made:
        terminal.close()


def start_answered(terminal: Terminal, prompt: str) -> None:
    """Start a new session, send ``prompt`` and wait for the scripted answer."""
    terminal.start("--model", "faux/faux-1")
    terminal.wait_for(contains("/compact"), "the first frame")  # keys typed earlier reach the tty
    terminal.submit(prompt)
    terminal.wait_for(contains("READY-ANSWER"), "the answer")


def alternate_screen(terminal: Terminal) -> bool:
    """Whether the terminal still shows the app's alternate screen."""
    return terminal.tmux("display-message", "-p", "-t", "app", "#{alternate_on}").strip() == "1"


def test_a_session_open_in_a_process_serving_no_socket_leaves_the_screen_with_one_line(
    terminals: list[Terminal],
) -> None:
    first, second = terminals
    start_answered(first, "hello")
    # A holder that serves no socket (an older pidurable): nothing to attach to
    # (issue 15; with the socket, tests/e2e/test_tui_clients.py attaches).
    for served in first.home.glob("sessions/*/*/session.sqlite.sock"):
        served.unlink()

    second.start("-c")
    status = second.wait_dead()

    printed = second.history()
    assert status == "status 2", printed
    assert f"is open in process {first.pid()}" in printed.replace("\n", "")
    assert not alternate_screen(second)


def test_a_prompt_on_the_command_line_is_sent_as_the_first_message(
    terminals: list[Terminal],
) -> None:
    first, _ = terminals
    first.start("--model", "faux/faux-1", "the prompt from argv")

    first.wait_for(contains("READY-ANSWER"), "the answer to the argv prompt")
    assert "the prompt from argv" in first.screen()


@pytest.mark.parametrize("when", ["while the session opens", "in an open session"])
def test_enter_then_ctrl_d_at_once_stores_the_message_before_leaving_and_continue_answers_it(
    terminals: list[Terminal], when: str
) -> None:
    first, _ = terminals
    if when == "in an open session":
        start_answered(first, "hello")
    else:
        first.start("--model", "faux/faux-1")
        first.wait_for(contains("/compact"), "the first frame")
    # One burst, as a fast typist sends it: the Ctrl+D reaches the editor before the
    # app has taken the sent text out, and the exit comes before the send is stored.
    first.tmux("send-keys", "-t", "app", "-l", "sent then left q001")
    first.press("Enter", "C-d")

    assert first.wait_dead() == "status 0"
    assert "q001" in read_store(first.store()).tokens()
    first.start("-c")
    first.wait_for(contains("sent then left q001"), "the message, kept")
    first.wait_for(contains("READY-ANSWER"), "its answer, after --continue")


def test_sighup_in_an_open_session_closes_it_and_exits_129(terminals: list[Terminal]) -> None:
    first, _ = terminals
    start_answered(first, "hello")
    os.kill(first.pid(), signal.SIGHUP)

    assert first.wait_dead() == "status 129"
    printed = flat(first.history())
    assert "pidurable: hung up; the session is saved: `pidurable -c` continues it" in printed


def test_closing_the_pane_during_a_bash_call_ends_the_app_and_the_command_and_continue_says_so(
    tmp_path: Path,
) -> None:
    require_tmux()
    call = {"type": "tool_call", "name": "bash", "arguments": {"command": "sh hold.sh"}}
    script = tmp_path / "sleep.json"
    script.write_text(json.dumps({"responses": [{"content": [call]}, SCRIPT["responses"][0]]}))
    terminal = Terminal(tmp_path / "pane", script)
    started = tmp_path / "started"
    (terminal.work / "hold.sh").write_text(
        f"echo $$ > {started}.tmp && mv {started}.tmp {started} && exec sleep 30\n"
    )
    try:
        terminal.start("--model", "faux/faux-1")
        terminal.wait_for(contains("/compact"), "the first frame")
        terminal.submit("go")
        terminal.wait_for(lambda _: started.exists(), "the command to start")
        app, sleeper = terminal.pid(), int(started.read_text())

        terminal.tmux("kill-pane", "-t", "app")  # the terminal closes: SIGHUP

        for pid, what in ((app, "pidurable"), (sleeper, "the command")):
            end = time.monotonic() + DEADLINE  # a wait on a condition, not a timing
            while _alive(pid):
                assert time.monotonic() < end, f"{what} (process {pid}) outlived its pane"
                time.sleep(0.05)
        terminal.starts = 0  # the pane is gone: start in a new one
        terminal.start("--model", "faux/faux-1", "--continue")
        terminal.wait_for(
            contains("bash `sh hold.sh` was cut when pidurable was stopped (SIGHUP) while running"),
            "the recovery report (a stop, not a crash)",
        )
        terminal.wait_for(contains("READY-ANSWER"), "the answer after the interrupted call")
    finally:
        terminal.close()


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_sigterm_at_the_first_frame_restores_the_terminal_and_exits_143(
    terminals: list[Terminal],
) -> None:
    first, _ = terminals
    first.start("--model", "faux/faux-1")
    first.wait_for(contains("/compact"), "the first frame")
    os.kill(first.pid(), signal.SIGTERM)

    assert first.wait_dead() == "status 143"
    assert "pidurable: terminated" in first.history()
    assert not alternate_screen(first)


def test_sigterm_in_an_open_session_says_how_to_continue_it(terminals: list[Terminal]) -> None:
    first, _ = terminals
    start_answered(first, "hello")
    os.kill(first.pid(), signal.SIGTERM)

    assert first.wait_dead() == "status 143"
    printed = flat(first.history())
    assert "pidurable: terminated; the session is saved: `pidurable -c` continues it" in printed
    assert not alternate_screen(first)


def test_resume_picks_a_session_on_the_screen_and_opens_it(terminals: list[Terminal]) -> None:
    first, _ = terminals
    start_answered(first, "the first prompt")
    first.press("C-d")
    assert first.wait_dead() == "status 0"

    first.start("-r")
    first.wait_for(contains("Sessions of this directory", "the first prompt"), "the picker")
    first.press("Enter")

    first.wait_for(contains("READY-ANSWER", "the first prompt"), "the picked session's transcript")
    first.press("C-d")
    assert first.wait_dead() == "status 0"


def test_closing_the_resume_picker_exits_without_opening_anything(
    terminals: list[Terminal],
) -> None:
    first, _ = terminals
    start_answered(first, "the first prompt")
    first.press("C-d")
    first.wait_dead()

    first.start("-r")
    first.wait_for(contains("Sessions of this directory"), "the picker")
    first.press("Escape")

    assert first.wait_dead() == "status 0"
    assert len(list(first.home.glob("sessions/*/*/session.sqlite"))) == 1


def test_with_only_an_anthropic_key_set_the_footer_shows_its_default_model(
    terminals: list[Terminal],
) -> None:
    # No --model, no model in settings: the key says which vendor; nothing is sent.
    first = terminals[0]
    first.environment = {"ANTHROPIC_API_KEY": "sk-ant-not-a-real-key"}

    first.start()

    first.wait_for(contains("anthropic/claude-sonnet-4-6", "?/200k"), "the default model")


def test_with_standard_error_in_a_file_the_screen_draws_on_the_terminal_not_into_the_file(
    terminals: list[Terminal], tmp_path: Path
) -> None:
    terminal = terminals[0]
    errors = tmp_path / "err.log"
    terminal.start("--model", "faux/faux-1", stderr=errors)
    terminal.wait_for(contains("F1 help"), "the first frame on the terminal")
    terminal.submit("hello")
    terminal.wait_for(contains("READY-ANSWER"), "the answer")
    terminal.press("C-d")
    assert terminal.wait_dead() == "status 0"
    assert "\x1b" not in errors.read_text(errors="replace")  # Textual painted nothing there
