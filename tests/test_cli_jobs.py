"""Background jobs through the real product: ended at exit, kept when chosen, told after a crash.

Real ``pidurable -p`` processes run a faux script whose ``bash`` call starts
``sleep <unique duration>`` with ``background: true`` (issue 13).
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_durable_tui.bench.leftover_processes import leftover_files
from tests.deadlines import WAIT
from tests.test_cli_processes import Product, wait_until


class JobProduct(Product):
    """A ``Product`` whose script starts background jobs."""

    def write_jobs_script(self, *, then: str | None = None, turns: int = 1) -> None:
        """Per turn: start the job, then run ``then`` in the foreground, then answer.

        The faux model answers by position in the context, so a continued session's
        turns come after the first one's responses; answers pad the end (a turn a
        crash cut resumes with one more request).
        """
        call = {"command": f"sleep {self.duration}", "background": True}
        responses: list[dict[str, object]] = []
        for _ in range(turns):
            responses.append(_call(call))
            if then is not None:
                responses.append(_call({"command": then}))
            responses.append(_ANSWER)
        self.script.write_text(json.dumps({"responses": [*responses, _ANSWER, _ANSWER]}))


_ANSWER: dict[str, object] = {"content": [{"type": "text", "text": "jobs done"}]}


def _call(arguments: dict[str, object]) -> dict[str, object]:
    return {
        "content": [{"type": "tool_call", "name": "bash", "arguments": arguments}],
        "stop_reason": "toolUse",
    }


@pytest.fixture
def product(tmp_path: Path) -> Iterator[JobProduct]:
    made = JobProduct(tmp_path)
    yield made
    for pid in made.left():
        os.kill(pid, signal.SIGKILL)
    for log in made.temp.glob("pi-kept-job-*"):
        log.unlink()


def test_a_background_job_is_ended_when_print_mode_exits(product: JobProduct) -> None:
    product.write_jobs_script()

    done = product.start("go")
    out, err = done.communicate(timeout=WAIT)

    assert (done.returncode, out.strip(), err) == (0, "jobs done", "")
    assert product.left() == []
    wait_until(lambda: leftover_files(product.temp) == [], "the run's directory removed")


def test_a_job_left_running_outlives_the_run_and_its_guard_and_the_next_opening(
    product: JobProduct,
) -> None:
    product.write_jobs_script()

    done = product.start("--leave-jobs-running", "go")
    _out, err = done.communicate(timeout=WAIT)
    assert done.returncode == 0, err
    [pid] = product.left()
    # The run guard ends the run at pidurable's exit; it spares the kept job.
    wait_until(lambda: not list(product.temp.glob("pi-run-*")), "the run guard to finish")
    assert product.left() == [pid]
    [log] = product.temp.glob("pi-kept-job-*.log")

    product.write_jobs_script(turns=2)  # a second job, which this run ends at its exit
    resumed = product.start("--continue", "again")
    _out, err = resumed.communicate(timeout=WAIT)

    assert resumed.returncode == 0, err
    assert "earlier run" not in err
    [line] = [text for text in err.splitlines() if "Background job" in text]
    assert f"is still running, left running at exit (pid {pid})" in line
    wait_until(lambda: not list(product.temp.glob("pi-run-*")), "the second run guard")
    assert product.left() == [pid]
    assert log.exists()


def test_after_kill_9_the_guard_ends_the_job_and_continue_says_so(product: JobProduct) -> None:
    product.write_jobs_script(then=f"sleep {product.duration}")
    running = product.start("go")
    wait_until(lambda: len(product.left()) == 2, "the job and the foreground command")

    running.kill()
    running.communicate(timeout=WAIT)
    wait_until(lambda: not product.left(), "the run guard to end the job")

    resumed = product.start("--continue", "again")
    _out, err = resumed.communicate(timeout=WAIT)

    assert resumed.returncode == 0, err
    [line] = [text for text in err.splitlines() if "Background job" in text]
    assert f"`sleep {product.duration}` was ended with the run that started it" in line
    assert "by the run guard after a crash" in line
