"""Overriding a built-in tool: a wrapper that refuses ``rm -rf`` and a hook that guards a path.

A ``guard`` extension, installed next to the coding tools, changes them without
touching their code:

- ``wrap_tool("bash", ...)`` replaces the ``bash`` tool at resolution time with
  one that refuses commands containing ``rm -rf`` and runs everything else with
  the original tool (R30, R31);
- a ``before_tool`` hook of ``pi.tool`` blocks any call whose arguments name the
  ``.env`` file, before anything runs (R93): the model gets a ``blocked`` result.

The example prints the tool results exactly as the model sees them (R98).

Run: ``python -m pi_durable_tui.examples.tool_override``
"""

from __future__ import annotations

import asyncio
import dataclasses
import tempfile
from pathlib import Path
from typing import Any

from pi_durable_tui.ai import faux_response, faux_tool_call
from pi_durable_tui.examples._coding_agent import open_coding_agent
from pi_durable_tui.examples._transcript import message_text
from pi_durable_tui.harness import (
    HarnessRuntime,
    Input,
    Tool,
    ToolApi,
    ToolBlock,
    ToolCallInfo,
    ToolResult,
    define_extension,
    hook,
    wrap_tool,
)
from pi_durable_tui.tools import BashArgs

SCRIPT = [
    faux_response(
        faux_tool_call("bash", {"command": "rm -rf build"}),
        faux_tool_call("read", {"path": ".env"}),
    ),
    faux_response(
        faux_tool_call("bash", {"command": "rm build/app.o && rmdir build && echo removed build"})
    ),
    faux_response("The build directory is gone; I was not allowed to read .env."),
]


def refuse_rm_rf(bash: Tool[Any]) -> Tool[Any]:
    """Wrap ``bash``: the same tool, except that ``rm -rf`` is refused."""

    async def execute(args: BashArgs, api: ToolApi) -> ToolResult | None:
        if "rm -rf" in args.command:
            return ToolResult(
                content="Refused: rm -rf is not allowed here. Remove files one by one.",
                is_error=True,
            )
        return await bash.execute(args, api)

    return dataclasses.replace(bash, execute=execute)


def guard_env_file(call: ToolCallInfo, runtime: HarnessRuntime) -> ToolBlock | None:
    """Block any tool call whose arguments mention ``.env``."""
    if any(".env" in str(value) for value in call.arguments.values()):
        return ToolBlock(f"{call.name} may not touch .env")
    return None


GUARD = define_extension(
    "guard",
    wraps=[wrap_tool("bash", refuse_rm_rf)],
    hooks=[hook("pi.tool", before_tool=guard_env_file)],
)


async def main() -> None:
    with tempfile.TemporaryDirectory() as workdir:
        Path(workdir, "build").mkdir()
        Path(workdir, "build", "app.o").write_bytes(b"\x7fELF")
        Path(workdir, ".env").write_text("API_TOKEN=secret\n")
        harness, root = await open_coding_agent(SCRIPT, workdir, GUARD)
        await (await root.submit(Input("Clean up the build directory and show me .env"))).wait()
        # The context the next request would send: tool results follow their calls (R74).
        for message in (await root.context()).messages:
            if message["role"] == "assistant":
                print("assistant:", message_text(message))
            elif message["role"] == "toolResult":
                error = " (error)" if message["is_error"] else ""
                print(f"  {message['tool_name']} result{error}: {message_text(message)}")
        print("build exists:", Path(workdir, "build").exists())
        print(".env untouched:", Path(workdir, ".env").read_text() == "API_TOKEN=secret\n")
        await harness.close()


if __name__ == "__main__":
    asyncio.run(main())
