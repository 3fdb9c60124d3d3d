"""Running one coding-tool call through a real harness, the faux provider and LocalEnv.

``run_tool`` (a fixture) opens a rig with the ``coding-tools`` extension and a
working directory in ``tmp_path``, has the faux model call one tool with the given
arguments, and returns what the call committed: the result entry, its message,
diagnostics and details, and the rig (for ``pi.live`` commits and tasks).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pi_durable_tui.ai import faux_response, faux_tool_call
from pi_durable_tui.harness import TOOL_RESULT, Extension, Settings
from pi_durable_tui.storage import EntryRecord, JsonObject
from pi_durable_tui.tools import CodingTools
from tests.harness.run_support import Rig, RigFactory, message, within


@dataclass(frozen=True)
class ToolCallOutcome:
    """What one tool call committed."""

    rig: Rig
    entry: EntryRecord

    @property
    def message(self) -> JsonObject:
        """The stored tool-result message."""
        return message(self.entry)

    @property
    def text(self) -> str:
        """The content's text items before the ``<harness>`` block."""
        items = [i for i in self.message["content"] if i.get("type") == "text"]
        if self.diagnostics:
            items = items[:-1]
        return "".join(i["text"] for i in items)

    @property
    def diagnostics(self) -> list[JsonObject]:
        """The entry's diagnostics data."""
        data = self.entry.data
        assert isinstance(data, dict)
        return list(data["diagnostics"])

    @property
    def errors(self) -> list[str]:
        """The messages of the ``error`` diagnostics."""
        return [d["message"] for d in self.diagnostics if d["severity"] == "error"]

    @property
    def details(self) -> Any:
        """The result's details."""
        return self.message.get("details")

    @property
    def is_error(self) -> bool:
        """Whether the model sees a failure."""
        return bool(self.message["is_error"])


RunTool = Callable[..., Awaitable[ToolCallOutcome]]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """The working directory the tools run in."""
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def run_tool(open_rig: RigFactory, workdir: Path) -> RunTool:
    """``await run_tool(name, arguments, extension=CodingTools, env=True, settings=None)``."""

    async def run(name: str, arguments: dict[str, Any], **options: Any) -> ToolCallOutcome:
        rig = await start_tool(open_rig, workdir, name, arguments, **options)
        handle = await within(rig.root.submit("go"))
        record = await within(handle.wait())
        assert record.status == "done", record
        results = [e for e in await rig.transcript() if e.kind == TOOL_RESULT]
        assert len(results) == 1, results
        return ToolCallOutcome(rig, results[0])

    return run


async def start_tool(
    open_rig: RigFactory,
    workdir: Path,
    name: str,
    arguments: dict[str, Any],
    *,
    extension: Extension = CodingTools,
    env: bool = True,
    settings: Settings | None = None,
) -> Rig:
    """Open a rig whose model calls one tool, then answers ``done``; submit nothing yet."""
    return await open_rig(
        faux_response(faux_tool_call(name, arguments)),
        faux_response("done"),
        extensions=[extension],
        env=env,
        settings=settings,
        workdir=workdir,
    )
