"""A real terminal (tmux) gets no escape sequence from the model, a tool, a file or a path.

issue 13 ("The screen renders no escape sequence"), DESIGN.md section 7. A faux
model writes OSC 52 (set the clipboard), OSC 0 (set the title) and CSI 2J
(clear the screen) into every rendered channel: its thinking and answer, a
``write`` path and a ``write`` preview, a ``bash`` command and the output it
prints, an ``edit`` diff and a tool error (``read`` of a missing path). The
app runs in tmux with ``set-clipboard on``, where an OSC 52 that reached the
pane becomes a tmux buffer and an OSC 0 becomes the pane's title. After the run:
no buffer, the title as it was after the first paint, the screen still showing
what was drawn before the sequences arrived (not cleared). A probe printing the
same bytes straight into a pane of the same server shows the checks can fail.

(A command's output loses its control characters already in the tool's output
buffer (R102), which leaves a sequence's printable rest, ``]0;pwned``, as inert
text on the card; every other channel loses whole sequences.) The sequences and
the script are the bench's (``pi_durable_tui.bench.hostile_escapes``), so
``python -m pi_durable_tui.bench hostile`` sends the same ones.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_durable_tui.bench.hostile_escapes import (
    EVIL,
    MARKS,
    PRINTS_EVIL,
    TITLE,
    escapes_script,
)
from tests.deadlines import WAIT
from tests.e2e.tui_terminal import Terminal, contains, require_tmux

SCRIPT = escapes_script(EVIL, "END-ESCAPES")
"""Every rendered channel carries the sequences; the last answer ends with END-ESCAPES."""


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    require_tmux()
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    terminal = Terminal(tmp_path / "t", script)
    # An OSC 52 that reaches a pane becomes a tmux buffer (the default only
    # forwards it to the outer terminal, which this test cannot see).
    terminal.config.write_text(terminal.config.read_text() + "set -s set-clipboard on\n")
    yield terminal
    terminal.close()


def test_osc_52_osc_0_and_csi_2j_in_every_channel_reach_no_real_terminal(
    terminal: Terminal,
) -> None:
    terminal.start("--model", "faux/faux-1")
    first = terminal.wait_for(contains("Ask anything"), "the first paint")
    title = terminal.tmux("display-message", "-p", "-t", "app", "#{pane_title}")
    terminal.press("C-o")  # tool output expanded
    terminal.submit("u-esc try every channel")
    terminal.wait_for(contains("END-ESCAPES", "DIFF-MARK"), "the last answer")
    terminal.press("M-t")  # the thinking shown
    done = terminal.wait_for(contains("THINK-MARK", "END-ESCAPES"), "the thinking")

    painted = "\n".join(terminal.screens)
    for mark in MARKS:
        assert mark in painted, f"{mark} was never on the screen"
    assert terminal.tmux("list-buffers") == ""  # OSC 52 never set the clipboard
    assert terminal.tmux("display-message", "-p", "-t", "app", "#{pane_title}") == title
    # CSI 2J would have blanked what was drawn before it: the prompt, the footer's
    # hints (drawn at the first paint, unchanged since) and every card are there.
    hints = "/model /agents /compact /tasks"
    assert hints in first
    assert hints in done
    assert "u-esc try every channel" in done
    for mark in ("PREVIEW-MARK", "PATH-MARK", "BASH-DONE", "ERROR-MARK", "DIFF-MARK"):
        assert mark in done

    terminal.press("C-d")
    assert terminal.wait_dead() == "status 0"

    # The probe: the same bytes written straight into a pane of this server do
    # set a buffer and a title, so the checks above could have failed.
    terminal.tmux("new-session", "-d", "-s", "probe", f"{PRINTS_EVIL}; sleep 30")
    end = time.monotonic() + WAIT
    while "hacked" not in terminal.tmux("list-buffers") and time.monotonic() < end:
        time.sleep(0.05)
    assert "hacked" in terminal.tmux("show-buffer")
    assert terminal.tmux("display-message", "-p", "-t", "probe", "#{pane_title}") == f"{TITLE}\n"
