"""Where a session's tools work: ``--env``, the user's ``env`` setting, the footer (issue 17)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pi_durable_tui.app import (
    AgentApp,
    AppOptions,
    LiveScreenModel,
    LocationError,
    resolve_location,
    sessions_dir,
)
from pi_durable_tui.env import FileError
from pi_durable_tui.env.ssh import SshEnv
from tests.env.sshd_server import Sshd


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "pidurable-home"
    path.mkdir()
    monkeypatch.setenv("PIDURABLE_HOME", str(path))
    return path


def test_without_a_url_the_location_is_the_real_local_directory(home: Path, tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    location = resolve_location(str(tmp_path / "link"), None)
    assert (location.key, location.remote) == (str(tmp_path / "real"), False)
    assert location.show("/x") == "/x"
    assert resolve_location(str(tmp_path), "local").remote is False


def test_a_url_files_sessions_under_itself_and_shows_user_at_host(
    home: Path, tmp_path: Path
) -> None:
    location = resolve_location(str(tmp_path), "ssh://bob@build:2222/srv/app/")
    assert location.key == "ssh://bob@build:2222/srv/app"
    assert location.show("/srv/app") == "bob@build:/srv/app"
    elsewhere = resolve_location("/", "ssh://bob@build:2222/srv/app")
    assert sessions_dir(location.key) == sessions_dir(elsewhere.key)
    assert sessions_dir(location.key) != sessions_dir(str(tmp_path))


def test_the_user_setting_is_used_when_no_option_is_given_and_the_option_wins(
    home: Path, tmp_path: Path
) -> None:
    (home / "settings.json").write_text(json.dumps({"env": "ssh://bob@build/srv"}))
    assert resolve_location(str(tmp_path), None).key == "ssh://bob@build:22/srv"
    assert resolve_location(str(tmp_path), "local").remote is False
    assert resolve_location(str(tmp_path), "ssh://amy@other/x").key == "ssh://amy@other:22/x"
    (home / "settings.json").write_text(json.dumps({"env": "ftp://x"}))
    with pytest.raises(LocationError, match=r"settings.json: env: Invalid SSH environment URL"):
        resolve_location(str(tmp_path), None)


async def test_a_remote_session_shows_user_at_host_in_the_footer_and_works_there(
    home: Path, tmp_path: Path, ssh_client: Sshd
) -> None:
    remote = tmp_path / "remote"
    remote.mkdir()
    script = tmp_path / "answer.json"
    script.write_text(json.dumps({"responses": [{"content": [{"type": "text", "text": "ok"}]}]}))
    options = AppOptions(
        cwd=str(tmp_path),
        env=ssh_client.url(str(remote)),
        faux_script=str(script),
        model="faux/faux-1",
    )
    app = await AgentApp.open(options)
    try:
        assert isinstance(app.remote, SshEnv)
        assert app.workspace == str(remote)
        assert app.session_key == ssh_client.url(str(remote))
        model = LiveScreenModel(app)
        assert model.footer.cwd == f"{ssh_client.user}@127.0.0.1:{remote}"
    finally:
        await app.close()
    with pytest.raises(FileError) as caught:  # closing the app closed the connection
        await app.remote.exec("true")
    assert caught.value.code == "unknown"
