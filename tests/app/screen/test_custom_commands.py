"""The controller over a real session: custom commands send their text, bad files are notices."""

from __future__ import annotations

from pathlib import Path

from tests.app.screen_support import ScreenFactory, say
from tests.harness.run_support import within


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


async def test_a_custom_command_sends_its_filled_in_text_as_the_user_message(
    open_screen: ScreenFactory, tmp_path: Path
) -> None:
    write(
        tmp_path / "work" / ".pidurable" / "commands" / "review.md",
        "---\ndescription: Review a file\nargument-hint: FILE\nallowed-tools: Read\n---\n"
        "Review $1 carefully.\n",
    )
    rig = await open_screen(say("Reviewed."))

    [info] = rig.controller.custom_commands()
    await within(rig.controller.run_custom_command("review", "calc.py"))
    await rig.idle()

    assert (info.name, info.argument_hint, info.description) == ("review", "FILE", "Review a file")
    assert rig.texts("user") == ["Review calc.py carefully.\n"]
    assert rig.model.notices[-1].text.startswith("/review: allowed-tools is not applied")


async def test_unusable_skill_and_command_files_are_notices_when_the_screen_starts(
    open_screen: ScreenFactory, tmp_path: Path
) -> None:
    skill = tmp_path / "work" / ".pidurable" / "skills" / "broken" / "SKILL.md"
    command = tmp_path / "work" / ".claude" / "commands" / "fix.md"
    write(skill, "---\nname: broken\n---\nno description\n")
    write(command, "---\ndescription: [unclosed\n---\nFix it.\n")
    rig = await open_screen()

    warnings = [n.text for n in rig.model.notices if n.level == "warning"]
    assert warnings[0] == (
        f"Skill skipped: {skill}: no 'description' in its front matter (the model chooses "
        "skills by it)"
    )
    assert warnings[1].startswith(f"Command skipped: {command}: front matter is not valid YAML")
    assert len(warnings) == 2
