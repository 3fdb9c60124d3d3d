"""Two terminals on one session: the second attaches to the first's host (issue 15).

The real app runs twice, in two tmux servers sharing one ``PIDURABLE_HOME`` and
one working directory. The first opens the session and hosts it; ``pidurable
-c`` in the second finds the store locked by a process that serves it and
attaches instead of being refused. Then, on the screens themselves:

- ``/clients`` in the second lists it and the hosting terminal;
- the second terminal's footer shows the host's permission mode, and F4 in the
  first changes it there at once;
- a prompt typed in the second terminal is answered on both;
- Esc in the first aborts the command the second started, for both;
- the hosting terminal quits: it says it keeps serving, and the second goes on
  (a prompt is answered) until it leaves, when the first process exits;
- ``kill -9`` of a host: the attached terminal says the host is gone and how
  to take over, and the take-over finds everything committed; killed while it
  works, the attached terminal stops saying it works (status line, task tree);
- all of it with the session in PostgreSQL (issue 17): the socket's rendezvous
  is the session's directory on this machine, which a database session has too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.tui_terminal import Terminal, contains, flat, require_tmux

GATE = "echo started-gate; while [ ! -e go ]; do sleep 0.05; done; echo released"
SCRIPT = {
    "responses": [
        {"content": [{"type": "text", "text": "Answered for everyone. END-ONE"}]},
        {"content": [{"type": "tool_call", "name": "bash", "arguments": {"command": GATE}}]},
        {"content": [{"type": "text", "text": "Second host answers. END-TWO"}]},
    ],
}


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Terminal, Terminal]]:
    require_tmux()
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    first = Terminal(tmp_path / "first", script)
    second = Terminal(tmp_path / "second", script)
    second.home, second.work = first.home, first.work  # one session, two terminals
    yield first, second
    second.close()
    first.close()


def attach_second(first: Terminal, second: Terminal, *options: str) -> None:
    first.start("--model", "faux/faux-1", *options)
    first.wait_for(contains("F1 help"), "the host's first frame")
    sockets = "sessions/*/*/session.sqlite.sock"
    first.wait_for(lambda _: any(first.home.glob(sockets)), "the host's socket")
    second.start("-c")
    second.wait_for(contains("Attached to this session"), "the second terminal attached")
    first.wait_for(contains("A terminal attached"), "the host sees the second terminal")


def not_on(text: str):  # type: ignore[no-untyped-def]
    return lambda screen: flat(text) not in flat(screen)


def test_a_prompt_typed_in_the_second_terminal_is_answered_on_both_and_esc_in_one_aborts_both(
    pair: tuple[Terminal, Terminal],
) -> None:
    first, second = pair
    attach_second(first, second)
    for terminal in (first, second):
        terminal.wait_for(contains("+1 attached"), "the footer counts the other terminal")
    second.submit("/clients")
    second.wait_for(contains("this terminal (pid", "hosting the session (pid"), "/clients")
    second.press("Escape")
    second.wait_for(not_on("hosting the session (pid"), "the list closed")
    second.submit("asked from the second")
    for terminal in (first, second):
        terminal.wait_for(contains("asked from the second", "END-ONE"), "the answer on both")
    second.submit("run the gate")
    for terminal in (first, second):
        terminal.wait_for(contains("started-gate"), "the command runs, seen on both")
    first.press("Escape")
    for terminal in (first, second):
        terminal.wait_for(contains("[aborted]"), "aborted on both")
        terminal.wait_for(not_on("esc to abort"), "idle on both")
    # The hosting terminal quits: it keeps serving the second until it leaves.
    first.press("C-d")
    first.wait_for(lambda _: "keeps serving the session" in flat(first.history()), "the word")
    assert not first.dead()
    second.wait_for(contains("hosting terminal left"), "the host's screen left")
    second.submit("still answered")
    second.wait_for(contains("still answered", "END-TWO"), "the session goes on")
    second.press("C-d")
    second.wait_dead()
    assert first.wait_dead() == "status 0"
    # Nothing is lost: the next pidurable -c holds the store itself.
    second.start("-c")
    second.wait_for(contains("asked from the second", "END-TWO", "F1 help"), "reopened")


def test_f4_in_the_hosting_terminal_changes_the_mode_in_the_attached_footer_at_once(
    pair: tuple[Terminal, Terminal],
) -> None:
    first, second = pair
    attach_second(first, second)
    second.wait_for(contains("mode:auto"), "the attached footer shows the host's mode")
    first.press("F4")
    first.wait_for(contains("mode:plan"), "the host's footer")
    second.wait_for(contains("mode:plan"), "the attached footer follows, without reattaching")


def test_kill_9_of_the_host_the_attached_terminal_says_so_and_takes_over(
    pair: tuple[Terminal, Terminal],
) -> None:
    first, second = pair
    attach_second(first, second)
    second.submit("asked before the kill")
    second.wait_for(contains("END-ONE"), "the answer")
    first.kill()
    second.wait_for(contains("host is gone", "--continue"), "the host's death")
    second.press("C-d")
    second.wait_dead()
    second.start("-c")
    second.wait_for(contains("asked before the kill", "END-ONE", "F1 help"), "taken over")


def test_kill_9_of_the_host_while_it_works_stops_the_attached_terminal_saying_it_works(
    pair: tuple[Terminal, Terminal],
) -> None:
    first, second = pair
    attach_second(first, second)
    second.submit("answer first")
    second.wait_for(contains("END-ONE"), "the answer")
    second.submit("now run the gate")
    second.wait_for(contains("started-gate", "Running bash"), "the command running")
    first.kill()
    screen = second.wait_for(
        contains("Stopped: the session's host is gone", "killed, or it crashed"), "the stop"
    )
    assert "Running bash" not in screen
    assert "+1 attached" not in screen
    assert "running execute" not in screen  # the task tree says every task stopped
    second.type("still typing")
    second.press("Enter")
    second.wait_for(contains("submit failed: the session's host is gone (see the notice)"), "why")


APPROVAL_SCRIPT = {
    "responses": [
        {
            "content": [
                {
                    "type": "tool_call",
                    "name": "bash",
                    "arguments": {"command": "touch made && echo approved-run"},
                }
            ]
        },
        {"content": [{"type": "text", "text": "Ran it. END-APPROVED"}]},
    ],
}


def test_an_approval_asked_on_both_terminals_is_answered_from_the_second(
    pair: tuple[Terminal, Terminal],
) -> None:
    first, second = pair
    first.script.write_text(json.dumps(APPROVAL_SCRIPT))
    attach_second(first, second, "--permission-mode", "auto-edit")
    second.submit("make the file")
    for terminal in (first, second):
        terminal.wait_for(contains("Needs your decision"), "the question on both")
    second.wait_for(contains("y allow once"), "the prompt settled (its keys count)")
    second.press("y")
    for terminal in (first, second):
        terminal.wait_for(contains("approved-run", "END-APPROVED"), "the call ran, seen on both")
        terminal.wait_for(not_on("Needs your decision"), "the question gone on both")
    assert (first.work / "made").exists()


def test_a_session_in_postgresql_is_attached_answered_and_taken_over_as_a_file_is(
    pair: tuple[Terminal, Terminal], postgres_url: str
) -> None:
    first, second = pair
    for terminal in (first, second):
        terminal.environment["PIDURABLE_DATABASE_URL"] = postgres_url
    attach_second(first, second)
    second.submit("asked of the database session")
    for terminal in (first, second):
        terminal.wait_for(contains("asked of the database session", "END-ONE"), "answered on both")
    first.kill()
    second.wait_for(contains("host is gone", "--continue"), "the host's death")
    second.press("C-d")
    second.wait_dead()
    second.start("-c")
    second.wait_for(contains("asked of the database session", "END-ONE", "F1 help"), "taken over")
    assert not list(first.home.rglob("session.sqlite"))  # the session lives in the database
