"""``/export`` in a real terminal: a path alone, ``~`` expanded, a missing directory said.

The real app runs in tmux (``tui_terminal``) with ``HOME`` of its own.
``/export ~/notes/x.md`` writes Markdown to ``$HOME/notes/x.md`` and the notice
gives that full path; ``/export ~/nothere/y.md`` says the directory does not exist,
writes nothing, and the app runs on with no traceback in its log.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.tui_terminal import Terminal, contains, flat, scripted_terminal

SCRIPT = {"responses": [{"content": [{"type": "text", "text": "EXPORTED-ANSWER"}]}]}


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    yield from scripted_terminal(tmp_path, SCRIPT)


def test_export_to_a_tilde_path_writes_there_and_a_missing_directory_is_a_notice(
    terminal: Terminal, tmp_path: Path
) -> None:
    home = tmp_path / "user-home"
    (home / "notes").mkdir(parents=True)
    terminal.environment = {"HOME": str(home)}
    terminal.start("--model", "faux/faux-1")
    terminal.wait_for(contains("/compact"), "the first frame")
    terminal.submit("hi")
    terminal.wait_for(contains("EXPORTED-ANSWER"), "the answer")

    terminal.submit("/export ~/notes/x.md")
    terminal.wait_for(
        contains(f"Exported the transcript to {home}/notes/x.md"), "the full path written"
    )
    assert "EXPORTED-ANSWER" in (home / "notes" / "x.md").read_text()

    terminal.submit("/export ~/nothere/y.md")
    screen = terminal.wait_for(
        contains(f"the directory {home}/nothere does not exist", "nothing was written"),
        "the missing directory",
    )
    assert "failed" not in flat(screen)
    assert not (home / "nothere").exists()
    assert not terminal.dead()
    logs = list(terminal.home.glob("sessions/*/*/pidurable.log"))
    assert all("Traceback" not in log.read_text() for log in logs)
