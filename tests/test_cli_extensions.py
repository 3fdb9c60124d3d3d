"""``pidurable -p`` with extension files (issue 16).

A file under ``$PIDURABLE_HOME/extensions/`` defining ``EXTENSION`` gives the
model its tool; a file that fails to import is one line on stderr and the run
goes on; a project's ``.pidurable/extensions/`` counts only once the user trusted
the project's content (the trust gate of issue 13).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.app.support import stored_entries, tool_call, trust_settings, write_script
from tests.test_cli import pidurable, project

__all__ = ["project"]  # the fixture

SHOUT = """
from pydantic import BaseModel
from pi_durable_tui.harness import ToolResult, define_extension, define_tool

class Text(BaseModel):
    text: str

async def shout(args, api):
    return ToolResult(content=args.text.upper() + "!")

EXTENSION = define_extension(
    "shouting",
    tools=[define_tool("shout", description="Shout the text.", parameters=Text, execute=shout,
                       read_only=True)],
)
"""


def run(project: Path, answer: str) -> tuple[int, str, str]:
    """``pidurable -p go``: the model shouts ``hi`` and then answers with the result."""
    script = write_script(
        project, tool_call("shout", {"text": "hi"}), {"content": [{"type": "text", "text": answer}]}
    )
    return pidurable(project, "-p", "go", "--model", "faux/faux-1", "--faux-script", str(script))


def result_of_shout(project: Path) -> str:
    """What the newest session stored, as text."""
    *_, store = sorted((project.parent / "home" / "sessions").glob("*/*/session.sqlite"))
    return str(asyncio.run(stored_entries(store)))


def test_a_home_extension_file_gives_the_model_its_tool(project: Path) -> None:
    home = project.parent / "home" / "extensions"
    home.mkdir(parents=True)
    (home / "shout.py").write_text(SHOUT)

    assert run(project, "shouted") == (0, "shouted\n", "")
    assert "HI!" in result_of_shout(project)


def test_a_file_that_fails_to_import_is_one_line_and_the_run_goes_on(project: Path) -> None:
    home = project.parent / "home" / "extensions"
    home.mkdir(parents=True)
    (home / "broken.py").write_text("import no_such_module_here\n")
    (home / "shout.py").write_text(SHOUT)

    status, out, err = run(project, "still here")

    assert (status, out) == (0, "still here\n")
    [line] = err.strip().splitlines()
    assert "broken.py: ModuleNotFoundError" in line
    assert "HI!" in result_of_shout(project)


def test_a_project_extension_file_counts_only_once_trusted(project: Path) -> None:
    directory = project / ".pidurable" / "extensions"
    directory.mkdir(parents=True)
    (directory / "shout.py").write_text(SHOUT)

    status, out, err = run(project, "no tool")
    assert (status, out) == (0, "no tool\n")
    assert "extension files" in err
    assert "not confirmed" in err
    assert "HI!" not in result_of_shout(project)

    trust_settings(project)
    assert run(project, "shouted") == (0, "shouted\n", "")
    assert "HI!" in result_of_shout(project)
