"""The view model's data: what the screen shows, as plain immutable values.

Everything here is derived from committed state (the harness's views and watches),
so anything on screen survives ``kill -9``. The TUI renders these values and never
reads a Harness or a Storage (DESIGN.md section 1, layer 5 -> 6). Values are frozen
dataclasses; a change produces new values and a ``ViewChange`` saying what moved, so
the screen updates only what changed (one block, the footer, the queue, ...).

Every value is ``TerminalSafe``: its strings lose escape sequences and control
characters when it is built (``_terminal_text``, issue 13), so text from the
model, a tool, a file or a path reaches the screen inert.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pi_durable_tui.app._terminal_text import TerminalSafe

BlockKind = Literal[
    "user",  # a user message (pi.user)
    "assistant",  # assistant text (Markdown) with its thinking parts; may be streaming
    "tool",  # one tool call: its card
    "shell",  # a shell command the user ran from the editor (``!cmd``): a bash card
    "compaction",  # a compaction summary (collapsed by default)
    "reset",  # "[new context]"
    "error",  # a failed model attempt (retry or final failure), or a harness error
    "resumed",  # a separator where a continued session resumed, with the recovery report
    "system",  # a system-prompt change (usually hidden; shown only in verbose mode)
]

ToolStatus = Literal[
    "streaming",  # the model is still writing the call's arguments
    "pending",  # queued behind another call of a sequential round
    "running",  # executing; output is the committed retained window
    "done",  # finished successfully
    "error",  # finished with is_error (tool_error, invalid_arguments, blocked, ...)
    "interrupted",  # cut by a crash and not replay-safe: reported to the model
    "aborted",  # cut by Esc / abort
    "not_run",  # the answer carrying the call ended without running it
]


@dataclass(frozen=True, slots=True)
class ThinkingPart(TerminalSafe):
    """One thinking block of an assistant message (dimmed, collapsible)."""

    text: str
    redacted: bool = False


@dataclass(frozen=True, slots=True)
class Block(TerminalSafe):
    """One unit of the transcript, keyed stably so the screen can patch it in place.

    ``key`` is unique in a transcript and never reused for another block:
    ``e<entry id>`` for an entry, ``e<entry id>/<call id>`` for a tool card of an
    assistant entry, ``live`` for the streaming assistant message, ``live/<call id>``
    for a tool card still being streamed, ``resumed/<n>`` for a resume separator.
    ``entry_id`` is the entry the block comes from (``None`` for live blocks); it is
    what "fork from here" uses.
    """

    key: str
    kind: BlockKind
    entry_id: int | None = None
    text: str = ""
    """User text; assistant Markdown; compaction summary; error message; reset handoff."""
    thinking: tuple[ThinkingPart, ...] = ()
    streaming: bool = False
    """The text is still growing (assistant) or the card is live (tool)."""
    mark: Literal["", "interrupted", "aborted", "error"] = ""
    """Shown as ``[interrupted]`` / ``[aborted]`` after the block. An ``assistant``
    block marked ``interrupted`` is a partial a crash cut, answered again by the
    next attempt: the screen folds it to one line until expanded (issue 12)."""
    tool: ToolCard | None = None
    detail: str = ""
    """A second line: the retry countdown, the compaction reason, the error detail."""
    timestamp_ms: int = 0
    stop_reason: str = ""
    """An assistant message's stop reason once it is committed (``length``: cut at
    the model's max tokens); empty while it streams and for other blocks."""


@dataclass(frozen=True, slots=True)
class ToolCard(TerminalSafe):
    """What a tool card shows. Which fields matter depends on ``name``.

    - ``read``: ``path`` and ``line_range`` (``"12-80"``); collapsed by default.
    - ``write``: ``path``, ``size_bytes`` and ``preview`` (the content, highlighted
      by ``language``).
    - ``edit``: ``path`` and ``diff`` (a unified diff, coloured by the screen).
    - ``bash``: ``command``; ``output`` (a bounded tail while running, the retained
      output when done); ``exit_code`` and ``duration_ms`` when finished;
      ``job_id`` and ``job_pid`` when its process runs on as a background job
      (``background: true``, or moved there with Ctrl+B).
    - ``subagent`` and others: ``arguments`` and ``output``; ``conversation_id``
      when the call runs a child conversation (selecting it opens that conversation).
    """

    call_id: str
    name: str
    status: ToolStatus
    arguments: dict[str, Any] = field(default_factory=dict)
    path: str = ""
    line_range: str = ""
    command: str = ""
    output: str = ""
    """Committed output: the retained window (R102), already bounded."""
    dropped_lines: int = 0
    dropped_bytes: int = 0
    result_text: str = ""
    """What the model saw (content text), for the expanded view."""
    diff: str = ""
    preview: str = ""
    language: str = ""
    size_bytes: int | None = None
    exit_code: int | None = None
    duration_ms: int | None = None
    job_id: int | None = None
    """The background job the call's process runs on as (its task id, as ``/tasks`` shows)."""
    job_pid: int | None = None
    error: str = ""
    """The error message for ``error`` / ``interrupted`` / ``aborted``."""
    conversation_id: int | None = None


def last_answer(blocks: Sequence[Block]) -> str | None:
    """The text of the newest answer among ``blocks`` (``/copy``), or ``None`` before one.

    An answer is an ``assistant`` block with text (Markdown as the model wrote
    it, made terminal-safe like every block) that is committed: not the one
    still streaming, and not a partial a crash cut (``mark="interrupted"``),
    which the next attempt answers again. An answer the user aborted counts:
    its text is what the model wrote before Esc. Tool cards, errors and user
    messages after it do not hide it.

    Args:
        blocks: A view model's loaded blocks, oldest first (``ScreenModel.blocks``:
            the newest page is always loaded).
    """
    for block in reversed(blocks):
        if (
            block.kind == "assistant"
            and block.text.strip()
            and not block.streaming
            and block.mark != "interrupted"
        ):
            return block.text
    return None


@dataclass(frozen=True, slots=True)
class QueueItem(TerminalSafe):
    """A pending steer or follow-up in the inbox (removable), or a queued write."""

    submission_id: int
    mode: Literal["steer", "follow_up", "write"]
    text: str


@dataclass(frozen=True, slots=True)
class TaskNode(TerminalSafe):
    """One live durable task in the task tree, nested by owner (R126)."""

    task_id: int
    kind: str
    """``pi.generation``, ``pi.tool``, ``pi.compaction``, or an extension's task."""
    label: str
    """Human words: ``turn``, ``bash: npm test``, ``compaction (threshold)``, ``subagent 12``."""
    status: Literal["pending", "running", "waiting", "completing", "blocked", "stopped"]
    """``stopped``: the store failed under the session (issue 12), so nothing runs on."""
    phase: str = ""
    elapsed_s: float | None = None
    """Seconds since the task first ran (``started_at``), ``None`` if it never ran."""
    background: bool = False
    aborting: bool = False
    subagent_conversation_id: int | None = None
    """Set when the task owns a child conversation; selecting the node opens it."""
    children: tuple[TaskNode, ...] = ()


@dataclass(frozen=True, slots=True)
class Footer(TerminalSafe):
    """The footer: spend, context use, where and with what the agent works."""

    tokens_in: int = 0
    tokens_out: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0
    context_tokens: int | None = None
    """``None`` before the first answer after the newest compaction (shown as ``?``)."""
    context_window: int = 0
    cwd: str = ""
    model: str = ""
    """``provider/model-id`` or empty when none is configured."""
    thinking_level: str = "off"
    conversation_label: str = "main"
    """``main`` or ``subagent <id>``."""
    permission_mode: str = ""
    """The session's permission mode in force (``plan``, ``auto-edit``, ``ask``,
    ``auto``; issue 13), empty before the session is open."""
    attached: int = 0
    """How many other terminals and clients share this session (issue 15)."""

    @property
    def context_percent(self) -> float | None:
        """Context use in percent of the window, or ``None`` when unknown."""
        if self.context_tokens is None or self.context_window <= 0:
            return None
        return 100.0 * self.context_tokens / self.context_window


NoticeLevel = Literal["info", "warning", "error"]
"""How a notice is shown: muted, in the warning colour, in the error colour."""


@dataclass(frozen=True, slots=True)
class Notice(TerminalSafe):
    """A one-line message: transient, or ``lasting`` while its cause holds.

    A lasting notice (the store failed: nothing more can be done in this
    session) stays on screen, since the status line points at it.
    """

    level: NoticeLevel
    text: str
    id: int = 0
    lasting: bool = False


@dataclass(frozen=True, slots=True)
class ConversationInfo(TerminalSafe):
    """A conversation the user can switch to (``/agents``)."""

    conversation_id: int
    label: str
    title: str
    """The first user message, shortened."""
    shown: bool = False
    busy: bool = False


@dataclass(frozen=True, slots=True)
class SessionInfo(TerminalSafe):
    """A stored session of this directory (``--resume`` picker)."""

    path: str
    first_message: str
    last_activity_ms: int
    size_bytes: int
    name: str = ""
    """The name ``/name`` gave it (shown before the first message), or empty."""


@dataclass(frozen=True, slots=True)
class SessionDetails(TerminalSafe):
    """What ``/session`` lists, each figure read from committed state.

    The session's own facts (its store, name, spend, conversations and tasks)
    come from the process holding the store; what depends on the shown
    conversation (working directory, model, thinking level, permission mode,
    context use) from the screen's footer (``with_footer``).
    """

    store: str
    """The store file, or the database (password hidden) and the store's name in it."""
    session_id: str
    """``<13-digit ms>-<uuid>``, or empty for a store named by its path."""
    created_ms: int | None
    """When the session was created (``None``: not recorded, a store named by path)."""
    name: str = ""
    entries: int = 0
    """Entries in the shown conversation's visible history (a fork's parent's included)."""
    entries_capped: bool = False
    """``entries`` stopped counting at its cap (shown as ``N+``)."""
    tokens_in: int = 0
    tokens_out: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0
    """Spend of every conversation of the session (R116)."""
    subagents: int = 0
    """Subagent conversations (conversations a task owns)."""
    background_tasks: int = 0
    """Live background tasks (background subagents, jobs)."""
    cwd: str = ""
    model: str = ""
    thinking_level: str = "off"
    permission_mode: str = ""
    context_tokens: int | None = None
    context_window: int = 0

    def with_footer(self, footer: Footer) -> SessionDetails:
        """These details with the shown conversation's figures from ``footer``."""
        return replace(
            self,
            cwd=footer.cwd,
            model=footer.model,
            thinking_level=footer.thinking_level,
            permission_mode=footer.permission_mode,
            context_tokens=footer.context_tokens,
            context_window=footer.context_window,
        )


@dataclass(frozen=True, slots=True)
class ModelChoice(TerminalSafe):
    """A model the ``/model`` picker offers."""

    ref: str
    """``provider/model-id``."""
    name: str
    provider: str
    context_window: int = 0
    reasoning: bool = False
    configured: bool = True
    """False when the provider has no API key; shown with the variable to set."""
    missing_key: str | None = None
    """The environment variable to set (``ANTHROPIC_API_KEY``) when not configured."""

    @property
    def setup_hint(self) -> str:
        """What to do to use this model when its key is missing (issue 12)."""
        return missing_key_hint(self.ref, self.missing_key or "its provider's API key")


def missing_key_hint(ref: str, variable: str) -> str:
    """Which variable a model needs, and how settings name a custom provider's variable."""
    return (
        f"{ref} needs {variable}: export {variable}=... and start pidurable again. A "
        'provider declared under "providers" in settings names its key variable with '
        '"api_key_env" (null for a local server that needs none; README: Models and keys).'
    )


@dataclass(frozen=True, slots=True)
class SkillInfo:
    """A skill the system prompt lists (``/skills``)."""

    name: str
    description: str
    path: str
    source: str
    """``project``, ``user`` or ``claude`` (the directory it was found in)."""


@dataclass(frozen=True, slots=True)
class CommandInfo:
    """A custom slash command (a Markdown file), for completion and help."""

    name: str
    argument_hint: str
    description: str
    source: str
    """``project``, ``user`` or ``claude`` (the directory it was found in)."""


@dataclass(frozen=True, slots=True)
class ApprovalQuestion:
    """A tool call that waits for the user's decision (issue 13, DESIGN.md 7).

    The request is committed before the screen shows it, so after a crash
    ``--continue`` shows the same question again.

    Attributes:
        call_id: The tool call's ID (decisions name it).
        tool: The tool's name.
        argument: Its main argument: the full command, the path (terminal-safe).
        reason: Why it needs a decision (``bash in auto-edit mode``, a protected path).
        mode: The permission mode in force.
        protected: Whether it touches pidurable's own files (asked in every mode).
        suggestion: The rule ``a``/``p`` would add (``bash(make test)``), if any.
    """

    call_id: str
    tool: str
    argument: str
    reason: str
    mode: str
    protected: bool = False
    suggestion: str | None = None


@dataclass(frozen=True, slots=True)
class TrustQuestion:
    """A project's settings widen powers and wait for the user's answer (issue 13).

    Attributes:
        id: Which content it is about (its sha256): answers name it, so an answer
            never applies to a content the user did not see.
        text: ``This project's settings (PATH) allow ...: trust them?``.
        keys: Each widening key and its value as JSON (control characters escaped).
        heading: ``This project's settings (PATH) allow:``, above the keys.
    """

    id: str
    text: str
    keys: tuple[tuple[str, str], ...] = ()
    heading: str = ""


@dataclass(frozen=True, slots=True)
class ViewChange:
    """What one update changed, so the screen patches only that."""

    blocks_added: tuple[str, ...] = ()
    """Keys appended at the end of the transcript, in order."""
    blocks_changed: tuple[str, ...] = ()
    blocks_removed: tuple[str, ...] = ()
    transcript_reset: bool = False
    """The transcript was rebuilt (switch of conversation, compaction): re-render it."""
    older_loaded: int = 0
    """How many blocks were prepended by ``load_older``."""
    queue: bool = False
    tasks: bool = False
    footer: bool = False
    status: bool = False
    notices: bool = False
    trust: bool = False
    """A trust question appeared or was answered (``ScreenModel.trust_question``)."""
    approval: bool = False
    """The calls waiting for a decision changed (``ScreenModel.approval``)."""
