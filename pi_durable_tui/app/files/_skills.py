"""Skills: directories with a ``SKILL.md`` the model reads when a task calls for it (issue 16).

A skill is a directory under ``.pidurable/skills/``, ``$PIDURABLE_HOME/skills/``
or ``.claude/skills/`` (``markdown_roots``) holding a ``SKILL.md`` whose front
matter gives its ``name`` (the directory's name by default) and ``description``
(required: it is what the model decides by). The system prompt lists each
skill's name, description and path (``skills_prompt``); the model reads the
whole file, and the files beside it, with ``read`` when it uses one. A name
found in a higher-precedence directory hides the same name further down.

A file that cannot be used (bad front matter, no description) is left out and
reported as one line in ``SkillScan.problems``, never raised.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from pi_durable_tui.app.files._front_matter import (
    FrontMatterError,
    markdown_roots,
    read_markdown_file,
    text_field,
)

SKILL_FILE = "SKILL.md"
"""The file that makes a directory a skill."""
MAX_DESCRIPTION = 1024
"""A longer description is cut in the prompt (it is a summary, the file has the rest)."""


@dataclass(frozen=True, slots=True)
class Skill:
    """One skill: what the prompt says about it, and where it came from."""

    name: str
    description: str
    path: Path
    source: str


@dataclass(frozen=True, slots=True)
class SkillScan:
    """The usable skills, by precedence then name, and one line per unusable file."""

    skills: tuple[Skill, ...] = ()
    problems: tuple[str, ...] = field(default=())


def discover_skills(cwd: str) -> SkillScan:
    """Find the skills of the project in ``cwd`` and of the user."""
    skills: list[Skill] = []
    problems: list[str] = []
    seen: set[str] = set()
    for root in markdown_roots(cwd, "skills"):
        try:
            directories = sorted(p for p in root.directory.iterdir() if p.is_dir())
        except OSError:
            continue
        for directory in directories:
            path = directory / SKILL_FILE
            if not path.is_file():
                continue
            try:
                skill = _read_skill(path, root.source)
            except FrontMatterError as error:
                problems.append(f"Skill skipped: {error}")
                continue
            if skill.name not in seen:
                seen.add(skill.name)
                skills.append(skill)
    return SkillScan(tuple(skills), tuple(problems))


def _read_skill(path: Path, source: str) -> Skill:
    document = read_markdown_file(path)
    name = text_field(document.meta, "name", path) or path.parent.name
    description = text_field(document.meta, "description", path)
    if not description:
        raise FrontMatterError(
            f"{path}: no 'description' in its front matter (the model chooses skills by it)"
        )
    return Skill(" ".join(name.split()), " ".join(description.split()), path, source)


def skills_prompt(skills: tuple[Skill, ...], cwd: str) -> str | None:
    """The system prompt section listing ``skills``, or ``None`` when there are none."""
    if not skills:
        return None
    lines = [
        "Skills are instructions for particular kinds of task, each in a SKILL.md file. When "
        "a task matches a skill's description, read its SKILL.md with the read tool before "
        "you start, and follow it; it may name more files in its directory to read.",
        "",
    ]
    for skill in skills:
        description = skill.description
        if len(description) > MAX_DESCRIPTION:
            description = description[: MAX_DESCRIPTION - 3] + "..."
        lines.append(f"- {skill.name}: {description} ({_shown(skill.path, cwd)})")
    return "\n".join(lines)


def _shown(path: Path, cwd: str) -> str:
    relative = os.path.relpath(path, cwd)
    return str(path) if relative.startswith("..") else relative
