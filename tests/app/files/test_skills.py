"""Skills on disk: where they are found, which wins, what the prompt says, what a bad file does."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_durable_tui.app.files import FrontMatterError, discover_skills, skills_prompt
from pi_durable_tui.app.files._front_matter import split_front_matter


def write_skill(root: Path, directory: str, front: str, body: str = "Do it well.\n") -> Path:
    path = root / directory / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front}---\n{body}")
    return path


@pytest.fixture
def skill_roots(home: Path, project: Path) -> tuple[Path, Path, Path]:
    return project / ".pidurable" / "skills", home / "skills", project / ".claude" / "skills"


def test_skills_come_from_the_project_the_user_and_claude_directories(
    project: Path, skill_roots: tuple[Path, Path, Path]
) -> None:
    mine, user, claude = skill_roots
    write_skill(mine, "pdf", "name: pdf\ndescription: Fill PDF forms\n")
    folded = "name: release\ndescription: >\n  Cut a release,\n  step by step\n"
    write_skill(user, "release", folded)
    write_skill(claude, "review", "description: Review a diff\n")  # the name defaults to the dir
    (claude / "not-a-skill").mkdir()

    scan = discover_skills(str(project))

    assert [(s.name, s.description, s.source) for s in scan.skills] == [
        ("pdf", "Fill PDF forms", "project"),
        ("release", "Cut a release, step by step", "user"),
        ("review", "Review a diff", "claude"),
    ]
    assert scan.problems == ()


def test_a_project_skill_hides_a_user_skill_of_the_same_name(
    project: Path, skill_roots: tuple[Path, Path, Path]
) -> None:
    mine, user, _ = skill_roots
    write_skill(mine, "pdf", "name: pdf\ndescription: the project's\n")
    write_skill(user, "pdf-tools", "name: pdf\ndescription: the user's\n")

    assert [s.description for s in discover_skills(str(project)).skills] == ["the project's"]


@pytest.mark.parametrize(
    ("front", "problem"),
    [
        ("name: [unclosed\n", "front matter is not valid YAML"),
        ("- a list\n", "front matter must be 'key: value' lines"),
        ("name: x\n", "no 'description' in its front matter"),
        ("description: [a, b]\n", "'description' must be text"),
    ],
)
def test_an_unusable_skill_file_is_one_problem_naming_it_and_the_others_stay(
    project: Path, skill_roots: tuple[Path, Path, Path], front: str, problem: str
) -> None:
    mine = skill_roots[0]
    bad = write_skill(mine, "bad", front)
    write_skill(mine, "good", "description: fine\n")

    scan = discover_skills(str(project))

    assert [s.name for s in scan.skills] == ["good"]
    [line] = scan.problems
    assert line.startswith(f"Skill skipped: {bad}: {problem}")


def test_the_prompt_lists_name_description_and_path_of_each_skill(
    project: Path, home: Path, skill_roots: tuple[Path, Path, Path]
) -> None:
    mine, user, _ = skill_roots
    write_skill(mine, "pdf", "description: Fill PDF forms\n")
    user_skill = write_skill(user, "notes", "description: Keep notes\n")

    text = skills_prompt(discover_skills(str(project)).skills, str(project))

    assert text is not None
    assert text.splitlines()[2:] == [
        "- pdf: Fill PDF forms (.pidurable/skills/pdf/SKILL.md)",
        f"- notes: Keep notes ({user_skill})",
    ]
    assert "read its SKILL.md with the read tool" in text
    assert skills_prompt((), str(project)) is None


def test_front_matter_is_optional_and_an_unclosed_block_is_an_error(tmp_path: Path) -> None:
    plain = split_front_matter("# Title\nbody\n", tmp_path / "a.md")
    assert (plain.meta, plain.body) == ({}, "# Title\nbody\n")
    parsed = split_front_matter("---\ndescription: x\n---\nbody\n", tmp_path / "b.md")
    assert (parsed.meta, parsed.body) == ({"description": "x"}, "body\n")
    with pytest.raises(FrontMatterError, match="never closed"):
        split_front_matter("---\ndescription: x\nbody\n", tmp_path / "c.md")
