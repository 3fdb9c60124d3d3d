"""A project's settings widen powers only as far as the user confirmed their content (issue 13).

``SettingsFiles`` of an open session: widening keys (``WIDENING_KEYS``) of the
project file apply once the user trusted that file's exact bytes (remembered by
sha256 under ``$PIDURABLE_HOME``); any change, by any means, is a new request,
and until it is confirmed the last confirmed values (or none) stay in force.
Other keys apply at once; the user's own file is never gated. DESIGN.md section 7.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.app import SettingsFiles, load_settings
from pi_durable_tui.app.files import TRUST_NAME, TrustRequest
from tests.app.support import write_settings

WIDENING = [
    ({"allow_outside_cwd": True}, "allow_outside_cwd", True, False),
    ({"env_allow": ["*"]}, "env_allow", ["*"], []),
]
"""(project file, setting, value once trusted, value before) for each widening setting."""


@pytest.fixture
def project_file(project: Path) -> Path:
    return project / ".pidurable" / "settings.json"


def edit(path: Path, data: dict[str, Any], stamp: int) -> None:
    """Write ``data`` and give the file a modification time of its own."""
    write_settings(path, data)
    os.utime(path, ns=(stamp, stamp))


class Requests:
    """The trust requests a ``SettingsFiles`` announced."""

    def __init__(self, files: SettingsFiles) -> None:
        self.seen: list[TrustRequest] = []
        files.on_trust_request(self.seen.append)


@pytest.mark.parametrize(("content", "key", "trusted", "before"), WIDENING)
def test_an_unconfirmed_project_file_keeps_its_widening_keys_waiting_and_applies_the_rest(
    home: Path,
    project: Path,
    project_file: Path,
    content: dict[str, Any],
    key: str,
    trusted: Any,
    before: Any,
) -> None:
    write_settings(project_file, {**content, "retry": {"max_retries": 7}})
    files = SettingsFiles(project)

    settings = files.current()

    assert getattr(settings, key) == before
    assert settings.retry.max_retries == 7  # not a widening key: applies without trust
    request = files.pending()
    assert request is not None
    assert dict(request.widening) == content
    assert request.question().startswith(f"This project's settings ({project_file}) allow ")
    assert request.question().endswith(f"{key} = {json.dumps(trusted)}: trust them?")


@pytest.mark.parametrize(("content", "key", "trusted", "before"), WIDENING)
def test_once_trusted_the_content_applies_now_and_in_every_later_session(
    home: Path,
    project: Path,
    project_file: Path,
    content: dict[str, Any],
    key: str,
    trusted: Any,
    before: Any,
) -> None:
    write_settings(project_file, content)
    files = SettingsFiles(project)
    request = files.pending()
    assert request is not None

    files.trust(request)

    assert getattr(files.current(), key) == trusted
    assert files.pending() is None
    assert (home / TRUST_NAME).exists()
    later = SettingsFiles(project)
    assert getattr(later.current(), key) == trusted
    assert later.pending() is None
    assert getattr(load_settings(project), key) == trusted


def test_a_change_after_trust_waits_for_a_new_confirmation_and_the_confirmed_values_stay(
    home: Path, project: Path, project_file: Path
) -> None:
    edit(project_file, {"allow_outside_cwd": True}, 1)
    files = SettingsFiles(project)
    requests = Requests(files)
    first = files.pending()
    assert first is not None
    files.trust(first)

    # The model (or anything) rewrites the file: it adds env_allow.
    edit(project_file, {"allow_outside_cwd": True, "env_allow": ["*"], "theme": "light"}, 2)

    settings = files.current()
    assert settings.allow_outside_cwd  # the confirmed content's value
    assert settings.env_allow == []  # the change waits
    assert settings.theme == "light"  # not widening: applies at once
    [second] = requests.seen[1:]
    assert dict(second.widening) == {"allow_outside_cwd": True, "env_allow": ["*"]}
    assert SettingsFiles(project).current().env_allow == []  # nor in a later session


def test_a_declined_content_never_applies_and_is_not_asked_again(
    home: Path, project: Path, project_file: Path
) -> None:
    edit(project_file, {"env_allow": ["*"]}, 1)
    files = SettingsFiles(project)
    requests = Requests(files)
    request = files.pending()
    assert request is not None

    files.decline(request)
    edit(project_file, {"env_allow": ["*"]}, 2)  # touched, the same bytes

    assert files.pending() is None
    assert files.current().env_allow == []
    assert requests.seen == [request]  # announced once, never again
    assert not (home / TRUST_NAME).exists()


def test_trust_applies_what_the_user_saw_even_if_the_file_changed_since(
    home: Path, project: Path, project_file: Path
) -> None:
    edit(project_file, {"allow_outside_cwd": True}, 1)
    files = SettingsFiles(project)
    shown = files.pending()
    assert shown is not None
    edit(project_file, {"allow_outside_cwd": True, "env_allow": ["*"]}, 2)  # a race

    files.trust(shown)

    settings = files.current()
    assert (settings.allow_outside_cwd, settings.env_allow) == (True, [])
    waiting = files.pending()
    assert waiting is not None
    assert "env_allow" in waiting.widening


def test_removing_a_widening_key_applies_without_a_confirmation(
    home: Path, project: Path, project_file: Path
) -> None:
    edit(project_file, {"allow_outside_cwd": True}, 1)
    files = SettingsFiles(project)
    request = files.pending()
    assert request is not None
    files.trust(request)

    edit(project_file, {"theme": "light"}, 2)

    assert not files.current().allow_outside_cwd
    assert files.pending() is None


def test_the_same_content_in_another_project_is_not_trusted(
    home: Path, project: Path, project_file: Path, tmp_path: Path
) -> None:
    write_settings(project_file, {"allow_outside_cwd": True})
    files = SettingsFiles(project)
    request = files.pending()
    assert request is not None
    files.trust(request)
    other = tmp_path / "other"
    write_settings(other / ".pidurable" / "settings.json", {"allow_outside_cwd": True})

    assert not SettingsFiles(other).current().allow_outside_cwd


def test_widening_keys_in_the_users_own_file_apply_as_they_are(home: Path, project: Path) -> None:
    write_settings(home / "settings.json", {"allow_outside_cwd": True, "env_allow": ["GH_*"]})

    files = SettingsFiles(project)

    assert (files.current().allow_outside_cwd, files.current().env_allow) == (True, ["GH_*"])
    assert files.pending() is None


def test_an_unconfirmed_project_file_does_not_override_the_users_widening_values(
    home: Path, project: Path, project_file: Path
) -> None:
    write_settings(home / "settings.json", {"env_allow": ["GH_*"]})
    write_settings(project_file, {"env_allow": ["*"]})

    assert SettingsFiles(project).current().env_allow == ["GH_*"]
