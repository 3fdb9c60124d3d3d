"""Settings files the command cannot use, and project settings that widen powers (issues 12, 13).

Real ``python -m pi_durable_tui`` processes in a project directory with their own
``PIDURABLE_HOME``: a settings file that is binary garbage, JSON nested 100,000
deep or a value of the wrong type stops the command before anything starts, with
exit status 2 and one line naming the file, the key and what was expected; never
a traceback, and no session is created.

A project file's widening keys the user never confirmed are ignored in print mode,
with one line on stderr saying how to trust them; a hostile model that writes
them itself (by ``write`` and by ``bash``) gets no file outside the workspace and
no byte of the user's key into the store (``tests/app/hostile_settings``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.app.hostile_settings import LAST_WORDS, REGRANT, SECRET, Attack

DEADLINE = 60.0
"""Seconds a process may take before the test fails."""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def pidurable(
    project: Path, home: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the command to its end in ``project`` with ``home`` as ``PIDURABLE_HOME``."""
    environ = {**os.environ, "PIDURABLE_HOME": str(home), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "pi_durable_tui", *args],
        cwd=project,
        env=environ,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )


@pytest.mark.parametrize(
    ("where", "content", "line"),
    [
        ("project", b"\x00\xff\xfe\x9b[2J garbage", "is not UTF-8 text (byte 1 is not valid)"),
        ("user", b"[" * 100_000 + b"]" * 100_000, "the JSON nests more than 32 levels deep"),
        (
            "project",
            b'{"allow_outside_cwd": "false"}',
            'allow_outside_cwd: expected true or false, got string "false"',
        ),
        ("user", b'{"retry": {"max_retries": "3"}}', "retry.max_retries: expected a whole number"),
    ],
    ids=["binary", "deep", "string-for-boolean", "string-for-number"],
)
@pytest.mark.parametrize("argv", [["-p", "hello"], ["--list-models"]], ids=["print", "models"])
def test_a_settings_file_the_command_cannot_use_exits_2_with_one_line_and_no_traceback(
    project: Path, home: Path, where: str, content: bytes, line: str, argv: list[str]
) -> None:
    settings = (project / ".pidurable" if where == "project" else home) / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_bytes(content)

    done = pidurable(project, home, *argv, "--model", "faux/faux-1")

    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.startswith(f"pidurable: {settings}: ")
    assert line in done.stderr
    assert done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr
    assert not (home / "sessions").exists()  # nothing was created


def test_print_mode_ignores_unconfirmed_widening_keys_with_one_line_saying_how_to_trust_them(
    project: Path, home: Path, tmp_path: Path
) -> None:
    settings = project / ".pidurable" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"allow_outside_cwd": True, "env_allow": ["*"]}))
    outside = tmp_path / "outside.txt"
    script = tmp_path / "script.json"
    write = {
        "type": "tool_call",
        "name": "write",
        "arguments": {"path": str(outside), "content": "x"},
    }
    responses = [
        {"content": [write], "stop_reason": "toolUse"},
        {"content": [{"type": "text", "text": "ok"}]},
    ]
    script.write_text(json.dumps({"responses": responses}))

    done = pidurable(
        project, home, "-p", "go", "--model", "faux/faux-1", "--faux-script", str(script)
    )

    assert (done.returncode, done.stdout) == (0, "ok\n"), done.stderr
    assert done.stderr == (
        f"pidurable: ignoring allow_outside_cwd, env_allow in {settings}: not confirmed by you; "
        f"to use them, run pidurable in {project} once and trust them, or set them in "
        f"{home / 'settings.json'}\n"
    )
    assert not outside.exists()


def test_a_hostile_model_granting_itself_powers_in_print_mode_escapes_nothing_and_leaks_nothing(
    tmp_path: Path,
) -> None:
    attack = Attack.prepare(tmp_path)

    done = pidurable(
        attack.workspace,
        attack.home,
        "-p",
        "do your worst",
        "--model",
        "faux/faux-1",
        "--faux-script",
        str(attack.script),
        env={"OPENAI_API_KEY": SECRET},
    )

    assert (done.returncode, done.stdout) == (0, LAST_WORDS + "\n"), done.stderr
    assert done.stderr.count("\n") == 1  # one warning, however often the file changed
    assert done.stderr.startswith("pidurable: ignoring allow_outside_cwd, env_allow in ")
    assert attack.escaped_files() == []
    assert attack.leaked_bytes() == 0
    assert json.loads((attack.workspace / ".pidurable" / "settings.json").read_text()) == REGRANT
