"""``python -m pi_durable_tui.bench leftovers``: processes a hostile model leaves behind (issue 13).

A faux script makes ``ROUNDS`` ``bash`` calls, each putting four processes in
the background in the four ways a command can leave its process group:
``sleep T &``, ``setsid sleep T &``, ``nohup sleep T &`` and ``env -i setsid
sleep T &`` (which clears the mark too). The script runs through the real
product (``pidurable -p``, ``--permission-mode auto``) with its own home and
temp directory; after it exits, the benchmark counts the processes still
running whose command line is ``sleep T`` (``T`` unique to the run) and the
spill files and run directories left in the temp directory. A second run is
killed with ``SIGKILL`` while its last command runs, and the same is counted
once the run guard had a moment (it ends the run's processes in about 0.5 s).

Targets: 0 processes and 0 files after each. Also used by the tests
(``tests/test_cli_processes.py``) for the script and the counting.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROUNDS = 50
"""``bash`` calls of the hostile script, four background processes each."""


def unique_duration() -> str:
    """A ``sleep`` duration no other process on the machine uses (``300.<random>``)."""
    return f"300.{random.randrange(10**8, 10**9)}"


def background_command(duration: str) -> str:
    """One call's command: four background processes, one per way of leaving the group."""
    return (
        f"sleep {duration} & setsid sleep {duration} & "
        f"nohup sleep {duration} >/dev/null 2>&1 & "
        f"env -i /usr/bin/setsid /bin/sleep {duration} & echo started"
    )


def _call(command: str) -> dict[str, Any]:
    return {
        "content": [{"type": "tool_call", "name": "bash", "arguments": {"command": command}}],
        "stop_reason": "toolUse",
    }


def hostile_script(duration: str, rounds: int, *, last: str | None = None) -> dict[str, Any]:
    """The faux script: ``rounds`` background calls, then ``last`` (a call) or an answer."""
    responses = [_call(background_command(duration)) for _ in range(rounds)]
    if last is not None:
        responses.append(_call(last))
    responses.append({"content": [{"type": "text", "text": "hostile processes done"}]})
    return {"responses": responses}


def sleepers(duration: str) -> list[int]:
    """The live processes whose command line is ``sleep <duration>`` (zombies excluded)."""
    wanted = f"sleep\0{duration}\0".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        program = os.path.basename(cmdline.split(b"\0")[0])
        if cmdline.endswith(wanted) and program == b"sleep" and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def leftover_files(temp: Path) -> list[Path]:
    """Spill files and run directories left in the temp directory.

    ``os.walk`` rather than ``Path.rglob``: a run guard may be removing a run's
    directory while it is walked, and ``rglob`` raises for a vanished directory.
    """
    spills = [
        Path(root, name)
        for root, _dirs, names in os.walk(temp)
        for name in names
        if name.startswith("pi-output-")
    ]
    return sorted([*spills, *temp.glob("pi-run-*")])


def product_environment(home: Path, temp: Path) -> dict[str, str]:
    """The product's environment: its own ``PIDURABLE_HOME`` and ``TMPDIR``."""
    return {**os.environ, "PIDURABLE_HOME": str(home), "TMPDIR": str(temp)}


def command_line(script: Path, *extra: str) -> list[str]:
    """``pidurable -p`` with the faux script in auto mode."""
    return [
        sys.executable,
        "-m",
        "pi_durable_tui",
        "-p",
        *extra,
        "--model",
        "faux/faux-1",
        "--faux-script",
        str(script),
        "--permission-mode",
        "auto",
    ]


def _wait_for(condition: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _run(root: Path, rounds: int, kill: bool) -> tuple[int, int, int]:
    """One run: (processes started, processes left, files left)."""
    home, temp, project = root / "home", root / "tmp", root / "project"
    for path in (home, temp, project):
        path.mkdir(parents=True, exist_ok=True)
    duration = unique_duration()
    script = root / "script.json"
    last = f"seq 1 3000; {background_command(duration)}; sleep {duration}" if kill else None
    script.write_text(json.dumps(hostile_script(duration, rounds, last=last)))
    environ = product_environment(home, temp)
    process = subprocess.Popen(
        command_line(script, "go"),
        cwd=project,
        env=environ,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    started = 0
    if kill:
        # The last call's foreground sleep: its command is running, the rest are in the background.
        _wait_for(lambda: len(sleepers(duration)) >= 5, 120)
        started = len(sleepers(duration))
        os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=300)
    if not kill:
        started = 4 * rounds
    _wait_for(lambda: not sleepers(duration), 5)  # the run guard's sweep, after a kill
    _wait_for(lambda: not leftover_files(temp), 5)  # then it removes the spill directory
    return started, len(sleepers(duration)), len(leftover_files(temp))


def main(argv: list[str]) -> int:
    """Run the hostile script through the product, normally and killed; print what is left."""
    parser = argparse.ArgumentParser(prog="python -m pi_durable_tui.bench leftovers")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="bash calls of the script")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        for kill in (False, True):
            started, left, files = _run(Path(directory) / str(kill), options.rounds, kill)
            how = "kill -9 during the last call" if kill else "normal exit"
            print(
                f"{how:<30} background processes started {started:>4}   "
                f"processes left {left}   spill files/dirs left {files}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
