"""Extension files and ``reload`` through a real harness (issue 16; R30-R31, R35).

A file defines ``EXTENSION`` with a tool ``probe``. The faux model calls it twice;
the file is rewritten and reloaded while the first call runs: the first call's
result comes from the old code, the second from the new. A file that fails to
import is one notice with its traceback in the log, and the old version stays.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from pi_durable_tui.ai import faux_response, faux_tool_call
from pi_durable_tui.app.agent._extension_files import ExtensionFiles
from pi_durable_tui.harness import TOOL_RESULT
from tests.harness.run_support import Rig, RigFactory, message, within

VERSION = """
import asyncio
from pathlib import Path
from pydantic import BaseModel
from pi_durable_tui.harness import ToolResult, define_extension, define_tool

class Nothing(BaseModel):
    pass

async def probe(args, api):
    Path({started!r}).touch()
    while {wait} and not Path({release!r}).exists():
        await asyncio.sleep(0.01)
    return ToolResult(content={answer!r})

EXTENSION = define_extension(
    "probe-file",
    tools=[define_tool("probe", description="Answer.", parameters=Nothing, execute=probe)],
)
"""


async def tool_results(rig: Rig) -> list[str]:
    """The text of each tool result of the root conversation, in order."""
    return [
        message(e)["content"][0]["text"] for e in await rig.transcript() if e.kind == TOOL_RESULT
    ]


def write_version(directory: Path, answer: str, *, wait: bool) -> Path:
    path = directory / "probe.py"
    path.write_text(
        VERSION.format(
            started=str(directory / "started"),
            release=str(directory / "release"),
            answer=answer,
            wait=wait,
        )
    )
    return path


async def test_a_reload_during_a_call_lets_it_finish_on_the_old_code_and_the_next_use_the_new(
    open_rig: RigFactory, tmp_path: Path
) -> None:
    directory = tmp_path / "extensions"
    directory.mkdir()
    write_version(directory, "old", wait=True)
    files = ExtensionFiles([directory], tmp_path / "session.log")
    extensions, notices = files.load()
    assert notices == []
    rig = await open_rig(
        faux_response(faux_tool_call("probe", {})),
        faux_response(faux_tool_call("probe", {})),
        faux_response("done"),
        extensions=extensions,
    )
    asking = asyncio.ensure_future(rig.ask("go"))
    await rig.wait_until(lambda: (directory / "started").exists())

    write_version(directory, "new", wait=False)
    assert files.reload(rig.harness.registry) == []
    (directory / "release").touch()
    await within(asking)

    results = [
        message(e)["content"][0]["text"] for e in await rig.transcript() if e.kind == TOOL_RESULT
    ]
    assert results == ["old", "new"]


async def test_a_file_that_fails_to_import_is_one_notice_and_the_old_version_stays(
    open_rig: RigFactory, tmp_path: Path
) -> None:
    directory = tmp_path / "extensions"
    directory.mkdir()
    path = write_version(directory, "kept", wait=False)
    log = tmp_path / "session.log"
    files = ExtensionFiles([directory], log)
    extensions, _ = files.load()
    rig = await open_rig(
        faux_response(faux_tool_call("probe", {})), faux_response("done"), extensions=extensions
    )
    path.write_text(path.read_text() + "\nraise RuntimeError('half written')\n")

    notices = files.reload(rig.harness.registry)
    await rig.ask("go")

    assert len(notices) == 1
    assert "probe.py: RuntimeError: half written" in notices[0]
    assert "\n" not in notices[0]
    assert "Traceback" in log.read_text()
    results = [
        message(e)["content"][0]["text"] for e in await rig.transcript() if e.kind == TOOL_RESULT
    ]
    assert results == ["kept"]


async def test_a_file_removed_uninstalls_its_extension_at_reload(
    open_rig: RigFactory, tmp_path: Path
) -> None:
    directory = tmp_path / "extensions"
    directory.mkdir()
    path = write_version(directory, "here", wait=False)
    files = ExtensionFiles([directory])
    extensions, _ = files.load()
    rig = await open_rig(extensions=extensions)
    path.unlink()

    assert files.reload(rig.harness.registry) == []
    assert "probe-file" not in [e.name for e in rig.harness.registry.snapshot().extensions]
