"""The app offers the search tools: a headless run whose model greps the project."""

from __future__ import annotations

from pathlib import Path

from pi_durable_tui.harness import TOOL_RESULT
from tests.app.conftest import OpenApp
from tests.app.support import FAUX, run, stored_entries, text, tool_call, write_script
from tests.harness.run_support import message


async def test_a_headless_run_can_grep_the_project_with_gitignore_respected(
    open_app: OpenApp, project: Path
) -> None:
    (project / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (project / "build").mkdir()
    (project / "build" / "calc.py").write_text("def add(a, b): pass\n")
    (project / ".gitignore").write_text("build/\n")
    script = write_script(
        project, tool_call("grep", {"pattern": "def add", "glob": "*.py"}), text("Found.")
    )
    app = await open_app(model=FAUX, faux_script=str(script))

    printed = await run(app, "where is add?")
    await app.close()

    assert printed.status == 0
    [result] = [e for e in await stored_entries(app.store) if e.kind == TOOL_RESULT]
    assert message(result)["content"][0]["text"] == "calc.py:1:def add(a, b):"
