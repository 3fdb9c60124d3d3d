"""Skills through the product: `-p` runs whose faux model answers by the system prompt."""

from __future__ import annotations

from pathlib import Path

from tests.app.conftest import OpenApp
from tests.app.support import FAUX, run, text, write_script

LISTED = "- pdf: Fill PDF forms (.pidurable/skills/pdf/SKILL.md)"


def write_skill(project: Path, name: str, front: str) -> Path:
    path = project / ".pidurable" / "skills" / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front}---\nUse pdftk.\n")
    return path


def skill_script(project: Path) -> Path:
    seen = text("I can use the pdf skill.") | {"match": {"system": LISTED}}
    return write_script(project, seen, text("I know no skills."))


async def test_the_system_prompt_lists_each_skill_with_its_description_and_path(
    open_app: OpenApp, project: Path
) -> None:
    write_skill(project, "pdf", "name: pdf\ndescription: Fill PDF forms\n")
    app = await open_app(model=FAUX, faux_script=str(skill_script(project)))

    printed = await run(app, "fill the form")

    assert (printed.status, printed.out, printed.err) == (0, "I can use the pdf skill.\n", "")


async def test_without_skills_the_prompt_has_no_skills_section(
    open_app: OpenApp, project: Path
) -> None:
    app = await open_app(model=FAUX, faux_script=str(skill_script(project)))

    printed = await run(app, "fill the form")

    assert printed.out == "I know no skills.\n"


async def test_a_skill_with_bad_front_matter_is_one_line_on_stderr_and_the_run_goes_on(
    open_app: OpenApp, project: Path
) -> None:
    write_skill(project, "pdf", "name: pdf\ndescription: Fill PDF forms\n")
    bad = write_skill(project, "broken", "description: [unclosed\n")
    app = await open_app(model=FAUX, faux_script=str(skill_script(project)))

    printed = await run(app, "fill the form")

    assert printed.status == 0
    assert printed.out == "I can use the pdf skill.\n"
    [line] = printed.err.splitlines()
    assert line.startswith(f"pidurable: Skill skipped: {bad}: front matter is not valid YAML")
