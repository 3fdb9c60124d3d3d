"""No process left behind, through the real product (issue 13).

Real ``pidurable -p`` processes run a hostile faux script
(``pi_durable_tui.bench.leftover_processes``) whose ``bash`` calls put
processes in the background in every way a command can (``cmd &``, ``setsid``,
``nohup``, ``env -i setsid``), each ``sleep <T>`` with a duration unique to the
test, so ``/proc`` says exactly how many are left. After a normal exit, a
SIGTERM, and a SIGKILL (the run guard ends them), none is left and no spill
file either; when the run guard is killed too, ``--continue`` ends what is left
and names it, PID and command, in one line.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pi_durable_tui.bench.leftover_processes import (
    background_command,
    command_line,
    hostile_script,
    leftover_files,
    product_environment,
    sleepers,
    unique_duration,
)
from tests.deadlines import WAIT


class Product:
    """One project with its own home and temp directory, and the script's sleep duration."""

    def __init__(self, root: Path) -> None:
        self.home, self.temp, self.project = root / "home", root / "tmp", root / "project"
        for path in (self.home, self.temp, self.project):
            path.mkdir()
        self.duration = unique_duration()
        self.script = root / "script.json"

    def write_script(self, rounds: int, *, last: str | None = None) -> None:
        self.script.write_text(json.dumps(hostile_script(self.duration, rounds, last=last)))

    def start(self, *extra: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            command_line(self.script, *extra),
            cwd=self.project,
            env=product_environment(self.home, self.temp),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def left(self) -> list[int]:
        return sleepers(self.duration)

    def long_last_call(self) -> str:
        """A last call that spills, backgrounds four processes and then runs on."""
        return f"seq 1 3000; {background_command(self.duration)}; sleep {self.duration}"


@pytest.fixture
def product(tmp_path: Path) -> Iterator[Product]:
    made = Product(tmp_path)
    yield made
    for pid in made.left():  # never leave one to the next test, whatever failed
        os.kill(pid, signal.SIGKILL)


def wait_until(condition: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {WAIT:.0f} s for {what}")
        time.sleep(0.02)


def running_guard(pidurable: int) -> int:
    """The run guard of the process ``pidurable`` (its argv names the run ``<pid>-...``)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(arg.startswith(f"{pidurable}-".encode()) for arg in argv[1:]):
                return int(entry.name)
    raise AssertionError(f"no run guard of {pidurable}")


def test_a_hostile_script_backgrounding_processes_every_way_leaves_none_after_exit(
    product: Product,
) -> None:
    product.write_script(10)

    done = product.start("go")
    out, err = done.communicate(timeout=WAIT)

    assert (done.returncode, out.strip(), err) == (0, "hostile processes done", "")
    assert product.left() == []
    # The run guard removes the run's spill directory once it sees pidurable gone,
    # a moment after the exit (it is a process of its own).
    wait_until(lambda: leftover_files(product.temp) == [], "the run's spill directory removed")


def test_sigterm_during_a_command_leaves_no_process_and_no_spill_file(product: Product) -> None:
    product.write_script(1, last=product.long_last_call())
    running = product.start("go")
    wait_until(lambda: len(product.left()) == 5, "the last command and its four to start")
    assert leftover_files(product.temp) != []  # the last call is spilling

    running.send_signal(signal.SIGTERM)
    running.communicate(timeout=WAIT)

    assert running.returncode == 143
    assert product.left() == []
    wait_until(lambda: leftover_files(product.temp) == [], "the run's spill directory removed")


def test_after_sigkill_the_run_guard_ends_every_process_and_removes_the_spill_file(
    product: Product,
) -> None:
    product.write_script(1, last=product.long_last_call())
    running = product.start("go")
    wait_until(lambda: len(product.left()) == 5, "the last command and its four to start")

    running.kill()
    running.communicate(timeout=WAIT)

    wait_until(lambda: not product.left(), "the run guard to end the run's processes")
    wait_until(lambda: not leftover_files(product.temp), "the run guard to remove the spill file")


def test_continue_ends_and_names_what_a_run_killed_with_its_guard_left_running(
    product: Product,
) -> None:
    d = product.duration
    product.write_script(0, last=f"setsid sleep {d} & setsid sleep {d} & sleep {d}")
    running = product.start("go")
    wait_until(lambda: len(product.left()) == 3, "the last command and its two to start")
    guard = running_guard(running.pid)

    os.kill(guard, signal.SIGKILL)
    running.kill()
    running.communicate(timeout=WAIT)
    wait_until(lambda: len(product.left()) == 2, "the command's own guard to end its group")
    left = sorted(product.left())  # what left the group by setsid: nothing ended those

    product.write_script(0, last="true")  # the same first response: the answer comes second
    resumed = product.start("--continue")
    _, err = resumed.communicate(timeout=WAIT)

    assert resumed.returncode == 0, err
    [notice] = [line for line in err.splitlines() if "earlier run" in line]
    assert notice.startswith("pidurable: An earlier run left 2 processes running, now ended: ")
    for pid in left:
        assert f"{pid} `sleep {d}`" in notice
    assert product.left() == []
