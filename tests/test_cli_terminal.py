"""``pidurable -p`` printing into a real terminal writes no escape sequence (issue 13).

The answer of a faux model holds OSC 52, OSC 0 and CSI 2J. Printed into a
pseudo-terminal (``os.openpty``: what ``-p`` in an interactive shell writes to)
the bytes hold no ESC, BEL or C1, and printed into a pipe neither (``| cat``
ends in a terminal too). ``--mode json`` escapes every control character.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pi_durable_tui.bench.hostile_escapes import EVIL
from tests import test_cli
from tests.deadlines import WAIT
from tests.test_cli import pidurable

project = test_cli.project
_no_process_left = test_cli._no_process_left

CONTROLS = (b"\x1b", b"\x07", "\x9b".encode())


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "evil.json"
    responses = [{"content": [{"type": "text", "text": f"Answer {EVIL} END"}]}]
    path.write_text(json.dumps({"responses": responses}))
    return path


def printed_into_a_terminal(project: Path, *args: str) -> bytes:
    """Run ``pidurable`` with its stdout on a pseudo-terminal; return every byte written."""
    master, slave = os.openpty()
    command = [sys.executable, "-m", "pi_durable_tui", *args]
    with subprocess.Popen(command, cwd=project, stdout=slave, stderr=subprocess.PIPE) as process:
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the last writer closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert process.wait(timeout=WAIT) == 0, process.stderr.read() if process.stderr else ""
    os.close(master)
    return b"".join(chunks)


def test_an_answer_printed_into_a_terminal_holds_no_escape_sequence(
    project: Path, script: Path
) -> None:
    out = printed_into_a_terminal(
        project, "-p", "go", "--model", "faux/faux-1", "--faux-script", str(script)
    )

    assert b"Answer  END" in out
    for control in CONTROLS:
        assert control not in out


def test_an_answer_printed_into_a_pipe_holds_none_either_and_json_escapes_them(
    project: Path, script: Path
) -> None:
    model = ("--model", "faux/faux-1", "--faux-script", str(script))
    status, out, _ = pidurable(project, "--session", "a.sqlite", "-p", "go", *model)
    status_json, events, _ = pidurable(
        project, "--session", "b.sqlite", "-p", "go", "--mode", "json", *model
    )

    assert status == status_json == 0
    assert out == "Answer  END\n"
    assert "\x1b" not in events
    assert "\\u001b]52" in events
