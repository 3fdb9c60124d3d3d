"""The TUI benchmark runs end to end in its smoke mode and reports every figure.

Only the report's shape is checked; figures are never asserted (DESIGN.md section 6).
The pseudo-terminal launcher behind the first-paint figures times a marker, ends
and reaps its child, closes the terminal, and fails with the output's tail.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

from pi_durable_tui.bench import tui
from pi_durable_tui.bench._pty_launch import MarkerNotSeen, launch_until, strip_escapes


def test_smoke_run_reports_paint_memory_stream_and_keystroke_figures(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert tui.main(["--smoke", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert list(report) == [
        "baseline.bare_textual",
        "first_paint",
        "first_paint_10000",
        "rss",
        "baseline.keystroke_idle",
        "stream",
        "keystroke",
    ]
    assert report["first_paint"]["ratio"] > 0
    assert report["first_paint_10000"]["target"] == 1.5
    assert report["rss"]["rss_10000_mib"] > 0
    assert 0 < report["stream"]["lag_p50_ms"] < float("inf")
    assert report["stream"]["cpu_ms_per_token"] > 0
    assert report["keystroke"]["echo_p99_ms"] < float("inf")
    assert isinstance(report["keystroke"]["pass"], bool)


def test_the_table_names_each_target_with_its_verdict() -> None:
    report = {
        "first_paint": {"paint_s": 0.5, "ratio": 1.2, "target": 2.0},
        "stream": {"lag_p99_ms": 180.0, "target": 150.0},
    }
    table = tui.render(report)
    assert "target first_paint.ratio <= 2: 1.200 pass" in table
    assert "target stream.lag_p99_ms <= 150: 180.000 MISS" in table


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def _assert_reaped(pid: int) -> None:
    # Reaped means no longer our child: a zombie would still be waitable.
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_a_painted_marker_is_timed_and_the_child_ended_reaped_and_its_terminal_closed(
    tmp_path: Path,
) -> None:
    # The marker arrives with a colour change inside it, as a screen may paint it.
    script = (
        "import sys, time; sys.stdout.write('\\x1b[1mready\\x1b[0m-now\\n'); "
        "sys.stdout.flush(); time.sleep(60)"
    )
    before = _open_fds()
    launch = launch_until([sys.executable, "-c", script], "ready-now", cwd=tmp_path, env=os.environ)
    assert launch.paint_s > 0
    assert launch.rss_mib > 0
    assert launch.returncode == -signal.SIGTERM
    assert not launch.killed
    _assert_reaped(launch.pid)
    assert _open_fds() == before


def test_a_child_that_ignores_sigterm_is_killed_after_its_grace(tmp_path: Path) -> None:
    script = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ready', flush=True); time.sleep(60)"
    )
    launch = launch_until(
        [sys.executable, "-c", script], "ready", cwd=tmp_path, env=os.environ, stop_grace_s=0.5
    )
    assert launch.killed
    assert launch.returncode == -signal.SIGKILL
    _assert_reaped(launch.pid)


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        ("print('hello')", "ended with status 0"),
        ("import time; print('hello', flush=True); time.sleep(60)", "not within 1 s"),
    ],
)
def test_a_marker_never_painted_raises_naming_it_with_the_output_tail(
    tmp_path: Path, script: str, reason: str
) -> None:
    before = _open_fds()
    with pytest.raises(MarkerNotSeen) as raised:
        launch_until(
            [sys.executable, "-c", script], "absent", cwd=tmp_path, env=os.environ, deadline_s=1
        )
    message = str(raised.value)
    assert "marker 'absent' not seen" in message
    assert reason in message
    assert message.endswith("hello\r\n")
    assert _open_fds() == before


def test_escape_sequences_are_removed_from_terminal_output() -> None:
    output = b"\x1b[2J\x1b[38;5;75mab\x1b[0mc\x1b]0;title\x07d\x1b(Be\x1b[?25l"
    assert strip_escapes(output) == "abcde"
