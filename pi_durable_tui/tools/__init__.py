"""Layer 4: the built-in coding tools ``read``, ``write``, ``edit``, ``bash`` (reference 3).

Their engines are public too, for tools that want the same behaviour: the edit
matcher (``apply_edits``), the diffs (``display_diff``, ``unified_patch``) and the
read window (``select_lines`` over text, raw chunks or an environment's scan).

``CodingTools`` is the extension named ``coding-tools`` holding all four, in that
order; nothing installs it automatically. The factories build each tool with its
options (``allow_outside_cwd`` for ``write`` and ``edit``, a command prefix and
extra variables for ``bash``). Every tool uses only ``api.env``; without an
environment a call fails with ``No execution environment is configured``.

``read`` is replay-safe (after a crash it runs again); ``write``, ``edit`` and
``bash`` are not, so a call cut by a crash reaches the model as ``interrupted``.

The read-only search tools ``grep``, ``find`` and ``ls`` live in the sub-package
``pi_durable_tui.tools.search`` (extension ``file-search-tools``).
"""

from pi_durable_tui.harness import Extension, define_extension
from pi_durable_tui.tools._bash import BashArgs, create_bash_tool
from pi_durable_tui.tools._edit import EditArgs, EditItem, create_edit_tool
from pi_durable_tui.tools._edit_diff import display_diff, first_changed_line, unified_patch
from pi_durable_tui.tools._edit_engine import (
    EditError,
    EditOutcome,
    EditSpec,
    apply_edits,
    repair_edit_arguments,
)
from pi_durable_tui.tools._job_tools import JOB_OUTPUT_TOOL, KILL_JOB_TOOL, JobArgs
from pi_durable_tui.tools._jobs import (
    ENDED_NOTE,
    JOB_TASK,
    JOB_TASK_DEFINITION,
    JOBS_DOC,
    keep_job,
    move_to_background,
)
from pi_durable_tui.tools._read import ReadArgs, create_read_tool
from pi_durable_tui.tools._read_window import (
    RawChunks,
    ReadError,
    ReadWindow,
    ScannedLines,
    select_lines,
)
from pi_durable_tui.tools._workspace import AllowOutside, OutsideWorkspace
from pi_durable_tui.tools._write import WriteArgs, create_write_tool


def coding_tools(*, allow_outside_cwd: AllowOutside = False) -> Extension:
    """Build the ``coding-tools`` extension: ``read``, ``write``, ``edit``, ``bash``, and the jobs'.

    ``job_output`` and ``kill_job`` read and stop the background jobs of ``bash``
    (task ``pi.job``, issue 13).

    Args:
        allow_outside_cwd: Whether ``write`` and ``edit`` may change files outside the
            working directory (a callable is read at each call).

    Returns:
        The extension.
    """
    return define_extension(
        "coding-tools",
        tools=[
            create_read_tool(),
            create_write_tool(allow_outside_cwd=allow_outside_cwd),
            create_edit_tool(allow_outside_cwd=allow_outside_cwd),
            create_bash_tool(),
            JOB_OUTPUT_TOOL,
            KILL_JOB_TOOL,
        ],
        tasks=[JOB_TASK_DEFINITION],
    )


CodingTools: Extension = coding_tools()
"""The ``coding-tools`` extension with default options."""

__all__ = [
    "ENDED_NOTE",
    "JOBS_DOC",
    "JOB_TASK",
    "JOB_TASK_DEFINITION",
    "AllowOutside",
    "BashArgs",
    "CodingTools",
    "EditArgs",
    "EditError",
    "EditItem",
    "EditOutcome",
    "EditSpec",
    "JobArgs",
    "OutsideWorkspace",
    "RawChunks",
    "ReadArgs",
    "ReadError",
    "ReadWindow",
    "ScannedLines",
    "WriteArgs",
    "apply_edits",
    "coding_tools",
    "create_bash_tool",
    "create_edit_tool",
    "create_read_tool",
    "create_write_tool",
    "display_diff",
    "first_changed_line",
    "keep_job",
    "move_to_background",
    "repair_edit_arguments",
    "select_lines",
    "unified_patch",
]
