"""The terminal app needs a terminal: started without one it says so and stops.

``pidurable`` without ``-p`` on standard input or output that is not a terminal
(``< /dev/null``, ``> out.txt``, a pipe) exits at once with status 2 and one line
naming ``pidurable -p``: no escape sequence written, no key waited for, nothing
created. ``-p`` keeps reading a pipe. Real processes; the terminal half of a
start with one stream redirected is a pseudo-terminal (``os.openpty``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.support import Ran, run, write_script
from tests.deadlines import WAIT

FAUX = ("--model", "faux/faux-1")


def refused_for_want_of_a_terminal(ran: Ran, stream: str, home: Path) -> None:
    assert ran.status == 2, ran.err
    assert ran.out == ""
    assert ran.err.startswith(
        f"pidurable: the interactive app needs a terminal, and standard {stream} is not one"
    )
    assert 'pidurable -p "prompt"' in ran.err
    assert "--mode json" in ran.err
    assert ran.err.count("\n") == 1
    assert "\x1b" not in ran.err
    assert not list(home.glob("sessions/*/*")), "a refused start left a session"


@pytest.mark.parametrize(
    ("args", "stdin"),
    [((), None), (("fix it",), None), ((), b"fix it\n")],
    ids=["nothing-piped", "a-prompt-but-no-p", "text-piped-without-p"],
)
def test_the_terminal_app_off_a_terminal_exits_2_with_one_line_naming_print_mode(
    project: Path, home: Path, args: tuple[str, ...], stdin: bytes | None
) -> None:
    ran = run(project, *args, stdin=stdin)

    refused_for_want_of_a_terminal(ran, "input", home)


def test_the_terminal_app_with_its_output_in_a_file_writes_nothing_to_it(
    project: Path, home: Path
) -> None:
    # Keys would come (standard input is a terminal), but the screen would go to a file.
    out = project.parent / "out.txt"
    master, slave = os.openpty()
    try:
        with out.open("wb") as file:
            done = subprocess.run(
                [sys.executable, "-m", "pi_durable_tui"],
                cwd=project,
                stdin=slave,
                stdout=file,
                stderr=subprocess.PIPE,
                timeout=WAIT,
                check=False,
            )
    finally:
        os.close(slave)
        os.close(master)

    ran = Ran(done.returncode, out.read_text(), done.stderr.decode())
    refused_for_want_of_a_terminal(ran, "output", home)


def test_text_piped_with_print_mode_is_still_the_prompt(project: Path) -> None:
    script = write_script(project.parent, "answered")

    ran = run(project, "-p", *FAUX, "--faux-script", str(script), stdin=b"fix it\n")

    assert (ran.status, ran.out, ran.err) == (0, "answered\n", "")
