"""The editor's shell mode: ``!cmd`` and ``!!cmd`` run by the user (reference tui-anchors 1).

``run_user_command`` runs the command the user typed in the shown conversation's
execution environment, the one its ``bash`` tool gets (R118: the working
directory, the environment scrubbed of secrets, its own process group, killed
whole on Esc), and commits everything through the harness
(``harness.conversations._shell``) before the screen can show it:

1. ``begin_shell`` commits ``pi.live.shell``, refused while the agent works
   (``SHELL_BUSY``) or another command runs; the screen shows a live card from it;
2. the output streams into the bash tool's bounded buffer (the last 2,000 lines or
   50 KB) and is committed at most every 100 ms, like tool output (R103);
3. ``finish_shell`` commits the ``pi.shell`` entry (with ``!cmd`` a user message the
   model's next request carries, with ``!!cmd`` none) and clears the live card.

A ``kill -9`` between 1 and 3 leaves ``pi.live.shell``: the next opening
(``settle_shell_commands``) turns it into an ``interrupted`` entry with the
output it had committed; nothing runs again. The command is the user's own: no
permission prompt, and only the editor reaches this (nothing the model writes does).
"""

from __future__ import annotations

import asyncio
import contextlib

from pi_durable_tui.app._ports import ActionRefused
from pi_durable_tui.env import FileError, OutputStream, SkippedOutput, SpillPolicy
from pi_durable_tui.harness import (
    SHELL_RUNNING,
    Harness,
    OutputLimits,
    ShellOutcome,
    ShellRefused,
    ToolOutputBuffer,
)

LIMITS = OutputLimits(retain="tail")
"""What is kept of the output: the last 2,000 lines or 50 KB, as the bash tool keeps."""
PROGRESS_INTERVAL_S = 0.1
"""How often streamed output is committed (R103's 100 ms)."""

RUNNING: dict[int, asyncio.Event] = {}
"""The Esc of the user command running in each conversation of this process.

A client attached to this session's host presses Esc as an ``abort`` intent, which
reaches the host's command through ``stop_user_command`` (the bash tool's Ctrl+B
finds its command the same way, ``tools._jobs.MOVABLE``)."""


def stop_user_command(conversation_id: int) -> bool:
    """Esc for a conversation: kill its running user command's process group; whether one ran."""
    abort = RUNNING.get(conversation_id)
    if abort is None:
        return False
    abort.set()
    return True


async def run_user_command(
    harness: Harness, conversation_id: int, command: str, *, context: bool, abort: asyncio.Event
) -> int | None:
    """Run the user's ``command`` in a conversation and commit its entry (module docstring).

    Args:
        harness: The open harness.
        conversation_id: The shown conversation.
        command: What the user typed after ``!`` (or ``!!``).
        context: Whether the model's next request sees it (``!cmd``).
        abort: Set by Esc: the command's process group is killed.

    Returns:
        The submission ID of the entry's write.

    Raises:
        ShellRefused: The agent works, or another command of the user's runs.
    """
    conversation = harness.conversation(conversation_id)
    await conversation.begin_shell(command, context=context)
    RUNNING[conversation_id] = abort  # REMINDER: removed in ``_finish``, whatever happens
    buffer = ToolOutputBuffer(LIMITS)
    loop = asyncio.get_running_loop()
    started = loop.time()
    dirty, stop = asyncio.Event(), asyncio.Event()

    def on_output(chunk: bytes, stream: OutputStream, skipped: SkippedOutput | None) -> None:
        del stream  # interleaved, as a terminal shows them
        if skipped is not None:
            buffer.skip(skipped.byte_count, skipped.line_count, ends_line=skipped.ends_line)
        buffer.write(chunk)
        dirty.set()

    async def commit_progress() -> None:
        # REMINDER: ended by ``stop``, never cancelled: a commit cut by cancellation
        # has an unknown outcome and poisons the session (R8).
        while True:
            await dirty.wait()
            if stop.is_set():
                return
            dirty.clear()
            await conversation.shell_progress(
                buffer.text, buffer.dropped_lines, buffer.dropped_bytes
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), PROGRESS_INTERVAL_S)

    progress = asyncio.ensure_future(commit_progress())
    stopping = (progress, stop, dirty)
    outcome: ShellOutcome
    try:
        env = await conversation.environment()
        if env is None:
            raise FileError("not_supported", "No execution environment is configured")
        result = await env.exec(
            command,
            cwd=env.cwd,
            inherit_env=True,
            on_output=on_output,
            spill=SpillPolicy(after_bytes=LIMITS.max_bytes, after_lines=LIMITS.max_lines),
            abort=abort,
            end_background=True,
        )
    except FileError as error:
        status = "aborted" if error.code == "aborted" else "failed"
        outcome = _outcome(buffer, status, loop.time() - started, error=str(error))
    except Exception as error:  # the environment could not be built: say why, run nothing
        outcome = _outcome(buffer, "failed", loop.time() - started, error=str(error))
    except asyncio.CancelledError:
        # The screen went away mid-command: the group is killed by ``exec``; say so.
        outcome = _outcome(buffer, "aborted", loop.time() - started)
        await _finish(harness, conversation_id, stopping, outcome)
        raise
    else:
        outcome = _outcome(
            buffer,
            "done",
            loop.time() - started,
            exit_code=result.exit_code,
            full_output=result.spill_path,
        )
    return await _finish(harness, conversation_id, stopping, outcome)


async def _finish(
    harness: Harness,
    conversation_id: int,
    stopping: tuple[asyncio.Future[None], asyncio.Event, asyncio.Event],
    outcome: ShellOutcome,
) -> int | None:
    progress, stop, dirty = stopping
    RUNNING.pop(conversation_id, None)
    stop.set()
    dirty.set()
    with contextlib.suppress(Exception):
        await progress  # a failed progress commit: the final one says it all
    return await harness.conversation(conversation_id).finish_shell(outcome)


def _outcome(
    buffer: ToolOutputBuffer,
    status: str,
    seconds: float,
    *,
    exit_code: int | None = None,
    error: str = "",
    full_output: str | None = None,
) -> ShellOutcome:
    buffer.finish()
    return ShellOutcome(
        status,  # type: ignore[arg-type]
        output=buffer.text.rstrip("\n"),
        exit_code=exit_code,
        dropped_lines=buffer.dropped_lines,
        dropped_bytes=buffer.dropped_bytes,
        error=error,
        duration_ms=round(seconds * 1000),
        full_output=full_output,
    )


async def settle_shell_commands(harness: Harness, conversation_ids: list[int]) -> list[str]:
    """On reopen: each user command a killed process left running becomes ``interrupted``.

    Returns:
        One recovery line per command, for the ``resumed`` separator.
    """
    lines: list[str] = []
    for conversation_id in dict.fromkeys(conversation_ids):
        command = await harness.conversation(conversation_id).settle_interrupted_shell()
        if command is not None:
            lines.append(f"Your shell command `{command}` was interrupted; it did not run again.")
    return lines


class UserShell:
    """The controller's one running user command, and Esc for it."""

    def __init__(self) -> None:
        self._abort: asyncio.Event | None = None

    @property
    def running(self) -> bool:
        """Whether a command of the user's runs now."""
        return self._abort is not None

    def refuse_while_running(self) -> None:
        """Raise ``ActionRefused`` when a command runs (a prompt then waits for it).

        Raises:
            ActionRefused: A command runs.
        """
        if self._abort is not None:
            raise ActionRefused(SHELL_RUNNING)

    def stop(self) -> None:
        """Esc: kill the running command's process group (nothing when none runs)."""
        if self._abort is not None:
            self._abort.set()

    async def run(
        self, harness: Harness, conversation_id: int, command: str, *, context: bool
    ) -> None:
        """Run one command of the user's (``run_user_command``); refusals say what to do.

        Raises:
            ActionRefused: The agent works, or a command already runs.
        """
        self.refuse_while_running()
        self._abort = abort = asyncio.Event()
        try:
            await run_user_command(harness, conversation_id, command, context=context, abort=abort)
        except ShellRefused as refused:
            raise ActionRefused(refused.reason) from None
        finally:
            self._abort = None
