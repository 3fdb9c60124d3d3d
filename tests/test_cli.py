"""The ``pidurable`` command, headless: real processes, real signals, real kills.

Processes run ``python -m pi_durable_tui`` in a project directory with their own
``PIDURABLE_HOME``; a faux script stands in for the model. Problems that need no
second process (a bad settings file, a damaged store...) run ``main()`` in process.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from pi_durable_tui import __version__
from pi_durable_tui.cli import Interrupted, SignalGuard, main
from pi_durable_tui.harness import text_of
from tests.app.support import stored_entries
from tests.wire_lines import is_streamed, messages

DEADLINE = 60.0
"""Seconds a process may take before the test kills it and fails."""
ANSWER = " ".join(f"word{i}" for i in range(40))
"""The first answer of the scripts: over 20 s from ``busy_script``, at once from ``fast_script``.

A faux script answers by position, so a session started on the busy script is
resumed on the fast one with the same answer: no run ends before its kill or
signal, and no resume waits for pacing."""


class Pidurable:
    """One ``pidurable`` process, with its stdout read line by line."""

    started: ClassVar[list[Pidurable]] = []
    """Processes of the current test (``_no_process_left`` kills what is left)."""

    def __init__(self, cwd: Path, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pi_durable_tui", *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._watchdog = threading.Timer(DEADLINE, self.process.kill)
        self._watchdog.daemon = True
        self._watchdog.start()
        self.lines: list[str] = []
        Pidurable.started.append(self)

    @property
    def pid(self) -> int:
        return self.process.pid

    def read_until(self, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """Read ``--mode json`` lines (the wire's messages) until one is ``wanted``; return it."""
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)
            [message] = messages(line)
            if wanted(message):
                return message
        raise AssertionError(f"the process ended first: {self.finish()}")

    def handlers_installed(self) -> None:
        """Wait until the process catches SIGTERM: its own code is running (``SignalGuard``)."""
        mask = 1 << (signal.SIGTERM - 1)
        status = Path(f"/proc/{self.pid}/status")
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            caught = next(
                line for line in status.read_text().splitlines() if line.startswith("SigCgt:")
            )
            if int(caught.split()[1], 16) & mask:
                return
            time.sleep(0.002)
        raise AssertionError(f"process {self.pid} never caught SIGTERM")

    def finish(self) -> tuple[int, str, str]:
        """Wait for the exit; return the status, the rest of stdout and stderr."""
        out, err = self.process.communicate()
        self._watchdog.cancel()
        return self.process.returncode, "".join(self.lines) + out, err


def pidurable(cwd: Path, *args: str) -> tuple[int, str, str]:
    """Run ``pidurable`` to its end."""
    return Pidurable(cwd, *args).finish()


def is_partial(message: dict[str, Any]) -> bool:
    """A streamed partial of the answer was committed and printed."""
    return is_streamed(message)


def write_script(
    directory: Path, *answers: str, tokens_per_second: int = 0, name: str = "script.json"
) -> Path:
    path = directory / name
    responses = [{"content": [{"type": "text", "text": answer}]} for answer in answers]
    script = {"tokens_per_second": tokens_per_second, "responses": responses}
    path.write_text(json.dumps(script))
    return path


def busy_script(directory: Path) -> str:
    return str(write_script(directory, ANSWER, tokens_per_second=2, name="busy.json"))


def fast_script(directory: Path, *more: str) -> str:
    return str(write_script(directory, ANSWER, *more, name="fast.json"))


def stored_messages(store: Path) -> list[tuple[str, str]]:
    """``(role or stop reason, text)`` of the root conversation's user and assistant entries."""
    messages = [
        entry.model[0]
        for entry in asyncio.run(stored_entries(store))
        if entry.model and isinstance(entry.model[0], dict)
    ]
    return [
        (message.get("stop_reason") or message["role"], text_of(message))
        for message in messages
        if message["role"] in ("user", "assistant")
    ]


def integrity(store: Path) -> str:
    with sqlite3.connect(store) as db:
        return str(db.execute("pragma integrity_check").fetchone()[0])


@pytest.fixture(autouse=True)
def _no_process_left() -> Iterator[None]:
    yield
    while Pidurable.started:
        left = Pidurable.started.pop()
        if left.process.poll() is None:
            left.process.kill()
        left.finish()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working directory of the command, with a home of its own for this test."""
    monkeypatch.setenv("PIDURABLE_HOME", str(tmp_path / "home"))
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "project"
    path.mkdir()
    monkeypatch.chdir(path)
    return path


def test_version_prints_the_package_version() -> None:
    assert main_output(["--version"]) == f"pidurable {__version__}\n"


def test_help_describes_the_durable_agent() -> None:
    out = main_output(["--help"])

    assert "usage: pidurable" in out
    assert "committed" in out


def main_output(argv: list[str]) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "pi_durable_tui", *argv], capture_output=True, text=True, check=True
    )
    return result.stdout


def test_print_mode_prints_the_final_answer_and_exits_0(project: Path) -> None:
    script = write_script(project, "The answer.")

    status, out, err = pidurable(
        project, "-p", "go", "--model", "faux/faux-1", "--faux-script", str(script)
    )

    assert (status, out, err) == (0, "The answer.\n", "")


def busy_run(project: Path, *args: str) -> Pidurable:
    """``pidurable -p go --mode json`` on the busy script (it streams for 20 s)."""
    busy = busy_script(project)
    return Pidurable(project, *args, "-p", "go", "--mode", "json", "--faux-script", busy)


RESUMES = "pidurable: The turn in the main conversation resumes (task 10, phase request).\n"
"""The recovery report of a run cut in the middle of its answer (on stderr in print mode)."""


def test_a_run_killed_mid_stream_is_finished_by_continue_and_continued_by_a_new_prompt_r22(
    project: Path,
) -> None:
    first = busy_run(project, "--model", "faux/faux-1")
    first.read_until(is_partial)
    first.process.kill()
    assert first.finish()[0] == -signal.SIGKILL

    fast = fast_script(project, "Second answer.")
    resumed = pidurable(project, "-c", "-p", "--faux-script", fast)
    continued = pidurable(project, "-c", "-p", "more", "--faux-script", fast)

    assert resumed == (0, ANSWER + "\n", RESUMES)  # the recovery report, as on the screen
    assert continued == (0, "Second answer.\n", "")
    [store] = (project.parent / "home" / "sessions").glob("*/*/session.sqlite")
    go, (cut, partial), *rest = stored_messages(store)
    assert go == ("user", "go")
    assert cut == "aborted"  # the partial the killed process committed (and printed) is kept
    assert ANSWER.startswith(partial)
    assert rest == [("stop", ANSWER), ("user", "more"), ("stop", "Second answer.")]


def test_a_prompt_resubmitted_with_its_request_id_after_a_kill_is_not_added_twice_r59(
    project: Path,
) -> None:
    store = project / "session.sqlite"
    options = ["--session", str(store), "--request-id", "job-7", "--model", "faux/faux-1"]
    first = busy_run(project, *options)
    first.read_until(lambda message: bool(message.get("submissions")))  # admitted
    first.process.kill()
    first.finish()

    again = pidurable(project, *options, "-p", "go", "--faux-script", fast_script(project))

    assert again == (0, ANSWER + "\n", RESUMES)
    assert [role for role, _ in stored_messages(store)].count("user") == 1


def test_a_session_open_in_another_process_is_refused_naming_that_process(
    project: Path,
) -> None:
    store = str(project / "session.sqlite")
    holder = busy_run(project, "--session", store, "--model", "faux/faux-1")
    holder.read_until(lambda message: message["t"] == "snapshot")  # the store is open

    status, out, err = pidurable(project, "--session", store, "-p", "again")
    holder.process.terminate()
    holder.finish()

    assert (status, out) == (2, "")
    assert err == (
        f"pidurable: the session {store} is open in process {holder.pid}; close that "
        "pidurable first, or start a new session (run without -c and --session)\n"
    )


def test_export_of_a_held_session_names_the_holders_pid_and_says_to_quit_it_or_use_slash_export(
    project: Path,
) -> None:
    store = str(project / "session.sqlite")
    holder = busy_run(project, "--session", store, "--model", "faux/faux-1")
    holder.read_until(lambda message: message["t"] == "snapshot")  # the store is open

    by_path = pidurable(project, "export", "--session", store, "--format", "markdown")
    holder.process.terminate()
    holder.finish()

    assert by_path == (
        2,
        "",
        f"pidurable export: the session {store} is open in process {holder.pid} (a running "
        "pidurable); quit that pidurable first, or run /export in it\n",
    )
    status, out, _ = pidurable(project, "export", "--session", store, "--format", "markdown")
    assert status == 0  # once the holder quit, the same export works
    assert "## User" in out


STOPS = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}


@pytest.mark.parametrize("signum", list(STOPS))
def test_a_stop_signal_at_any_moment_ends_with_one_line_and_a_store_that_reopens(
    project: Path, signum: signal.Signals
) -> None:
    delays: list[float | None] = [0.0, 0.1, 0.3, None]  # after its handlers; None: mid-stream
    stores = [project / f"session-{i}.sqlite" for i in range(len(delays))]
    processes = [busy_run(project, "--session", str(s), "--model", "faux/faux-1") for s in stores]
    for process, delay in zip(processes, delays, strict=True):
        process.handlers_installed()
        if delay is None:
            process.read_until(is_partial)
        else:
            time.sleep(delay)
        process.process.send_signal(signum)

    for process, delay in zip(processes, delays, strict=True):
        status, out, err = process.finish()
        assert status == 128 + signum, f"signal {delay} s after start: {err}"
        assert err.startswith(f"pidurable: {STOPS[signum]}"), err
        assert err.count("\n") == 1, err
        printed = messages(out)
        if printed:  # once the printing started, it ends with the stop's own result line
            assert (printed[-1]["t"], printed[-1]["status"], printed[-1]["reason"]) == (
                "result",
                "stopped",
                signum.name,
            ), f"signal {delay} s after start: {printed[-1]}"
    for store in stores:
        if store.exists():  # a signal during start-up may come before the store is created
            assert integrity(store) == "ok"
    resumed = pidurable(
        project, "--session", str(stores[-1]), "-p", "--faux-script", fast_script(project)
    )
    assert resumed == (0, ANSWER + "\n", RESUMES)


@pytest.fixture
def guard() -> Iterator[SignalGuard]:
    """A ``SignalGuard`` holding this process's SIGINT and SIGTERM for the test."""
    installed = SignalGuard()
    installed.install()
    yield installed
    installed.restore()


def test_a_stop_signal_during_the_heavy_imports_ends_the_command_right_after_them(
    guard: SignalGuard,
) -> None:
    # An exception raised in the middle of pydantic-core's initialisation makes it
    # panic with a traceback, so the imports run to their end first.
    ran: list[str] = []

    def imports() -> None:
        with guard.deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)  # the handler runs here, between two bytecodes
            ran.append("the rest of the block")

    with pytest.raises(Interrupted):
        imports()

    assert ran == ["the rest of the block"]
    assert guard.received == signal.SIGTERM


@pytest.mark.parametrize(
    ("setup", "argv", "line"),
    [
        (
            {"session.sqlite": "not a database " * 100},
            ["--session", "session.sqlite", "-p", "x"],
            "is damaged or not a SQLite database",
        ),
        (
            {"script.json": '{"responses": [{"content": 3}]}'},
            ["-p", "x", "--model", "faux/faux-1", "--faux-script", "script.json"],
            "script.json: responses[0].content: expected an array, got number 3",
        ),
        (
            {".pidurable/settings.json": '{"retry": {"max_retries": "x"}}'},
            ["-p", "x"],
            'settings.json: retry.max_retries: expected a whole number, got string "x"',
        ),
        (
            {".pidurable/settings.json": "{"},
            ["--list-models"],
            "settings.json: is not valid JSON: line 1 column 2: Expecting property name",
        ),
        ({}, ["-p", "x", "--model", "openai/nope"], "Unknown model openai/nope. Models of openai:"),
        ({}, ["-c", "-p"], "No session exists for"),
        ({}, ["-c"], "No session exists for"),  # the terminal app: found before any screen
        ({}, ["-r"], "No session exists for"),
    ],
)
def test_a_startup_problem_exits_2_with_one_line_and_no_traceback(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    setup: dict[str, str],
    argv: list[str],
    line: str,
) -> None:
    for name, text in setup.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)

    status = main(argv)

    captured = capsys.readouterr()
    assert (status, captured.out) == (2, "")
    assert captured.err.startswith("pidurable: ")
    assert line in captured.err
    assert captured.err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["--model", "faux/faux-1", "--faux-script", "error.json"],
            "pidurable: the model request failed: bad request\n",
        ),
        (
            ["--model", "anthropic/claude-sonnet-4-5"],
            "pidurable: the model request failed: ANTHROPIC_API_KEY is not set: export it to "
            "use anthropic/claude-sonnet-4-5\n",
        ),
    ],
)
def test_an_unanswered_prompt_exits_1_with_one_line_saying_why(
    project: Path, capsys: pytest.CaptureFixture[str], argv: list[str], line: str
) -> None:
    error = {"error": {"message": "bad request", "status": 400}}
    (project / "error.json").write_text(json.dumps({"responses": [error]}))

    status = main(["-p", "hi", *argv])

    captured = capsys.readouterr()
    assert (status, captured.out, captured.err) == (1, "", line)


def test_print_mode_without_a_model_says_how_to_configure_one(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["-p", "hello"]) == 1

    assert capsys.readouterr().err == (
        'pidurable: No model is configured; use --model provider/id, or set "model" in settings\n'
    )


def test_list_models_prints_the_catalog_and_the_scripts_models(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = write_script(project, "x")

    assert main(["--list-models", "--faux-script", str(script)]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert any(line.split()[0] == "faux/faux-1" for line in lines)
    assert any(
        line.startswith("anthropic/") and "(set ANTHROPIC_API_KEY)" in line for line in lines
    )


def test_main_called_from_python_gives_the_signal_handlers_back(project: Path) -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)

    main(["-p", "hello"])

    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_main_called_from_another_thread_runs_without_touching_signals(project: Path) -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    statuses: list[int] = []

    worker = threading.Thread(target=lambda: statuses.append(main(["-p", "hello"])))
    worker.start()
    worker.join(DEADLINE)

    assert statuses == [1]  # no model: answered with its one line, not a crash
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
