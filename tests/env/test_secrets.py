"""Which variable names count as secrets (the pattern list of ``env._secrets``)."""

from __future__ import annotations

import pytest

from pi_durable_tui.env import is_secret_name, scrub_environment


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY",
        "anthropic_api_key",
        "STRIPE_APIKEY",
        "GITHUB_TOKEN",
        "HF_TOKEN",
        "GITHUB_TOKEN_READONLY",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "AZURE_CLIENT_SECRET",
        "AZURE_STORAGE_CONNECTION_STRING",
        "ARM_ACCESS_KEY",
        "PGPASSWORD",
        "DB_PASSWD",
        "MYSQL_PWD",
        "NPM_CONFIG__AUTH",
        "SLACK_WEBHOOK_URL",
        "GPG_PASSPHRASE",
        "DJANGO_SECRET_KEY",
    ],
)
def test_secret_looking_names_are_secrets(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    ["PATH", "HOME", "PWD", "OLDPWD", "TOKENIZERS_PARALLELISM", "SSH_AUTH_SOCK", "LANG", "TERM"],
)
def test_ordinary_names_are_not_secrets(name: str) -> None:
    assert not is_secret_name(name)


def test_scrub_keeps_allowed_names_and_globs_only() -> None:
    environ = {"PATH": "/bin", "A_TOKEN": "a", "B_TOKEN": "b", "CI_JOB_TOKEN": "c"}
    assert scrub_environment(environ, ["A_TOKEN", "CI_*"]) == {
        "PATH": "/bin",
        "A_TOKEN": "a",
        "CI_JOB_TOKEN": "c",
    }


def test_scrub_drops_declared_secret_names_whatever_they_look_like_unless_allowed() -> None:
    environ = {"PATH": "/bin", "LLAMA_KEY": "k", "OTHER_KEY": "o", "LLAMA_HOST": "h"}

    assert scrub_environment(environ, secret_names=["LLAMA_KEY", "OTHER_KEY"]) == {
        "PATH": "/bin",
        "LLAMA_HOST": "h",
    }
    assert scrub_environment(environ, ["OTHER_KEY"], ["LLAMA_KEY", "OTHER_KEY"]) == {
        "PATH": "/bin",
        "OTHER_KEY": "o",
        "LLAMA_HOST": "h",
    }
