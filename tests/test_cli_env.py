"""``pidurable --env ssh://...`` and the ``env`` setting, end to end (issue 17).

A bad URL, a project that tries to choose the host, an untrusted host key and a
missing remote directory each stop the command with one line and status 2.
Against the real test ``sshd``, ``pidurable -p`` runs every tool call on the
remote host: the prompt names ``user@host:/path`` and the remote platform, the
remote ``AGENTS.md`` is read, files are written there, remote secrets stay
scrubbed; sessions are filed under the URL, so ``-c`` with the same ``--env``
(or the user's ``env`` setting) continues from any local directory, and
``--session PATH`` alone reconnects to the host the session used.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pi_durable_tui.cli import main
from tests.env.sshd_server import REMOTE_SECRET_NAME, Sshd

TOOLS = {
    "responses": [
        {
            "content": [
                {
                    "type": "tool_call",
                    "name": "bash",
                    "arguments": {"command": f'pwd; echo "secret=[${REMOTE_SECRET_NAME}]"'},
                },
                {
                    "type": "tool_call",
                    "name": "write",
                    "arguments": {"path": "made.txt", "content": "written remotely\n"},
                },
            ],
            "stop_reason": "toolUse",
        },
        {"content": [{"type": "text", "text": "first done"}]},
        {"content": [{"type": "text", "text": "second done"}]},
        {"content": [{"type": "text", "text": "third done"}]},
    ]
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PIDURABLE_HOME", str(tmp_path / "home"))
    path = tmp_path / "project"
    path.mkdir()
    monkeypatch.chdir(path)
    return path


def _faux(directory: Path) -> list[str]:
    script = directory / "answer.json"
    script.write_text(json.dumps({"responses": [{"content": [{"type": "text", "text": "ok"}]}]}))
    return ["--faux-script", str(script), "--model", "faux/faux-1"]


def _fails_with(capsys: pytest.CaptureFixture[str], argv: list[str], line: str) -> None:
    status = main(argv)
    captured = capsys.readouterr()
    assert (status, captured.out) == (2, "")
    assert captured.err.startswith("pidurable: ")
    assert line in captured.err
    assert captured.err.count("\n") == 1


@pytest.mark.parametrize(
    ("url", "line"),
    [
        ("ssh://host/srv", "--env: Invalid SSH environment URL 'ssh://host/srv': it names no user"),
        ("scp://a@b/c", "it must start with ssh://"),
        ("ssh://a@b:99999/c", "the port must be a number from 1 to 65535"),
    ],
)
def test_a_bad_env_url_is_one_line_and_status_2(
    project: Path, capsys: pytest.CaptureFixture[str], url: str, line: str
) -> None:
    _fails_with(capsys, ["--env", url, "-p", "x"], line)


def test_a_bad_env_setting_names_the_user_settings_file(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "settings.json").write_text('{"env": "ssh://nobody"}')
    _fails_with(capsys, ["-p", "x"], "settings.json: env: Invalid SSH environment URL")


def test_a_project_may_not_choose_where_the_tools_run(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / ".pidurable").mkdir()
    (project / ".pidurable" / "settings.json").write_text('{"env": "ssh://a@b/c"}')
    _fails_with(capsys, ["-p", "x"], "env: only your own settings")


def test_an_untrusted_host_key_is_one_line_saying_how_to_trust_it(
    project: Path,
    tmp_path: Path,
    sshd: Sshd,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stranger = tmp_path / "stranger-home"
    (stranger / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(stranger))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    line = f"trust it with: ssh-keyscan -p {sshd.port} 127.0.0.1 >> {stranger}/.ssh/known_hosts"
    _fails_with(capsys, ["--env", sshd.url("/tmp"), "-p", "x", *_faux(tmp_path)], line)
    assert not list((tmp_path / "home").glob("sessions/*/*")), "a failed start leaves a session"


def test_a_missing_remote_directory_is_one_line(
    project: Path, tmp_path: Path, ssh_client: Sshd, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ssh_client.url("/no/such/dir")
    line = f"the remote working directory {ssh_client.user}@127.0.0.1:/no/such/dir does not exist"
    _fails_with(capsys, ["--env", url, "-p", "x", *_faux(tmp_path)], line)


def _run(cwd: Path, environ: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_durable_tui", *args],
        cwd=cwd,
        env=environ,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_print_mode_runs_every_tool_on_the_remote_host_and_continue_finds_it(
    ssh_client: Sshd, tmp_path: Path
) -> None:
    remote = tmp_path / "remote"
    remote.mkdir()
    (remote / "AGENTS.md").write_text("Remote rule: answer in haiku.\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps(TOOLS))
    home = tmp_path / "pidurable-home"
    environ = {**os.environ, "HOME": str(ssh_client.home), "PIDURABLE_HOME": str(home)}
    environ.pop("SSH_AUTH_SOCK", None)
    first_dir, second_dir = tmp_path / "one", tmp_path / "two"
    first_dir.mkdir()
    second_dir.mkdir()
    url = ssh_client.url(str(remote))
    where = f"{ssh_client.user}@127.0.0.1:{remote}"

    first = _run(
        first_dir,
        environ,
        *("--env", url, "--faux-script", str(script), "--model", "faux/faux-1"),
        *("--mode", "json", "-p", "go"),
    )

    assert first.returncode == 0, first.stderr
    assert (remote / "made.txt").read_text() == "written remotely\n"
    assert not (first_dir / "made.txt").exists()
    events = first.stdout
    assert f"Working directory: {where}" in events
    assert "(over SSH)" in events
    assert f"Instructions from {where}/AGENTS.md" in events
    assert "Remote rule: answer in haiku." in events
    assert f"{remote}\\nsecret=[]" in events, "bash ran elsewhere or saw the remote secret"

    (home / "settings.json").write_text(json.dumps({"env": url}))
    second = _run(second_dir, environ, "-c", "-p", "again")
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "second done"

    (home / "settings.json").unlink()  # --session alone finds the host again
    (store,) = home.glob("sessions/*/*/session.sqlite")
    third = _run(second_dir, environ, "--session", str(store), "--mode", "json", "-p", "more")
    assert third.returncode == 0, third.stderr
    assert "third done" in third.stdout
    # The same prompt sections (user@host, the remote platform): no system change entry;
    # a local environment would have changed them to the bare path.
    assert f"Working directory: {remote}" not in third.stdout
