"""``pidurable`` with its sessions in PostgreSQL: real processes, a real server, real kills.

With ``PIDURABLE_DATABASE_URL`` (or ``"database"`` in the user's settings) the
sessions of a working directory live in the database, so two machines with the
same URL share them. "Another machine" is a process with another
``PIDURABLE_HOME``: nothing of the first process's home is visible to it. Each
test gets a working directory of its own, so its sessions are its own. The
helpers are ``test_cli``'s.
"""

from __future__ import annotations

import json
import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_durable_tui.harness import text_of
from pi_durable_tui.storage.postgres import redact
from tests.test_cli import (
    ANSWER,
    RESUMES,
    Pidurable,
    busy_script,
    fast_script,
    is_partial,
    pidurable,
    write_script,
)


@pytest.fixture(autouse=True)
def _no_process_left() -> Iterator[None]:
    yield
    while Pidurable.started:
        left = Pidurable.started.pop()
        if left.process.poll() is None:
            left.process.kill()
        left.finish()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres_url: str) -> Path:
    """A working directory whose sessions live in the test server, seen from machine A."""
    monkeypatch.setenv("PIDURABLE_DATABASE_URL", postgres_url)
    monkeypatch.setenv("PIDURABLE_HOME", str(tmp_path / "home-a"))
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "project"
    path.mkdir()
    monkeypatch.chdir(path)
    return path


def on_machine_b(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on, processes run with another home: another machine, the same database."""
    monkeypatch.setenv("PIDURABLE_HOME", str(project.parent / "home-b"))


def transcript(project: Path, *args: str) -> list[tuple[str, str]]:
    """``(role, text)`` of each message ``pidurable export --format jsonl`` writes."""
    status, out, err = pidurable(project, "export", "--format", "jsonl", *args)
    assert (status, err) == (0, ""), err
    rows = []
    for line in out.splitlines():
        entry = json.loads(line)
        message = (entry.get("model") or [None])[0]
        if isinstance(message, dict) and message.get("role") in ("user", "assistant"):
            rows.append((message.get("stop_reason") or message["role"], text_of(message)))
    return rows


def test_another_machine_continues_a_session_that_a_killed_process_left(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = Pidurable(
        project, "-p", "go", "--mode", "json", "--model", "faux/faux-1",
        "--faux-script", busy_script(project),
    )  # fmt: skip
    first.read_until(is_partial)  # a partial answer is committed (and printed)
    first.process.send_signal(signal.SIGKILL)
    assert first.finish()[0] == -signal.SIGKILL

    on_machine_b(project, monkeypatch)
    fast = fast_script(project, "Next.")
    resumed = pidurable(project, "-c", "-p", "--faux-script", fast)
    continued = pidurable(project, "-c", "-p", "more", "--faux-script", fast)

    assert resumed == (0, ANSWER + "\n", RESUMES)
    assert continued == (0, "Next.\n", "")
    go, (cut, partial), *rest = transcript(project)
    assert go == ("user", "go")
    assert cut == "aborted"  # the killed process's committed partial is kept
    assert ANSWER.startswith(partial)
    assert rest == [("stop", ANSWER), ("user", "more"), ("stop", "Next.")]
    assert not list((project.parent / "home-b").rglob("session.sqlite"))  # no file anywhere
    assert not list((project.parent / "home-a").rglob("session.sqlite"))


def test_a_session_open_on_another_machine_is_refused_naming_its_host_and_pid(
    project: Path, monkeypatch: pytest.MonkeyPatch, postgres_tcp_url: str
) -> None:
    monkeypatch.setenv("PIDURABLE_DATABASE_URL", postgres_tcp_url)  # with its password
    holder = Pidurable(
        project, "-p", "go", "--mode", "json", "--model", "faux/faux-1",
        "--faux-script", busy_script(project),
    )  # fmt: skip
    holder.read_until(lambda message: message["t"] == "snapshot")  # the store is open

    on_machine_b(project, monkeypatch)
    status, out, err = pidurable(project, "-c", "-p", "again")
    holder.process.terminate()
    holder.finish()

    assert (status, out) == (2, "")
    assert err.startswith("pidurable: Session is already open in another process: ")
    assert (
        f" in {redact(postgres_tcp_url)} (held by {socket.gethostname()} pid {holder.pid}); " in err
    )
    assert postgres_tcp_url not in err
    assert err.endswith(
        "close that pidurable first, or start a new session (run without -c and --session)\n"
    )
    assert err.count("\n") == 1


def test_the_resume_list_and_session_ids_come_from_the_database(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = str(write_script(project, "One.", "Two."))
    for prompt in ("first task", "second task"):
        run = pidurable(project, "-p", prompt, "--model", "faux/faux-1", "--faux-script", script)
        assert run == (0, "One.\n", "")

    [key] = os.listdir(project.parent / "home-a" / "sessions")
    first_id, _ = sorted(os.listdir(project.parent / "home-a" / "sessions" / key))

    on_machine_b(project, monkeypatch)
    status, out, _ = Pidurable(project, "-r", "-p", "x").finish()  # no answer on stdin
    listed = [line for line in out.splitlines() if "task" in line]
    assert len(listed) == 2
    assert "second task" in listed[0]  # newest first, titled from the database
    assert "first task" in listed[1]
    status, out, err = pidurable(
        project, "--session", first_id, "-p", "and then", "--faux-script", script
    )
    assert (status, out, err) == (0, "Two.\n", "")
    assert transcript(project, "--session", f"{key}/{first_id}") == [
        ("user", "first task"),
        ("stop", "One."),
        ("user", "and then"),
        ("stop", "Two."),
    ]
    assert transcript(project)[0] == ("user", "second task")  # the newest


def test_a_database_named_in_the_users_settings_is_used_and_a_projects_is_refused(
    project: Path, monkeypatch: pytest.MonkeyPatch, postgres_url: str
) -> None:
    monkeypatch.delenv("PIDURABLE_DATABASE_URL")
    home = project.parent / "home-a"
    home.mkdir()
    (home / "settings.json").write_text(json.dumps({"database": postgres_url}))
    script = str(write_script(project, "Stored."))
    assert pidurable(project, "-p", "hi", "--model", "faux/faux-1", "--faux-script", script) == (
        0,
        "Stored.\n",
        "",
    )
    assert not list(home.rglob("session.sqlite"))
    assert transcript(project) == [("user", "hi"), ("stop", "Stored.")]

    (project / ".pidurable").mkdir()
    (project / ".pidurable" / "settings.json").write_text(json.dumps({"database": postgres_url}))
    status, out, err = pidurable(project, "-c", "-p", "again")
    assert (status, out) == (2, "")
    assert "database: only your own settings" in err
    assert postgres_url not in err


def test_an_unreachable_database_is_one_line_that_never_shows_the_password(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"postgresql://me:hunter2secret@127.0.0.1:{port}/db"
    monkeypatch.setenv("PIDURABLE_DATABASE_URL", url)
    script = str(write_script(project, "Never."))
    new = ("-p", "hi", "--model", "faux/faux-1", "--faux-script", script)
    for args in (new, ("-c", "-p", "hi"), ("export",)):
        status, out, err = pidurable(project, *args)
        assert status == 2, args
        assert "hunter2secret" not in out + err, args
        assert f"postgresql://me:***@127.0.0.1:{port}/db" in err, args
        assert err.count("\n") == 1, err
