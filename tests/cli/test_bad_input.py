"""Bad input on the command line (issue 12, "Bad input"): real ``pidurable`` processes.

Each problem the user can fix ends with exit status 2 and ONE line on stderr
saying what is wrong and what to do: never a traceback, and nothing created
(``BAD_INPUTS``, one row each). A full disk and a read-only home are real
file systems (a tmpfs of a few MiB, mounted for the test: it needs root and is
skipped without), never a simulated errno. Beside the table: a disk that fills
in the middle of a run keeps the store intact and the session continues once
space is back; text that is not UTF-8 is stored or exported, not refused;
``export | head`` ends quietly; SIGHUP stops like SIGTERM (exit 129).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.cli.support import (
    mount_tmpfs,
    only_store,
    run,
    tree,
    unmount,
    user_texts,
    write_script,
)
from tests.deadlines import WAIT
from tests.wire_lines import is_streamed, messages

FAUX = ("--model", "faux/faux-1")


@dataclass
class Place:
    """Where a case runs: the project, the home, the test's directory, what to undo."""

    project: Path
    home: Path
    root: Path
    env: dict[str, str] | None = None
    undo: list[Callable[[], None]] = field(default_factory=list)


def ask(place: Place, prompt: str = "hi") -> list[str]:
    """``-p PROMPT`` on the faux model, answered ``ok`` by a script outside the project."""
    script = place.root / "script.json"
    if not script.exists():
        write_script(place.root, "ok")
    return ["-p", prompt, *FAUX, "--faux-script", str(script)]


def a_directory(place: Place) -> list[str]:
    (place.project / "sessions").mkdir()
    return ["--session", "sessions", *ask(place)]


def a_missing_directory(place: Place) -> list[str]:
    return ["--session", str(place.root / "nowhere" / "deeper" / "s.sqlite"), *ask(place)]


def export_missing(place: Place) -> list[str]:
    return ["export", "--session", "missing.sqlite"]


def an_empty_store(place: Place) -> list[str]:
    (place.project / "empty.sqlite").write_bytes(b"")
    return ["--session", "empty.sqlite", *ask(place)]


def a_truncated_store(place: Place) -> list[str]:
    made = run(place.project, "--session", "cut.sqlite", *ask(place))
    assert made.status == 0, made.err
    store = place.project / "cut.sqlite"
    store.write_bytes(store.read_bytes()[:5000])
    return ["--session", "cut.sqlite", *ask(place, "again")]


def _continued_store_made_a_directory(place: Place) -> None:
    made = run(place.project, *ask(place))
    assert made.status == 0, made.err
    store = only_store(place.home)
    store.unlink()
    store.mkdir()


def continue_a_store_that_is_a_directory(place: Place) -> list[str]:
    _continued_store_made_a_directory(place)
    return ["-c", *ask(place, "again")]


def export_a_store_that_is_a_directory(place: Place) -> list[str]:
    _continued_store_made_a_directory(place)
    return ["export", "--format", "markdown"]


def a_store_another_client_holds(place: Place) -> list[str]:
    store = place.project / "held.sqlite"
    made = run(place.project, "--session", str(store), *ask(place))
    assert made.status == 0, made.err
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys; db = sqlite3.connect(sys.argv[1], isolation_level=None);"
            " db.execute('BEGIN IMMEDIATE'); print('held', flush=True); sys.stdin.read()",
            str(store),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline() == "held\n"

    def release() -> None:
        holder.communicate("", timeout=WAIT)

    place.undo.append(release)
    return ["--session", str(store), *ask(place, "again")]


def a_read_only_home(place: Place) -> list[str]:
    mount = place.root / "read-only-home"
    mount_tmpfs(mount, "1m", read_only=True)
    place.undo.append(lambda: unmount(mount))
    place.env = {"PIDURABLE_HOME": str(mount)}
    return ask(place)


def a_full_disk(place: Place) -> list[str]:
    mount = place.root / "full-home"
    mount_tmpfs(mount, "1m")
    place.undo.append(lambda: unmount(mount))
    with open(mount / "filler", "wb") as filler:  # every block of the disk
        try:
            while True:
                filler.write(b"\0" * 65536)
                filler.flush()
        except OSError:
            pass
    place.env = {"PIDURABLE_HOME": str(mount)}
    return ask(place)


BAD_INPUTS: list[tuple[Callable[[Place], list[str]], str]] = [
    (a_directory, "pidurable: --session sessions is a directory, not a session store; name"),
    (a_missing_directory, "/nowhere/deeper does not exist; create it first, or name a store"),
    (export_missing, "pidurable export: No session store at"),
    (an_empty_store, "is empty (0 bytes): it holds no session"),
    (a_truncated_store, "is damaged or not a SQLite database"),
    (
        continue_a_store_that_is_a_directory,
        "session.sqlite is a directory, not a SQLite file; move",
    ),
    (export_a_store_that_is_a_directory, "is a directory, not a SQLite file; move it aside"),
    (a_store_another_client_holds, "is locked by another SQLite client (process "),
    (a_read_only_home, "the file system is read-only; make it writable, or set PIDURABLE_HOME"),
    (a_full_disk, "is full; free some space and run again"),
]


@pytest.fixture
def place(project: Path, home: Path, tmp_path: Path) -> Iterator[Place]:
    made = Place(project, home, tmp_path)
    yield made
    for undo in reversed(made.undo):
        undo()


@pytest.mark.parametrize(("setup", "line"), BAD_INPUTS, ids=[s.__name__ for s, _ in BAD_INPUTS])
def test_bad_input_exits_2_with_one_line_no_traceback_and_nothing_created(
    place: Place, setup: Callable[[Place], list[str]], line: str
) -> None:
    argv = setup(place)
    home = Path(place.env["PIDURABLE_HOME"]) if place.env else place.home
    before = tree(place.root), tree(home) if home.exists() else set()
    env = None if place.env is None else {**os.environ, **place.env}

    ran = run(place.project, *argv, env=env)

    assert (ran.status, ran.out) == (2, ""), ran.err
    assert ran.err.count("\n") == 1, ran.err
    assert "Traceback" not in ran.err
    assert line in ran.err
    assert (tree(place.root), tree(home) if home.exists() else set()) == before


def integrity(store: Path) -> str:
    with sqlite3.connect(store) as db:
        return str(db.execute("pragma integrity_check").fetchone()[0])


BIG = "word " * 200_000
"""A 1 MB answer: its streamed partials need more than the room a filled disk leaves."""


def test_a_disk_that_fills_during_a_run_keeps_the_store_and_the_session_continues_after(
    place: Place,
) -> None:
    mount = place.root / "disk"
    mount_tmpfs(mount, "16m")
    place.undo.append(lambda: unmount(mount))
    filler = mount / "filler"
    filler.write_bytes(b"\0" * (15 * 1024 * 1024))  # about 1 MiB left
    env = {**os.environ, "PIDURABLE_HOME": str(mount / "home")}
    script = write_script(place.root, BIG)

    full = run(place.project, "-p", "go", *FAUX, "--faux-script", str(script), env=env)

    store = only_store(mount / "home")
    assert (full.status, full.out) == (2, ""), full.err
    assert full.err == (
        f"pidurable: the disk holding the session store {store} is full; nothing committed "
        "was lost: free some space, then `pidurable -c -p` continues the session\n"
    )
    assert integrity(store) == "ok"
    filler.unlink()
    continued = run(place.project, "-c", "-p", env=env)
    resumes = "pidurable: The turn in the main conversation resumes (task 10, phase request).\n"
    assert (continued.status, continued.out, continued.err) == (0, BIG + "\n", resumes)
    assert user_texts(store) == ["go"]


def test_a_prompt_that_is_not_utf8_is_stored_with_replacement_characters(
    place: Place,
) -> None:
    script = write_script(place.root, "ok")

    ran = run(place.project, "-p", b"fix \xff\xfe it", *FAUX, "--faux-script", str(script))

    assert (ran.status, ran.out, ran.err) == (0, "ok\n", "")
    store = only_store(place.home)
    assert user_texts(store) == ["fix \ufffd\ufffd it"]
    assert (store.parent / "title.txt").read_text("utf-8") == "fix \ufffd\ufffd it\n"


def test_export_escapes_a_lone_surrogate_that_a_tool_output_held(place: Place) -> None:
    script = place.root / "tool.json"
    call = {"type": "tool_call", "name": "bash", "arguments": {"command": "echo MARK"}}
    responses = [{"content": [call]}, {"content": [{"type": "text", "text": "done"}]}]
    script.write_text(json.dumps({"responses": responses}))
    assert run(place.project, "-p", "go", *FAUX, "--faux-script", str(script)).status == 0
    store = only_store(place.home)
    with sqlite3.connect(store) as db:  # the storage protocol's strings may hold lone surrogates
        db.execute("update entries set record = replace(record, 'MARK', 'A\\udcffB')")

    jsonl = run(place.project, "export", "--format", "jsonl")
    markdown = run(place.project, "export", "--format", "markdown")

    assert (jsonl.status, jsonl.err, markdown.status, markdown.err) == (0, "", 0, "")
    results = [json.loads(line) for line in jsonl.out.splitlines()]
    outputs = [
        r["model"][0]["content"][0]["text"] for r in results if r["kind"] == "pi.tool-result"
    ]
    assert outputs == ["A\udcffB\n"]  # the exact string, escaped in valid JSON
    assert "A\\udcffB" in markdown.out


def test_export_into_a_pipe_closed_early_ends_quietly(place: Place) -> None:
    script = write_script(place.root, BIG)
    assert run(place.project, "-p", "go", *FAUX, "--faux-script", str(script)).status == 0

    export = subprocess.Popen(
        [sys.executable, "-m", "pi_durable_tui", "export", "--format", "jsonl"],
        cwd=place.project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert export.stdout is not None
    assert export.stderr is not None
    assert export.stdout.read(100)
    export.stdout.close()  # as `| head -c 100` does
    status = export.wait(WAIT)

    assert (status, export.stderr.read()) == (141, b"")


def test_sighup_stops_print_mode_like_sigterm_with_exit_129(place: Place) -> None:
    script = place.root / "slow.json"
    answer = {"content": [{"type": "text", "text": " ".join(f"w{i}" for i in range(40))}]}
    script.write_text(json.dumps({"tokens_per_second": 2, "responses": [answer]}))
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pi_durable_tui",
            "-p",
            "go",
            "--mode",
            "json",
            *FAUX,
            "--faux-script",
            str(script),
        ],
        cwd=place.project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:  # the answer streams: the store is open and written
        if is_streamed(messages(line)[0]):
            break
    process.send_signal(signal.SIGHUP)
    _, err = process.communicate(timeout=WAIT)

    assert process.returncode == 129
    assert err == ("pidurable: hung up; the session is saved: `pidurable -c -p` continues it\n")
    assert integrity(only_store(place.home)) == "ok"


@pytest.mark.parametrize(("stop", "status"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_stop_signal_during_a_bash_call_ends_its_process_group_and_continue_names_the_signal(
    place: Place, stop: signal.Signals, status: int
) -> None:
    started = place.root / "started"
    (place.project / "hold.sh").write_text(
        f"echo $$ > {started}.tmp && mv {started}.tmp {started} && exec sleep 30\n"
    )
    call = {"type": "tool_call", "name": "bash", "arguments": {"command": "sh hold.sh"}}
    script = place.root / "sleep.json"
    responses = [{"content": [call]}, {"content": [{"type": "text", "text": "answered"}]}]
    script.write_text(json.dumps({"responses": responses}))
    argv = [*FAUX, "--faux-script", str(script), "--permission-mode", "auto"]
    process = subprocess.Popen(
        [sys.executable, "-m", "pi_durable_tui", "-p", "go", *argv],
        cwd=place.project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + WAIT
    while not started.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the bash call never started"
        time.sleep(0.05)
    sleeper = int(started.read_text())

    process.send_signal(stop)
    _, err = process.communicate(timeout=5)  # never the 30 s of the command

    assert process.returncode == status, err
    gone = time.monotonic() + 5
    while _alive(sleeper):
        assert time.monotonic() < gone, f"the command's process {sleeper} outlived pidurable"
        time.sleep(0.05)
    continued = run(place.project, "-c", "-p", *argv)
    assert (continued.status, continued.out) == (0, "answered\n"), continued.err
    # A stop, not a crash: the run's close said which signal stopped the call.
    cut = f"pidurable: bash `sh hold.sh` was cut when pidurable was stopped ({stop.name}) while"
    assert cut in continued.err
    assert "the model gets it as interrupted" in continued.err


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize(("stop", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_stop_signal_during_a_retry_wait_exits_at_once_not_after_the_backoff(
    place: Place, stop: signal.Signals, status: int
) -> None:
    script = place.root / "limited.json"
    error = {"message": "rate limited", "status": 429, "retryable": True, "retry_after_ms": 30000}
    script.write_text(json.dumps({"responses": [{"error": error}]}))
    process = subprocess.Popen(
        [sys.executable, "-m", "pi_durable_tui", "-p", "go", *FAUX, "--faux-script", str(script)],
        cwd=place.project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    waiting = process.stderr.readline()
    assert waiting == "pidurable: retrying in 30s (attempt 2): rate limited\n"

    stopped = time.monotonic()
    process.send_signal(stop)
    rest = process.stderr.read()
    process.wait(timeout=5)

    assert time.monotonic() - stopped < 3
    assert process.returncode == status, rest
    assert "the session is saved: `pidurable -c -p` continues it" in rest


def _without_root_powers() -> list[str]:
    """A command prefix under which file modes apply (root ignores them), or skip the test."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv is missing: root would write a 0444 file anyway")
    dropped = "-dac_override,-dac_read_search"
    return ["setpriv", f"--inh-caps={dropped}", f"--bounding-set={dropped}"]


def test_a_store_file_that_is_read_only_is_refused_at_open_and_left_as_it_was(
    place: Place,
) -> None:
    made = run(place.project, *ask(place))
    assert made.status == 0, made.err
    store = only_store(place.home)
    store.chmod(0o444)
    before = store.read_bytes(), tree(place.root)

    done = subprocess.run(
        [
            *_without_root_powers(),
            sys.executable,
            "-m",
            "pi_durable_tui",
            "-c",
            *ask(place, "more"),
        ],
        cwd=place.project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )

    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr == (
        f"pidurable: the session store {store} cannot be written (read-only file system or "
        "no permission); make it writable, or start a session elsewhere\n"
    )
    assert (store.read_bytes(), tree(place.root)) == before  # no -wal, no -shm beside it
