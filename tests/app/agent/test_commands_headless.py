"""Custom commands in print mode: the filled-in text is sent, a broken file stops the run."""

from __future__ import annotations

from pathlib import Path

from tests.app.conftest import OpenApp
from tests.app.support import FAUX, run, text, write_script


def write_command(project: Path, name: str, body: str) -> Path:
    path = project / ".pidurable" / "commands" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    return path


async def test_a_prompt_naming_a_custom_command_sends_its_text(
    open_app: OpenApp, project: Path
) -> None:
    write_command(project, "explain.md", "Explain $ARGUMENTS in one line.\n")
    answered = text("It adds.") | {"match": {"user": "Explain calc.add in one line."}}
    app = await open_app(model=FAUX, faux_script=str(write_script(project, answered, text("?"))))

    printed = await run(app, "/explain calc.add")

    assert (printed.status, printed.out, printed.err) == (0, "It adds.\n", "")


async def test_a_prompt_naming_a_broken_command_is_not_sent(
    open_app: OpenApp, project: Path
) -> None:
    path = write_command(project, "explain.md", "---\ndescription: [x\n---\nExplain.\n")
    app = await open_app(model=FAUX, faux_script=str(write_script(project, text("sent!"))))

    printed = await run(app, "/explain calc.add")

    assert (printed.status, printed.out) == (1, "")
    skipped, not_sent = printed.err.splitlines()
    assert skipped.startswith(f"pidurable: Command skipped: {path}: front matter is not valid")
    assert not_sent.startswith(f"pidurable: not sent: {path}: front matter is not valid YAML")
