"""Custom slash commands on disk: names, precedence, argument filling, notes, bad files."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_durable_tui.app.files import (
    FrontMatterError,
    UnknownCommand,
    discover_commands,
    expand_command,
    expand_command_line,
)
from pi_durable_tui.app.files._commands import expand_arguments


def write_command(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def roots(home: Path, project: Path) -> tuple[Path, Path, Path]:
    return project / ".pidurable" / "commands", home / "commands", project / ".claude" / "commands"


def test_commands_come_from_three_directories_and_the_first_name_wins(
    project: Path, roots: tuple[Path, Path, Path]
) -> None:
    mine, user, claude = roots
    write_command(mine, "review.md", "---\ndescription: Review a file\n---\nReview $ARGUMENTS\n")
    write_command(user, "review.md", "the user's review, hidden\n")
    write_command(user, "standup.md", "# Write my standup\n\nFrom git log.\n")
    write_command(claude, "frontend/component.md", "Make a component $1\n")
    write_command(claude, "notes.txt", "not a command\n")

    scan = discover_commands(str(project))

    assert [(c.name, c.description, c.source) for c in scan.commands] == [
        ("frontend:component", "Make a component $1", "claude"),
        ("review", "Review a file", "project"),
        ("standup", "Write my standup", "user"),
    ]
    assert scan.problems == ()


def test_a_command_file_with_bad_front_matter_or_name_is_one_problem(
    project: Path, roots: tuple[Path, Path, Path]
) -> None:
    bad = write_command(roots[0], "broken.md", "---\ndescription: [x\n---\nbody\n")
    odd = write_command(roots[0], "two words.md", "body\n")
    write_command(roots[0], "fine.md", "body\n")

    scan = discover_commands(str(project))

    assert [c.name for c in scan.commands] == ["fine"]
    assert len(scan.problems) == 2
    assert scan.problems[0].startswith(f"Command skipped: {bad}: front matter is not valid YAML")
    assert scan.problems[1] == (
        f"Command skipped: {odd}: /two words is not a command name (use letters, digits, -_.)"
    )


@pytest.mark.parametrize(
    ("body", "arguments", "sent"),
    [
        ("Review $ARGUMENTS now.", "calc.py  util.py", "Review calc.py  util.py now."),
        ("Compare $1 with $2.", 'a.py "my file.py"', "Compare a.py with my file.py."),
        ("Fix issue #$1 ($2)", "42", "Fix issue #42 ()"),
        ("Explain the code.", "calc.py", "Explain the code.\n\nARGUMENTS: calc.py"),
        ("Explain the code.\n", "", "Explain the code.\n"),
        ("Cost: $5 and $ARGUMENTS", "x", "Cost:  and x"),
    ],
)
def test_arguments_fill_the_placeholders(body: str, arguments: str, sent: str) -> None:
    assert expand_arguments(body, arguments) == sent


def test_a_command_line_expands_to_its_file_text_read_when_it_runs(
    project: Path, roots: tuple[Path, Path, Path]
) -> None:
    path = write_command(roots[0], "review.md", "Review $ARGUMENTS\n")

    expansion = expand_command_line("/review calc.py", str(project))
    assert expansion is not None
    assert expansion.text == "Review calc.py\n"
    path.write_text("Look hard at $1\n")
    assert expand_command("review", "calc.py", str(project)).text == "Look hard at calc.py\n"
    assert expand_command_line("/unknown x", str(project)) is None
    assert expand_command_line("plain text", str(project)) is None
    assert expand_command_line("/../../etc/passwd", str(project)) is None
    with pytest.raises(UnknownCommand):
        expand_command("gone", "", str(project))


def test_model_and_allowed_tools_are_not_applied_and_a_note_says_so(
    project: Path, roots: tuple[Path, Path, Path]
) -> None:
    write_command(
        roots[0],
        "commit.md",
        "---\nmodel: anthropic/claude-haiku\nallowed-tools: Bash(git add:*)\n---\nCommit.\n",
    )

    expansion = expand_command("commit", "", str(project))

    assert expansion.text == "Commit.\n"
    assert expansion.notes == (
        "/commit: its model (anthropic/claude-haiku) is not applied; pidurable has no "
        "per-message model (use /model to switch).",
        "/commit: allowed-tools is not applied; a command file cannot change the tools "
        "offered or what they may do.",
    )


def test_running_a_command_whose_file_went_bad_raises_naming_the_file(
    project: Path, roots: tuple[Path, Path, Path]
) -> None:
    path = write_command(roots[0], "review.md", "---\nunclosed: front matter\n")

    with pytest.raises(FrontMatterError, match=str(path)):
        expand_command_line("/review x", str(project))
