"""API keys of the process never reach tool processes nor the store (issue 7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_durable_tui.app import PermissionChoices
from pi_durable_tui.harness import TOOL_RESULT, text_of
from tests.app.conftest import OpenApp
from tests.app.support import (
    FAUX,
    run,
    stored_entries,
    text,
    tool_call,
    trust_settings,
    write_script,
    write_settings,
)

CANARY = "sk-canary-5f3c9e0d7a1b"


def store_bytes(store: Path) -> bytes:
    """The store file and its sidecars (the WAL holds recent commits)."""
    return b"".join(path.read_bytes() for path in store.parent.glob(store.name + "*"))


async def env_printed_by_bash(open_app: OpenApp, project: Path) -> tuple[Path, str]:
    """Run a session whose bash step prints its environment; return the store and the output."""
    script = write_script(project, tool_call("bash", {"command": "env"}), text("Printed."))
    # `env` is not read-only (it runs commands): allowed by a rule, as a user would
    app = await open_app(
        model=FAUX, faux_script=str(script), permissions=PermissionChoices(allow=("bash(env)",))
    )
    assert (await run(app, "show the environment")).status == 0
    await app.close()
    [result] = [e for e in await stored_entries(app.store) if e.kind == TOOL_RESULT]
    assert result.model is not None
    message = result.model[0]
    assert isinstance(message, dict)
    return app.store, text_of(message)


async def test_an_api_key_in_the_environment_reaches_neither_the_tool_process_nor_the_store(
    open_app: OpenApp, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY + "-2")
    monkeypatch.setenv("PIDURABLE_TEST_PLAIN", "plain-value")

    store, output = await env_printed_by_bash(open_app, project)

    assert "PIDURABLE_TEST_PLAIN=plain-value" in output  # the environment was printed
    assert "OPENAI_API_KEY" not in output
    assert "ANTHROPIC_API_KEY" not in output
    assert CANARY.encode() not in store_bytes(store)


@pytest.mark.parametrize("where", ["user", "trusted project"])
async def test_a_secret_looking_variable_allowed_in_settings_reaches_tool_processes(
    open_app: OpenApp, home: Path, project: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "allowed-token")
    monkeypatch.setenv("NPM_TOKEN", "refused-token")
    if where == "user":
        write_settings(home / "settings.json", {"env_allow": ["GITHUB_*"]})
    else:
        write_settings(project / ".pidurable" / "settings.json", {"env_allow": ["GITHUB_*"]})
        trust_settings(project)

    _, output = await env_printed_by_bash(open_app, project)

    assert "GITHUB_TOKEN=" in output
    assert "NPM_TOKEN" not in output


async def test_env_allow_in_an_untrusted_project_file_lets_no_secret_through_issue_13(
    open_app: OpenApp, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    write_settings(project / ".pidurable" / "settings.json", {"env_allow": ["*"]})

    store, output = await env_printed_by_bash(open_app, project)

    assert "OPENAI_API_KEY" not in output
    assert CANARY.encode() not in store_bytes(store)
