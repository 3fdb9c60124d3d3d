"""``/reload`` in a real terminal while a tool call runs (issue 16; R35).

The real app runs in tmux with an extension file in ``$PIDURABLE_HOME/extensions``
whose tool ``probe`` waits for a release file and answers ``old``. While the
model's first call of it waits, the file is rewritten to answer ``new`` at once
and the user types ``/reload``; then the call is released. The model calls the
tool a second time. The first result comes from the old code, the second from
the new.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_durable_tui.harness import TOOL_RESULT
from tests.app.agent.test_extension_files import write_version
from tests.app.support import stored_entries
from tests.e2e.tui_terminal import Terminal, contains, scripted_terminal
from tests.harness.run_support import message

CALL = {"content": [{"type": "tool_call", "name": "probe", "arguments": {}}]}
SCRIPT = {"responses": [CALL, CALL, {"content": [{"type": "text", "text": "Both ran. END"}]}]}


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    yield from scripted_terminal(tmp_path, SCRIPT)


def wait_for_file(path: Path, what: str) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert time.monotonic() < deadline, f"{what}: {path} never appeared"
        time.sleep(0.05)


def test_reload_during_a_running_call_keeps_it_on_the_old_code_and_the_next_call_on_the_new(
    terminal: Terminal,
) -> None:
    directory = terminal.home / "extensions"
    directory.mkdir(parents=True)
    write_version(directory, "old", wait=True)
    terminal.start("--model", "faux/faux-1")
    terminal.wait_for(contains("F1 help"), "the first frame")
    terminal.submit("go")
    wait_for_file(directory / "started", "the first call running")

    write_version(directory, "new", wait=False)
    terminal.submit("/reload")
    terminal.wait_for(contains("Reloaded the extension files"), "the reload's notice")
    (directory / "release").touch()
    terminal.wait_for(contains("Both ran. END"), "the answer after both calls")
    terminal.press("C-d")
    assert terminal.wait_dead() == "status 0"

    entries = asyncio.run(stored_entries(terminal.store()))
    results = [message(e)["content"][0]["text"] for e in entries if e.kind == TOOL_RESULT]
    assert results == ["old", "new"]
