"""The command line's forms (issue 12, "The command line"): real ``pidurable`` processes.

``-p`` is a flag and the prompt a positional anywhere on the line; piped input
is read with ``-p`` (after the prompt, or as the prompt), bounded; ``--help``
lists the subcommands; a subcommand's name counts only as the first argument.
"""

from __future__ import annotations

from pathlib import Path

from pi_durable_tui.cli import MAX_STDIN_BYTES, SUBCOMMANDS
from tests.cli.support import only_store, run, user_texts, write_script

FAUX = ("--model", "faux/faux-1")


def test_the_prompt_may_follow_the_options_of_print_mode(project: Path, home: Path) -> None:
    script = write_script(project, "done")

    ran = run(project, "-p", *FAUX, "--faux-script", str(script), "fix it")

    assert (ran.status, ran.out, ran.err) == (0, "done\n", "")
    assert user_texts(only_store(home)) == ["fix it"]


def test_the_words_of_a_prompt_are_joined_and_those_after_a_double_dash_are_its_own(
    project: Path, home: Path
) -> None:
    script = write_script(project, "done")

    ran = run(project, "fix", "-p", *FAUX, "the", "--faux-script", str(script), "--", "--bug")

    assert ran.status == 0, ran.err
    assert user_texts(only_store(home)) == ["fix the --bug"]


def test_piped_input_follows_the_prompt_after_a_blank_line(project: Path, home: Path) -> None:
    script = write_script(project, "explained")

    ran = run(
        project,
        "-p",
        "explain this",
        *FAUX,
        "--faux-script",
        str(script),
        stdin=b"line one\nline two\n",
    )

    assert (ran.status, ran.out) == (0, "explained\n"), ran.err
    assert user_texts(only_store(home)) == ["explain this\n\nline one\nline two"]


def test_piped_input_without_a_prompt_is_the_prompt(project: Path, home: Path) -> None:
    script = write_script(project, "fixed")

    ran = run(project, "-p", *FAUX, "--faux-script", str(script), stdin=b"fix it\n")

    assert (ran.status, ran.out) == (0, "fixed\n"), ran.err
    assert user_texts(only_store(home)) == ["fix it"]


def test_empty_piped_input_is_no_input_and_continue_resumes(project: Path, home: Path) -> None:
    script = write_script(project, "first", "second")
    assert run(project, "-p", "hello", *FAUX, "--faux-script", str(script)).status == 0

    ran = run(project, "-c", "-p", stdin=b"")

    assert (ran.status, ran.out) == (0, "first\n"), ran.err  # the newest input's answer
    assert user_texts(only_store(home)) == ["hello"]


def test_piped_input_over_the_bound_is_refused_with_one_line_and_nothing_created(
    project: Path, home: Path
) -> None:
    ran = run(project, "-p", "explain", *FAUX, stdin=b"x" * (MAX_STDIN_BYTES + 1))

    assert (ran.status, ran.out) == (2, "")
    assert ran.err == (
        "pidurable: standard input is larger than 4 MiB; write it to a file and name "
        "the file in the prompt instead\n"
    )
    assert not home.exists()


def test_help_lists_every_subcommand_with_one_line(project: Path) -> None:
    ran = run(project, "--help")

    assert ran.status == 0
    lines = ran.out.splitlines()
    for name, command in SUBCOMMANDS.items():
        assert any(line.split() == [name, *command.summary.split()] for line in lines), ran.out
    assert "usage: pidurable [options] [PROMPT ...]" in ran.out


def test_a_subcommand_name_after_print_is_a_prompt_and_first_it_is_the_subcommand(
    project: Path, home: Path
) -> None:
    script = write_script(project, "exported?")

    sent = run(project, "-p", "export", *FAUX, "--faux-script", str(script))
    exported = run(project, "export", "--format", "markdown")

    assert (sent.status, sent.out) == (0, "exported?\n"), sent.err
    assert user_texts(only_store(home)) == ["export"]
    assert exported.status == 0, exported.err
    assert "## User\n\nexport\n" in exported.out
