"""Shell commands the user runs from the editor (``!cmd``, ``!!cmd``): their commits.

The command itself runs in the application (it owns the process and the Esc);
this module owns what is committed about it, so that nothing is shown before it
is stored and a crash leaves a record rather than a command that runs twice:

- ``begin_shell``: one commit that records ``pi.live.shell = {"command",
  "context", "started_ms", "output"}``; refused while the conversation runs
  (``pi.live.run``, R59 b: the user's command never interleaves with a turn) or
  another command of the user's runs. It starts no task and no turn (R60).
- ``shell_progress``: the bounded output so far, committed as it streams (an
  ``append`` operation when it only grew, DESIGN.md section 4).
- ``finish_shell``: one commit that removes ``pi.live.shell`` and admits a write
  of a ``pi.shell`` entry (R59 d: appended at once when idle, else queued and
  placed at the next boundary, R61, R62); a write never starts a turn (R60).
- ``settle_interrupted_shell``: on reopen, a ``pi.live.shell`` a killed process
  left becomes an ``interrupted`` entry with the output it had committed;
  nothing runs again.

With ``context`` (``!cmd``) the entry's ``model`` is one user message, ``I ran
`cmd` (exit 0):`` then the output, so the model's next request sees it (R73: an
entry with a model contributes it; R76); without it (``!!cmd``) the entry has no
model and contributes nothing (R73). The output is the bash tool's bounded tail
(2,000 lines or 50 KB), redacted at commit like every committed string
(DESIGN.md section 7). Only the application's editor calls these: no tool and
nothing the model writes reaches them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pi_durable_tui.harness._errors import ConversationBusy
from pi_durable_tui.harness._services import HarnessServices
from pi_durable_tui.harness._submission_types import EntryDraft, Write
from pi_durable_tui.harness.conversations._inbox import admit
from pi_durable_tui.harness.state import LIVE_DOC, SHELL, is_busy, user_message
from pi_durable_tui.kernel import Tx
from pi_durable_tui.storage.json_ops import JsonObject

ShellStatus = Literal["done", "aborted", "failed", "interrupted"]
"""How a user's shell command ended: it exited; Esc stopped it; it could not run or
timed out; the process running it was killed (seen on reopen)."""

SHELL_BUSY = "the agent is working: Esc first, or wait"
"""Why a shell command is refused while the conversation runs."""
SHELL_RUNNING = "a shell command is running: Esc stops it"
"""Why a second shell command is refused while one runs."""


class ShellRefused(ConversationBusy):
    """The conversation cannot run a user's shell command now (it works, or one runs)."""

    def __init__(self, conversation_id: int, reason: str) -> None:
        super().__init__(conversation_id)
        self.args = (reason,)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class ShellOutcome:
    """How a user's shell command ended, as ``finish_shell`` commits it.

    Attributes:
        status: See ``ShellStatus``.
        output: The retained output (the bounded tail).
        exit_code: The exit status when it exited.
        dropped_lines: Lines dropped before the retained tail.
        dropped_bytes: Bytes dropped before the retained tail.
        error: Why it failed (``failed``).
        duration_ms: Wall time.
        full_output: The file holding the complete output, when it spilled.
    """

    status: ShellStatus
    output: str = ""
    exit_code: int | None = None
    dropped_lines: int = 0
    dropped_bytes: int = 0
    error: str = ""
    duration_ms: int | None = None
    full_output: str | None = None


def shell_message_text(command: str, outcome: ShellOutcome) -> str:
    """The text of the user message a ``!cmd`` entry gives the model."""
    if outcome.status == "done":
        head = f"I ran `{command}` (exit {outcome.exit_code}):"
    elif outcome.status == "aborted":
        head = f"I ran `{command}` and stopped it before it finished:"
    elif outcome.status == "interrupted":
        head = f"I ran `{command}`; it was interrupted (the app was killed) before it finished:"
    else:
        head = f"I ran `{command}`; it failed ({outcome.error}):"
    lines = [head]
    if outcome.dropped_lines or outcome.dropped_bytes:
        lines.append(
            f"[earlier output dropped: {outcome.dropped_lines} lines, "
            f"{outcome.dropped_bytes} bytes]"
        )
    lines.append(outcome.output if outcome.output else "(no output)")
    if outcome.full_output:
        lines.append(f"[full output: {outcome.full_output}]")
    return "\n".join(lines)


async def begin_shell(
    tx: Tx, conversation_id: int, command: str, context: bool, now_ms: float
) -> None:
    """Record a running user command in ``pi.live.shell`` (module docstring).

    Raises:
        ShellRefused: The conversation runs, or another user command runs.
    """
    live = await tx.doc(LIVE_DOC, conversation_id)
    if is_busy(live):
        raise ShellRefused(conversation_id, SHELL_BUSY)
    if "shell" in live:
        raise ShellRefused(conversation_id, SHELL_RUNNING)
    live["shell"] = {
        "command": command,
        "context": context,
        "started_ms": int(now_ms),
        "output": "",
    }


async def shell_progress(
    tx: Tx, conversation_id: int, output: str, dropped_lines: int, dropped_bytes: int
) -> None:
    """Commit the retained output so far (nothing when the command already ended)."""
    live = await tx.doc(LIVE_DOC, conversation_id)
    shell = live.get("shell")
    if not isinstance(shell, dict):
        return
    # REMINDER: only ever set a grown string here: the draft diff turns it into one
    # ``append`` op, so streamed output costs its new bytes.
    shell["output"] = output
    if dropped_lines or dropped_bytes:
        shell["dropped_lines"] = dropped_lines
        shell["dropped_bytes"] = dropped_bytes


async def finish_shell(
    tx: Tx,
    services: HarnessServices,
    conversation_id: int,
    outcome: ShellOutcome,
    now_ms: float,
) -> int | None:
    """End the running user command: admit its ``pi.shell`` entry, clear ``pi.live.shell``.

    Returns:
        The submission ID of the write, or ``None`` when no command was running
        (already settled: an interrupted one on reopen).
    """
    live = await tx.doc(LIVE_DOC, conversation_id)
    shell = live.get("shell")
    if not isinstance(shell, dict):
        return None
    command = str(shell.get("command", ""))
    context = bool(shell.get("context", True))
    started = int(shell.get("started_ms") or 0)
    data: JsonObject = {
        "command": command,
        "status": outcome.status,
        "context": context,
        "output": outcome.output,
    }
    if outcome.exit_code is not None:
        data["exit_code"] = outcome.exit_code
    if outcome.dropped_lines or outcome.dropped_bytes:
        data["dropped_lines"] = outcome.dropped_lines
        data["dropped_bytes"] = outcome.dropped_bytes
    if outcome.error:
        data["error"] = outcome.error
    if outcome.duration_ms is not None:
        data["duration_ms"] = outcome.duration_ms
    if outcome.full_output:
        data["full_output"] = outcome.full_output
    model = [user_message(shell_message_text(command, outcome), now_ms)] if context else None
    draft = EntryDraft(SHELL, model=model, data=data)
    # REMINDER: the request ID names this command's start, so a finish that ran
    # twice (a retried commit) admits one entry.
    record = await admit(
        tx, services, conversation_id, Write(draft, request_id=f"shell:{started}:{command}")
    )
    live = await tx.doc(LIVE_DOC, conversation_id)
    live.pop("shell", None)
    return record.id


def interrupted_outcome(live: JsonObject) -> ShellOutcome | None:
    """The outcome a ``pi.live.shell`` left by a killed process gets, if one is there."""
    shell = live.get("shell")
    if not isinstance(shell, dict):
        return None
    return ShellOutcome(
        "interrupted",
        output=str(shell.get("output") or ""),
        dropped_lines=int(shell.get("dropped_lines") or 0),
        dropped_bytes=int(shell.get("dropped_bytes") or 0),
    )


async def settle_interrupted_shell(
    tx: Tx, services: HarnessServices, conversation_id: int, now_ms: float
) -> str | None:
    """Turn a user command a killed process left running into an ``interrupted`` entry.

    Returns:
        The command, or ``None`` when none was left.
    """
    live = await tx.doc(LIVE_DOC, conversation_id)
    outcome = interrupted_outcome(live)
    if outcome is None:
        return None
    command = str(live["shell"].get("command", ""))
    await finish_shell(tx, services, conversation_id, outcome, now_ms)
    return command
