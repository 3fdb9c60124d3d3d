"""The ``write`` tool: create or replace a whole file (reference 3.2).

Parent directories are created; the environment replaces the file atomically
(a temporary file renamed over it, the mode kept), inside the per-file mutation
queue so a concurrent ``edit`` of the same file waits (R121). A path outside the
working directory is refused unless the settings allow it. ``write`` is not
replay-safe: a call cut by a crash reaches the model as ``interrupted``.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from pi_durable_tui.harness import Tool, ToolApi, ToolResult, define_tool
from pi_durable_tui.tools._paths import PATH_ACCESS
from pi_durable_tui.tools._workspace import MUTATIONS, AllowOutside, check_inside, resolve_tool_path

DESCRIPTION = (
    "Write content to a file. Creates the file if it does not exist, overwrites it if it "
    "does, and creates parent directories. Prefer edit for changes to existing files."
)

PREVIEW_BYTES = 8192
"""How much of the content the result's details keep for the screen's preview."""


class WriteArgs(BaseModel):
    """Arguments of ``write``."""

    path: str = Field(description="Path to the file, relative to the working directory or absolute")
    content: str = Field(description="The complete content to write")


def create_write_tool(*, allow_outside_cwd: AllowOutside = False) -> Tool[WriteArgs]:
    """Create the ``write`` tool.

    Args:
        allow_outside_cwd: Whether paths outside the working directory are allowed
            (a callable is read at each call, so a settings edit applies at once).
    """

    async def execute(args: WriteArgs, api: ToolApi) -> ToolResult:
        env = api.env
        display, absolute = resolve_tool_path(env, args.path)
        await check_inside(env, absolute, allow_outside_cwd, "write")
        if api.aborted.is_set():
            raise RuntimeError("Operation aborted")
        async with MUTATIONS.hold(env, absolute):
            await env.write_file(absolute, args.content, abort=api.aborted)
        size = len(args.content.encode("utf-8", "surrogatepass"))
        return ToolResult(
            content=f"Successfully wrote to {display}",
            details={"path": display, "size": size, "preview": args.content[:PREVIEW_BYTES]},
        )

    return define_tool(
        "write", description=DESCRIPTION, parameters=WriteArgs, execute=execute, access=PATH_ACCESS
    )
