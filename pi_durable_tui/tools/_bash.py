"""The ``bash`` tool: run a shell command in the working directory (reference 3.4).

Output (stdout and stderr interleaved) streams into the tool's output buffer,
which keeps the last 2,000 lines or 50 KB (tail retention) and is committed with
the progress throttle, so a screen shows it live and a crash keeps what was
committed. The environment skips output that cannot reach the kept tail
(``api.output_window``), so a gigabyte of output costs little more than the pipe
reads; past 50 KB or 2,000 lines the complete output also goes to a spill file,
named in a diagnostic, which says the file is kept until the session closes
(the environment's ``cleanup()`` deletes it then; the run guard after a crash).
Each command runs in its own process group: a timeout, an abort (Esc) or a
crash of the call kills the whole group. The call leaves nothing running
(``end_background``, issue 13): what the command put in the background (``cmd
&``, ``nohup``, ``setsid``) is ended when the command ends. ``bash`` is not
replay-safe: a command cut by a crash reaches the model as ``interrupted`` with
the output it had committed, never silently run twice. With ``background:
true`` the command runs as a background job instead (``_background``, ``_jobs``);
Ctrl+B moves a running command to one (``MOVABLE``, ``ExecResult.moved``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pydantic import BaseModel, Field

from pi_durable_tui.env import FileError, OutputStream, SkippedOutput, SpillPolicy
from pi_durable_tui.harness import (
    OutputLimits,
    Tool,
    ToolAccess,
    ToolApi,
    ToolResult,
    define_tool,
)
from pi_durable_tui.tools._background import adopt_moved, start_background
from pi_durable_tui.tools._jobs import MOVABLE
from pi_durable_tui.tools._read_window import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES

SPILL_KEPT = " (kept until this session closes)"
"""What the ``Full output: PATH`` diagnostic adds: the file is deleted at session close."""

DESCRIPTION = (
    "Run a bash command in the current working directory. Returns stdout and stderr "
    "combined. Output is truncated to the last 2000 lines or 50KB, whichever comes first; "
    "when truncated, the full output is saved to a temp file whose path is given "
    "(kept until the session closes). Every process the command starts, including "
    "background ones (`cmd &`, nohup, setsid), is ended when the command ends. "
    "Optionally provide a timeout in seconds. Avoid interactive commands. With "
    "background: true the command runs as a background job that keeps running "
    "after the call returns: read its output with job_output, stop it with kill_job."
)


class BashArgs(BaseModel):
    """Arguments of ``bash``."""

    command: str = Field(description="The bash command to run")
    timeout: float | None = Field(default=None, description="Timeout in seconds (optional)")
    background: bool = Field(
        default=False,
        description=(
            "Run as a background job (a dev server, a watcher): return at once with a job "
            "id; read its output with job_output, stop it with kill_job."
        ),
    )


def create_bash_tool(
    *, command_prefix: str | None = None, env_vars: Callable[[], dict[str, str]] | None = None
) -> Tool[BashArgs]:
    """Create the ``bash`` tool.

    Args:
        command_prefix: Prepended to every command with a newline (for example
            activating a virtualenv).
        env_vars: Extra variables for the command, read at each call.
    """

    async def execute(args: BashArgs, api: ToolApi) -> ToolResult:
        env = api.env
        command = args.command if not command_prefix else f"{command_prefix}\n{args.command}"
        if args.background:
            extra = env_vars() if env_vars is not None else None
            return await start_background(args.command, command, api, extra)
        started = asyncio.get_running_loop().time()

        def on_output(chunk: bytes, stream: OutputStream, skipped: SkippedOutput | None) -> None:
            del stream  # stdout and stderr are interleaved, as a terminal shows them
            counts = None
            if skipped is not None:
                counts = (skipped.byte_count, skipped.line_count, skipped.ends_line)
            api.output(chunk, counts)

        movable: dict[str, asyncio.Event] = {}
        if getattr(env, "start_job", None) is not None:  # it can run jobs: Ctrl+B may move it
            movable["move"] = asyncio.Event()
            MOVABLE[api.task_id] = (api.conversation_id, movable["move"])
        try:
            result = await env.exec(
                command,
                cwd=env.cwd,
                env=env_vars() if env_vars is not None else None,
                inherit_env=True,
                timeout=args.timeout,
                on_output=on_output,
                spill=SpillPolicy(after_bytes=DEFAULT_MAX_BYTES, after_lines=DEFAULT_MAX_LINES),
                window=api.output_window,
                abort=api.aborted,
                end_background=True,
                **movable,
            )
        except FileError as error:
            if error.spill_path:
                api.diagnostic(
                    "info", f"Full output: {error.spill_path}{SPILL_KEPT}", "full_output"
                )
            if error.code == "timeout":
                raise RuntimeError(f"Command timed out after {args.timeout:g} seconds") from None
            if error.code == "aborted":
                raise RuntimeError("Command aborted") from None
            raise
        finally:
            MOVABLE.pop(api.task_id, None)
        if result.moved is not None:
            return await adopt_moved(args.command, result.moved, api)
        duration_ms = round((asyncio.get_running_loop().time() - started) * 1000)
        details = {
            "command": args.command,
            "exit_code": result.exit_code,
            "duration_ms": duration_ms,
        }
        if result.spill_path:
            details["full_output"] = result.spill_path
            api.diagnostic("info", f"Full output: {result.spill_path}{SPILL_KEPT}", "full_output")
        # Recorded now for the failure path (a tool_error keeps the last details, R100);
        # not awaited: the result commit holds them, so nothing waits for a progress commit.
        api.details(details)
        if result.exit_code != 0:
            raise RuntimeError(f"Command exited with code {result.exit_code}")
        return ToolResult(details=details)

    return define_tool(
        "bash",
        description=DESCRIPTION,
        parameters=BashArgs,
        execute=execute,
        output=OutputLimits(DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, "tail"),
        access=ToolAccess("command", lambda args: args.command),
    )
