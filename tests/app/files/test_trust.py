"""Which project settings contents the user trusted: sha256 under ``$PIDURABLE_HOME`` (issue 13)."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.app.files import (
    TRUST_NAME,
    WIDENING_KEYS,
    remember_trust,
    settings_digest,
    trusted_digest,
    widening_values,
    with_values,
    without_widening,
)


def test_the_widening_keys_name_every_setting_that_grants_powers() -> None:
    # permission_mode and permissions.allow come with the permission engine; the
    # list names them already so a project file cannot set them unconfirmed then.
    assert set(WIDENING_KEYS) >= {
        "allow_outside_cwd",
        "env_allow",
        "permissions.allow",
        "permission_mode",
        "providers",
        "mcpServers",
        "extensions",
    }


@pytest.mark.parametrize(
    ("data", "widening", "rest"),
    [
        ({"theme": "light"}, {}, {"theme": "light"}),
        (
            {"allow_outside_cwd": True, "model": "faux/faux-1"},
            {"allow_outside_cwd": True},
            {"model": "faux/faux-1"},
        ),
        ({"env_allow": ["*"]}, {"env_allow": ["*"]}, {}),
        (
            {"permissions": {"allow": ["bash(rm:*)"], "deny": ["read(.env)"]}},
            {"permissions.allow": ["bash(rm:*)"]},
            {"permissions": {"deny": ["read(.env)"]}},  # a deny rule narrows: it applies
        ),
        ({"permission_mode": "auto"}, {"permission_mode": "auto"}, {}),
        ({"mcpServers": {"x": {}}}, {"mcpServers": {"x": {}}}, {}),
        ({"permissions": "odd"}, {}, {"permissions": "odd"}),  # validation reports it
    ],
)
def test_widening_keys_are_found_by_path_and_the_rest_applies_without_them(
    data: dict[str, Any], widening: dict[str, Any], rest: dict[str, Any]
) -> None:
    assert widening_values(data) == widening
    assert without_widening(data) == rest
    assert with_values(without_widening(data), widening) == data
    assert "allow_outside_cwd" not in without_widening({"allow_outside_cwd": True})


def test_a_trusted_digest_is_remembered_per_project_path_in_a_private_file(home: Path) -> None:
    digest = settings_digest(b'{"allow_outside_cwd": true}')

    remember_trust("/work/app", digest)
    remember_trust("/work/other", settings_digest(b"{}"))

    assert trusted_digest("/work/app") == digest
    assert trusted_digest("/work/elsewhere") is None
    trust_file = home / TRUST_NAME
    assert stat.S_IMODE(trust_file.stat().st_mode) == 0o600
    assert json.loads(trust_file.read_text())["projects"]["/work/app"]["sha256"] == digest
    assert [p.name for p in home.iterdir()] == [TRUST_NAME]  # no temporary file left


def test_a_new_confirmation_of_a_project_replaces_its_old_digest(home: Path) -> None:
    remember_trust("/work/app", "a" * 64)
    remember_trust("/work/app", "b" * 64)

    assert trusted_digest("/work/app") == "b" * 64


@pytest.mark.parametrize(
    "content",
    [b"\xff garbage", b"[1]", b'{"projects": []}', b'{"projects": {"/work/app": "x"}}'],
)
def test_a_trust_file_that_cannot_be_read_trusts_nothing(home: Path, content: bytes) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / TRUST_NAME).write_bytes(content)

    assert trusted_digest("/work/app") is None
    remember_trust("/work/app", "c" * 64)  # and the next confirmation replaces it
    assert trusted_digest("/work/app") == "c" * 64
