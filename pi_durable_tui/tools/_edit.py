"""The ``edit`` tool: exact, unique replacements in one file (reference 3.3).

Arguments are repaired first (``edits`` given as a JSON string, a single edit
object, top-level ``oldText``/``newText``), then every ``oldText`` must match
the ORIGINAL file exactly once (fuzzy matching over normalized quotes, dashes,
spaces and trailing whitespace when an exact match fails) and no two may overlap.
The file's line endings and BOM are kept. The result carries a display diff and a
unified patch in its details, for the screen. Inside the per-file mutation queue;
outside the working directory only when the settings allow it; not replay-safe.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from pi_durable_tui.env import FileError
from pi_durable_tui.harness import Tool, ToolApi, ToolResult, define_tool
from pi_durable_tui.tools._edit_diff import display_diff, unified_patch
from pi_durable_tui.tools._edit_engine import (
    EditError,
    EditSpec,
    apply_edits,
    repair_edit_arguments,
)
from pi_durable_tui.tools._paths import PATH_ACCESS
from pi_durable_tui.tools._workspace import MUTATIONS, AllowOutside, check_inside, resolve_tool_path

DESCRIPTION = (
    "Edit a file by replacing exact text. Each edits[i].oldText must match the file exactly "
    "(including whitespace and indentation) and be unique in it; all edits are matched "
    "against the original file and must not overlap. Read the file first. Use several "
    "edits in one call for several changes to one file."
)

MAX_DIFF_LINES = 4000
"""A diff longer than this keeps its head in the details (the screen shows a window)."""


class EditItem(BaseModel):
    """One replacement."""

    oldText: str = Field(description="Exact text to replace; must be unique in the file")
    newText: str = Field(description="The replacement text")


class EditArgs(BaseModel):
    """Arguments of ``edit``."""

    path: str = Field(description="Path to the file, relative to the working directory or absolute")
    edits: list[EditItem] = Field(description="Replacements, matched against the original file")


def _cap(text: str) -> str:
    lines = text.split("\n")
    if len(lines) <= MAX_DIFF_LINES:
        return text
    return "\n".join(lines[:MAX_DIFF_LINES]) + f"\n... {len(lines) - MAX_DIFF_LINES} more lines"


def create_edit_tool(*, allow_outside_cwd: AllowOutside = False) -> Tool[EditArgs]:
    """Create the ``edit`` tool.

    Args:
        allow_outside_cwd: Whether paths outside the working directory are allowed.
    """

    async def execute(args: EditArgs, api: ToolApi) -> ToolResult:
        if not args.edits:
            raise EditError(
                "Edit tool input is invalid. edits must contain at least one replacement."
            )
        env = api.env
        display, absolute = resolve_tool_path(env, args.path)
        beneath = await check_inside(env, absolute, allow_outside_cwd, "edit")
        async with MUTATIONS.hold(env, absolute):
            try:
                info = await env.file_info(absolute, abort=api.aborted)
            except FileError as error:
                raise EditError(
                    f"Could not edit file: {display}. Error code: {error.code}."
                ) from None
            if info.kind not in ("file", "symlink"):
                raise EditError(f"Could not edit file: {display}. Path is not a file.")
            try:
                original = await env.read_text_file(absolute, abort=api.aborted)
            except FileError as error:
                raise EditError(
                    f"Could not edit file: {display}. Error code: {error.code}."
                ) from None
            specs = [EditSpec(item.oldText, item.newText) for item in args.edits]
            outcome = apply_edits(display, original, specs)
            await env.write_file(absolute, outcome.content, beneath=beneath, abort=api.aborted)
        details: dict[str, object] = {
            "path": display,
            "diff": _cap(display_diff(outcome.before, outcome.after)),
            "patch": _cap(unified_patch(display, outcome.before, outcome.after)),
        }
        if outcome.first_changed_line is not None:
            details["first_changed_line"] = outcome.first_changed_line
        return ToolResult(
            content=f"Successfully replaced {outcome.blocks} block(s) in {display}.",
            details=details,
        )

    return define_tool(
        "edit",
        description=DESCRIPTION,
        parameters=EditArgs,
        execute=execute,
        prepare_arguments=repair_edit_arguments,
        access=PATH_ACCESS,
    )
