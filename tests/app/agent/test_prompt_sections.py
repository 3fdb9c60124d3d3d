"""The coding system prompt: sections rendered per request, stored only when changed (R77-R80)."""

from __future__ import annotations

import datetime
import platform
from pathlib import Path
from typing import Any

from pi_durable_tui.harness import SYSTEM
from tests.app.conftest import OpenApp
from tests.app.support import FAUX, run, stored_entries, text, write_script


def system_sections(entries: list[Any]) -> list[dict[str, Any]]:
    return [entry.model[0]["sections"] for entry in entries if entry.kind == SYSTEM]


async def test_the_prompt_renders_role_tools_context_and_environment_sections(
    open_app: OpenApp, project: Path
) -> None:
    (project / "AGENTS.md").write_text("Run `make check` before answering.")
    app = await open_app(model=FAUX, faux_script=str(write_script(project, text("ok"))))

    assert (await run(app, "hi")).status == 0
    await app.close()

    [sections] = system_sections(await stored_entries(app.store))
    assert list(sections) == ["role", "tools", "context", "environment"]
    assert sections["role"].startswith("<role>\nYou are pidurable, a coding agent")
    assert "- bash: run a shell command" in sections["tools"]
    assert sections["context"] == (
        f"<context>\nInstructions from {project / 'AGENTS.md'}:\n\n"
        "Run `make check` before answering.\n</context>"
    )
    assert sections["environment"] == (
        f"<environment>\nWorking directory: {project}\n"
        f"Platform: {platform.system()} {platform.machine()}\n"
        f"Today: {datetime.date.today().isoformat()}\n</environment>"
    )


async def test_without_context_files_the_context_section_is_left_out(
    open_app: OpenApp, project: Path
) -> None:
    app = await open_app(model=FAUX, faux_script=str(write_script(project, text("ok"))))

    assert (await run(app, "hi")).status == 0
    await app.close()

    [sections] = system_sections(await stored_entries(app.store))
    assert list(sections) == ["role", "tools", "environment"]


async def test_an_unchanged_prompt_appends_no_system_entry_and_an_edit_appends_only_its_section(
    open_app: OpenApp, project: Path
) -> None:
    (project / "AGENTS.md").write_text("first rules")
    script = write_script(project, text("one"), text("two"), text("three"))
    app = await open_app(model=FAUX, faux_script=str(script))

    assert (await run(app, "first")).out == "one\n"
    assert (await run(app, "second")).out == "two\n"
    (project / "AGENTS.md").write_text("second rules")
    assert (await run(app, "third")).out == "three\n"
    await app.close()

    entries = await stored_entries(app.store)
    first, edit = system_sections(entries)  # none for the second turn
    assert "first rules" in first["context"]
    assert edit == {
        "context": f"<context>\nInstructions from {project / 'AGENTS.md'}:\n\nsecond rules\n"
        "</context>"
    }
