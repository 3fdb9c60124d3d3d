"""What the commit tests of rounds and turns share: an unsafe tool, commit filters, store copies."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from pi_durable_tui.harness import Extension, ToolApi, ToolResult, define_extension, define_tool
from pi_durable_tui.kernel import CommitInfo
from tests.harness.run_support import Rig, message


class NoArgs(BaseModel):
    pass


def ledger_tool(ledger: Path) -> Extension:
    """An unsafe tool ``effect`` that appends a line to ``ledger`` each time it runs."""

    async def execute(_args: Any, _api: ToolApi) -> ToolResult:
        with ledger.open("a") as file:
            file.write("ran\n")
        return ToolResult(content="effect done")

    tool = define_tool(
        "effect", description="An effect.", parameters=NoArgs, replay="unsafe", execute=execute
    )
    return define_extension("ledger", tools=[tool])


def stored(rig: Rig) -> list[CommitInfo]:
    """The commits that reached the store, in order."""
    return [published.info for published in rig.commits if published.info.stored]


def generation_starts(commits: list[CommitInfo]) -> list[str]:
    """The first checkpoint phase of every generation created in ``commits``."""
    return [
        task.state["checkpoint"]["phase"]
        for commit in commits
        for task in commit.tasks
        if task.kind == "pi.generation" and commit.previous_tasks.get(task.id) is None
    ]


def snapshot(source: Path, target: Path) -> None:
    """Copy a SQLite store as a kill at this instant leaves it (database and WAL)."""
    target.mkdir()
    for suffix in ("", "-wal"):
        path = Path(f"{source}{suffix}")
        if path.exists():
            shutil.copy2(path, target / f"session.sqlite{suffix}")


def answered(rig: Rig) -> bool:
    """Whether the rig committed a final answer."""
    return any(
        e.kind == "pi.assistant" and message(e).get("stop_reason") == "stop"
        for published in rig.commits
        for e in published.info.entries
    )
