"""The permission mode key and ``/permissions`` over a real session (issue 13).

F4 commits the session's next mode (plan, auto-edit, ask, auto), a notice
names it and the footer shows it; the harness decides the next call by that
mode. The footer shows the settings' ``permission_mode`` too, and follows an
edit of it. ``/permissions``
lists the mode, each rule with where it came from, and the protected paths.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import OptionList

from pi_durable_tui.app import PermissionChoices
from pi_durable_tui.tui import PidurableApp
from tests.app.screen_support import ScreenFactory
from tests.tui.conftest import screen_name, settle, text_of
from tests.tui.test_real_harness import Run, notices, pidurable, until

__all__ = ["pidurable"]  # the real-session fixture, shared with test_real_harness

CHOICES = PermissionChoices(allow=("bash(make test)",))
"""The product's default mode (auto-edit) and one rule from the command line."""


def footer_text(app: PidurableApp) -> str:
    """The two footer lines as plain text."""
    return text_of(app.footer_bar.content, width=200)


async def test_f4_cycles_the_sessions_mode_in_order_and_says_which(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    rig = await open_screen(permissions=CHOICES)
    async with pidurable(rig) as (app, pilot):
        assert "mode:auto-edit" in footer_text(app)
        seen = []
        for expected in ("ask", "auto", "plan", "auto-edit"):
            await pilot.press("f4")
            line = f"Permission mode: {expected}"

            def said(line: str = line, mode: str = f"mode:{expected} ") -> bool:
                return line in notices(app) and mode in footer_text(app)

            await until(pilot, said, line)
            seen.append((await rig.app.harness.permission_policy()).mode)
        assert seen == ["ask", "auto", "plan", "auto-edit"]


async def test_the_footer_shows_the_settings_mode_and_follows_an_edit_of_it(
    open_screen: ScreenFactory, pidurable: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The user's own settings: a mode there applies as it is (no trust question).
    monkeypatch.setenv("PIDURABLE_HOME", str(tmp_path / "home"))
    settings = tmp_path / "home" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permission_mode": "plan"}))
    rig = await open_screen(permissions=PermissionChoices())
    async with pidurable(rig) as (app, pilot):
        assert "mode:plan " in footer_text(app)
        settings.write_text(json.dumps({"permission_mode": "ask", "theme": "dark"}))
        await until(pilot, lambda: "mode:ask " in footer_text(app), "the edited mode")


async def test_permissions_lists_the_mode_the_rules_with_their_source_and_protected_paths(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    rig = await open_screen(permissions=CHOICES)
    async with pidurable(rig) as (app, pilot):
        app.editor.text = "/permissions"
        await pilot.press("end", "escape", "enter")
        await until(pilot, lambda: screen_name(app) == "PickerScreen", "the list")
        await settle(pilot)
        rows = [text_of(o.prompt).strip() for o in app.screen.query_one(OptionList).options]
        assert rows[0] == "mode: auto-edit"
        assert "allow bash(make test)  (command line)" in rows
        assert any(row.startswith("protected (always asks): ") for row in rows)
