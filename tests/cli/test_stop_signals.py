"""How a headless run ends on a stop signal, and what the next ``--continue`` says: real processes.

- ``--mode json`` stopped by SIGTERM, SIGINT or SIGHUP in the middle of the
  answer ends with one last ``result`` line, ``"status": "stopped"``, naming the
  signal, then exits with ``128 + signal`` (``cli._signals``).
- A call cut by a stop signal is reported by the next ``-c -p`` as stopped by
  that signal; one cut by ``kill -9`` (nothing could be committed on the way
  out) is still reported as cut by the crash.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.support import run
from tests.deadlines import WAIT
from tests.wire_lines import is_streamed, messages, of_type

FAUX = ("--model", "faux/faux-1")
LINES = {
    signal.SIGTERM: "pidurable: terminated; the session is saved: `pidurable -c -p` continues it\n",
    signal.SIGINT: "pidurable: interrupted; the session is saved: `pidurable -c -p` continues it\n",
    signal.SIGHUP: "pidurable: hung up; the session is saved: `pidurable -c -p` continues it\n",
}
"""The one stderr line of each stop (``SignalGuard.stopped``)."""


def _start(project: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pi_durable_tui", *args],
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _slow_script(directory: Path) -> Path:
    """An answer of 40 words at 5 tokens a second: it streams for a while."""
    script = directory / "slow.json"
    answer = {"content": [{"type": "text", "text": " ".join(f"w{i}" for i in range(40))}]}
    script.write_text(json.dumps({"tokens_per_second": 5, "responses": [answer]}))
    return script


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_json_mode_stopped_by_a_signal_mid_answer_ends_with_a_stopped_result_naming_it(
    project: Path, tmp_path: Path, stop: signal.Signals
) -> None:
    script = _slow_script(tmp_path)
    process = _start(project, "-p", "go", "--mode", "json", *FAUX, "--faux-script", str(script))
    assert process.stdout is not None
    printed: list[str] = []
    for line in process.stdout:  # the answer streams: the run is in the middle of its turn
        printed.append(line)
        if is_streamed(messages(line)[0]):
            break
    process.send_signal(stop)
    out, err = process.communicate(timeout=WAIT)

    assert process.returncode == 128 + stop, err
    assert err == LINES[stop]  # one line, never a traceback
    found = messages("".join(printed) + out)
    *before, last = found
    submitted = {
        state["id"]
        for commit in of_type(before, "commit")
        for state in commit.get("submissions") or []
    }
    assert len(submitted) == 1  # the prompt's input, queued then placed
    assert last == {
        "t": "result",
        "seq": last["seq"],
        "submission": submitted.pop(),
        "status": "stopped",
        "reason": stop.name,
        "detail": f"pidurable was stopped by {stop.name}; --continue resumes the session",
        "answer": None,
        "text": None,
    }
    streamed = messages(printed[-1])[0]  # printed before the signal was sent
    assert last["seq"] >= streamed["seq"]
    assert of_type(before, "result") == []  # the only result is the last line


def _hold_script(project: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A run whose ``bash`` call (``sh hold.sh``) holds for 30 s; the file it writes at start."""
    started = tmp_path / "started"
    (project / "hold.sh").write_text(
        f"echo $$ > {started}.tmp && mv {started}.tmp {started} && exec sleep 30\n"
    )
    call = {"type": "tool_call", "name": "bash", "arguments": {"command": "sh hold.sh"}}
    script = tmp_path / "hold.json"
    responses = [{"content": [call]}, {"content": [{"type": "text", "text": "answered"}]}]
    script.write_text(json.dumps({"responses": responses}))
    return script, started


def _wait_for(path: Path, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + WAIT
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the bash call never started"
        time.sleep(0.05)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_continue_after_a_stop_signal_says_the_call_was_stopped_by_it_not_cut_by_a_crash(
    project: Path, tmp_path: Path, stop: signal.Signals
) -> None:
    script, started = _hold_script(project, tmp_path)
    argv = [*FAUX, "--faux-script", str(script), "--permission-mode", "auto"]
    process = _start(project, "-p", "go", *argv)
    _wait_for(started, process)

    process.send_signal(stop)
    out, err = process.communicate(timeout=WAIT)
    continued = run(project, "-c", "-p", *argv)

    assert (process.returncode, out, err) == (128 + stop, "", LINES[stop])
    assert (continued.status, continued.out) == (0, "answered\n"), continued.err
    assert continued.err.splitlines()[1:] == [
        f"pidurable: bash `sh hold.sh` was cut when pidurable was stopped ({stop.name}) while "
        "running; it is not replay-safe, so it does not run again: the model gets it as "
        "interrupted, with the output it had committed."
    ]
    assert "crash" not in continued.err


def test_continue_after_sigkill_still_says_the_call_was_cut_by_the_crash(
    project: Path, tmp_path: Path
) -> None:
    script, started = _hold_script(project, tmp_path)
    argv = [*FAUX, "--faux-script", str(script), "--permission-mode", "auto"]
    process = _start(project, "-p", "go", *argv)
    _wait_for(started, process)

    process.kill()  # SIGKILL: nothing can be committed on the way out
    process.communicate(timeout=WAIT)
    continued = run(project, "-c", "-p", *argv)

    assert (continued.status, continued.out) == (0, "answered\n"), continued.err
    assert (
        "pidurable: bash `sh hold.sh` was cut by the crash while running; it is not replay-safe"
        in continued.err
    )
