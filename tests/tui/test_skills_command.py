"""``/skills``: the skills in a picker; the chosen one starts a message that asks for it."""

from __future__ import annotations

from pi_durable_tui.app import SkillInfo
from pi_durable_tui.bench.tui_model import RecordingController
from pi_durable_tui.tui import PidurableApp
from tests.tui.test_commands import run_command


async def test_skills_lists_the_skills_and_the_chosen_one_goes_into_the_editor(
    app: PidurableApp, controller: RecordingController
) -> None:
    controller.skill_list = [
        SkillInfo("pdf", "Fill PDF forms", ".pidurable/skills/pdf/SKILL.md", "project"),
        SkillInfo("release", "Cut a release", "/home/me/.pidurable/skills/r/SKILL.md", "user"),
    ]

    await run_command(app, "/skills", *"release", "enter")

    assert app.editor.text == "Use the release skill: "


async def test_skills_without_any_says_where_to_add_one(app: PidurableApp) -> None:
    await run_command(app, "/skills")

    assert app.notice_bar.shown_notices[-1].text.startswith("No skills: add a directory")
