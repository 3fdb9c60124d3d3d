"""What the screen reads and what it calls: the two narrow faces of the app layer.

The TUI (layer 6) depends on these protocols only. ``ScreenModel`` is the view
model: plain values derived from committed state, plus a subscription that says
what changed. ``Controller`` is every action the screen can take; each one goes
through the harness and comes back to the screen only as committed state (the
screen never shows an optimistic echo, DESIGN.md section 5).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, Protocol

from pi_durable_tui.app._view import (
    ApprovalQuestion,
    Block,
    CommandInfo,
    ConversationInfo,
    Footer,
    ModelChoice,
    Notice,
    QueueItem,
    SessionDetails,
    SessionInfo,
    SkillInfo,
    TaskNode,
    TrustQuestion,
    ViewChange,
)

ExportFormat = Literal["jsonl", "markdown", "html"]
"""The transcript formats ``Controller.export`` writes."""


class ActionRefused(ValueError):
    """A ``Controller`` action the user can fix: its message says what was wrong and what to do.

    An unknown model, a model whose key is not set, an intent the host refused. The
    screen shows the message as a notice and logs no traceback: nothing crashed.
    """


HostAction = Literal["fork", "new", "resume", "export", "permission_mode", "shell"]
"""What acts on the process that holds the session rather than on the shared session.

``/fork``, ``/new``, ``/resume``, ``/export``, a permission-mode change (F4) and a
shell command typed in the editor (``!cmd``: it runs on the host's machine) need
the store, the directory's files or the settings of that process; the screen asks
``Controller.refusal`` before it starts one (issue 15).
"""


class ScreenModel(Protocol):
    """The state of the shown conversation and the session, as the screen renders it."""

    @property
    def blocks(self) -> Sequence[Block]:
        """The loaded part of the transcript, oldest first (the newest page at start)."""
        ...

    @property
    def has_older(self) -> bool:
        """Whether older blocks exist before ``blocks[0]`` (``Controller.load_older``)."""
        ...

    @property
    def queue(self) -> Sequence[QueueItem]:
        """Pending steers, follow-ups and writes of the shown conversation, in order."""
        ...

    @property
    def tasks(self) -> Sequence[TaskNode]:
        """Roots of the live task tree of the whole session."""
        ...

    @property
    def footer(self) -> Footer:
        """Spend, context use, cwd, model and thinking level."""
        ...

    @property
    def status(self) -> str:
        """The status line, or empty when idle.

        For example ``Working... (esc to abort)``, ``Retrying in 4s (attempt 2): ...``,
        ``Running bash... (esc to abort)`` or ``Compacting (threshold)...``.
        """
        ...

    @property
    def busy(self) -> bool:
        """Whether the shown conversation runs (Enter then steers)."""
        ...

    @property
    def notices(self) -> Sequence[Notice]:
        """The newest notices (at most 4 shown)."""
        ...

    @property
    def trust_question(self) -> TrustQuestion | None:
        """Project settings that widen powers and wait for the user (issue 13), if any."""
        ...

    @property
    def approval(self) -> ApprovalQuestion | None:
        """The oldest tool call of the shown conversation waiting for a decision, if any."""
        ...

    def block(self, key: str) -> Block | None:
        """Return the loaded block with this key."""
        ...

    def subscribe(self, listener: Callable[[ViewChange], None]) -> Callable[[], None]:
        """Call ``listener`` after each change (on the event loop); returns unsubscribe."""
        ...


class Controller(Protocol):
    """Every action the screen takes. Actions run one at a time in order, except ``abort``."""

    def refusal(self, action: HostAction) -> str | None:
        """Why this screen cannot start ``action``, in one line that says what to do instead.

        ``None`` when it can. A screen attached to a session hosted by another
        process (issue 15) refuses what acts on that process: the screen asks
        before it opens a picker or sends anything.
        """
        ...

    async def submit(self, text: str, *, follow_up: bool = False) -> None:
        """Submit text: a prompt when idle; a steer when busy, or a follow-up if asked."""
        ...

    async def run_shell(self, command: str, *, context: bool) -> None:
        """Run the user's shell command in the shown conversation (``!cmd``; ``!!cmd``).

        It runs in the conversation's working directory, its command and output
        committed as a ``pi.shell`` entry before the screen shows them; with
        ``context`` the model's next request sees them, without it they are only
        shown. It starts no turn; Esc (``abort``) stops it.

        Raises:
            ActionRefused: The agent works (Esc first, or wait), or a command runs.
        """
        ...

    async def abort(self) -> list[str]:
        """Abort the shown conversation's foreground work (Esc, R57).

        Returns:
            The texts of the withdrawn queued inputs, oldest first, for the editor.
        """
        ...

    async def withdraw(self, submission_id: int) -> str | None:
        """Withdraw one queued item; returns its text for the editor (None if already placed)."""
        ...

    async def load_older(self, count: int) -> int:
        """Load up to ``count`` older blocks before the loaded ones; returns how many came."""
        ...

    async def compact(self, instructions: str | None = None) -> None:
        """Compact the shown conversation (``/compact``)."""
        ...

    async def cycle_thinking(self) -> str:
        """Move to the model's next thinking level; returns it (Shift+Tab)."""
        ...

    async def cycle_permission_mode(self) -> str:
        """Move to the next permission mode (plan, auto-edit, ask, auto); returns it (F4)."""
        ...

    async def permissions(self) -> list[str]:
        """The permission mode and rules in force, one line each, with their source."""
        ...

    async def mcp_servers(self) -> list[str]:
        """Each MCP server, its state and its tools, one line each (``/mcp``)."""
        ...

    async def reload_extensions(self) -> list[str]:
        """Import the extension files again and swap them in; one line per file that failed."""
        ...

    async def clients(self) -> list[str]:
        """Who is attached to the session (``/clients``), one line each, this terminal first."""
        ...

    async def session_details(self) -> SessionDetails:
        """What ``/session`` lists: the store, the name, spend, conversations and tasks.

        The shown conversation's figures (model, thinking level, permission
        mode, context use) are those of ``ScreenModel.footer``.
        """
        ...

    async def session_name(self) -> str:
        """The name ``/name`` gave the session, or empty."""
        ...

    async def name_session(self, name: str) -> str:
        """Commit a name for the session (``/name NAME``); returns it as kept.

        The name is made one terminal-safe line and capped; it then shows in
        ``/session`` and in the ``--resume`` picker.

        Raises:
            ActionRefused: The name holds nothing printable.
        """
        ...

    def models(self) -> list[ModelChoice]:
        """The models ``/model`` offers: the catalog and configured custom providers."""
        ...

    async def set_model(self, ref: str) -> None:
        """Use ``provider/model-id`` in the shown conversation.

        Raises:
            ActionRefused: A malformed or unknown model (the message lists the
                providers, or the provider's models), or one whose key is not set.
        """
        ...

    async def conversations(self) -> list[ConversationInfo]:
        """The main conversation and every subagent conversation (``/agents``)."""
        ...

    async def switch_conversation(self, conversation_id: int) -> None:
        """Show another conversation; the editor then talks to it."""
        ...

    async def fork(self, entry_id: int) -> str:
        """Fork the shown conversation at an entry; returns the entry's text for the editor."""
        ...

    async def new_session(self) -> None:
        """Start a new session for the working directory (``/new``)."""
        ...

    async def sessions(self) -> list[SessionInfo]:
        """The stored sessions of this directory, newest first (``/resume``)."""
        ...

    async def open_session(self, path: str) -> None:
        """Switch to another stored session."""
        ...

    async def export(self, fmt: ExportFormat, path: str | None = None) -> str:
        """Write the shown conversation's transcript; returns the full path written.

        ``path`` may start with ``~``; a relative one is in the session's directory.

        Raises:
            ActionRefused: The file cannot be written (a directory that does not
                exist, a directory in its place, no permission); nothing was written.
        """
        ...

    def custom_commands(self) -> list[CommandInfo]:
        """The custom slash commands (Markdown files), sorted by name."""
        ...

    async def run_custom_command(self, name: str, arguments: str) -> None:
        """Send the custom command ``name`` filled with ``arguments``, as ``submit`` sends.

        Raises:
            LookupError: Its file is gone.
            ValueError: Its file cannot be used (the message names it).
        """
        ...

    def skills(self) -> list[SkillInfo]:
        """The skills the system prompt lists; unusable skill files become notices."""
        ...

    def complete_path(self, prefix: str) -> list[str]:
        """Paths under the working directory for ``@`` completion (at most 50)."""
        ...

    def history(self) -> Sequence[str]:
        """Earlier prompts of this directory, oldest first (editor Up/Down)."""
        ...

    def refresh_settings(self) -> None:
        """Re-read the settings files if they changed (the screen calls it every second).

        A change whose widening keys need the user's confirmation then shows as
        ``ScreenModel.trust_question``.
        """
        ...

    async def answer_trust(self, question_id: str, trusted: bool) -> None:
        """Trust (or not) the project settings content ``question_id`` (``y``/``n``)."""
        ...

    async def decide(self, call_id: str, choice: str, message: str | None = None) -> None:
        """Decide a call waiting for approval: ``once``, ``session``, ``project`` or ``deny``."""
        ...

    async def stop_task(self, task_id: int) -> str:
        """Stop a live task by its id (``/tasks stop N``); returns the notice (issue 13).

        Raises:
            ValueError: No live task has that id.
        """
        ...

    async def background_command(self) -> str:
        """Move the shown conversation's running ``bash`` command to the background (Ctrl+B).

        Returns:
            The notice to show (what moved, or that nothing runs).
        """
        ...

    async def running_jobs(self) -> int:
        """How many background jobs leaving the app would end (0 for an attached client)."""
        ...

    def leave_jobs_running(self) -> None:
        """Leave the background jobs running when the app exits (asked on quit)."""
        ...

    async def close(self) -> None:
        """Close the harness and storage; safe to call twice."""
        ...
