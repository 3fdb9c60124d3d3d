"""Plain-data ``ScreenModel`` and ``Controller`` for the screen alone (benchmark and tests).

``StaticScreenModel`` holds values a test or the benchmark sets and announces
each change as a ``ViewChange``, as the real view model does after a commit;
``RecordingController`` records every call and answers with canned values. The
TUI benchmark and ``tests/tui`` share them; the lead's end-to-end tests use the
real app layer instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pi_durable_tui.app import (
    ApprovalQuestion,
    Block,
    CommandInfo,
    ConversationInfo,
    ExportFormat,
    Footer,
    HostAction,
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


class StaticScreenModel:
    """A view model whose state is set directly.

    Args:
        blocks: The loaded blocks, oldest first.
        older: Blocks ``load_older`` can still bring, oldest first.
        footer: The footer values.
    """

    def __init__(
        self,
        blocks: Iterable[Block] = (),
        *,
        older: Iterable[Block] = (),
        footer: Footer | None = None,
    ) -> None:
        self._blocks: list[Block] = list(blocks)
        self._older: list[Block] = list(older)
        self._index = {block.key: block for block in [*self._older, *self._blocks]}
        self.queue: list[QueueItem] = []
        self.tasks: list[TaskNode] = []
        self.footer = footer or Footer(cwd="~/project", model="faux/demo", context_window=200_000)
        self.status = ""
        self.busy = False
        self.notices: list[Notice] = []
        self.trust_question: TrustQuestion | None = None
        self.approval: ApprovalQuestion | None = None
        self._listeners: list[Callable[[ViewChange], None]] = []

    @property
    def blocks(self) -> Sequence[Block]:
        """The loaded blocks."""
        return self._blocks

    @property
    def has_older(self) -> bool:
        """Whether ``load_older`` can bring more."""
        return bool(self._older)

    def block(self, key: str) -> Block | None:
        """The loaded block with this key."""
        block = self._index.get(key)
        return block if block is not None and block in self._blocks else None

    def subscribe(self, listener: Callable[[ViewChange], None]) -> Callable[[], None]:
        """Call ``listener`` after each change; returns the unsubscribe function."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    @property
    def listeners(self) -> int:
        """How many listeners are subscribed."""
        return len(self._listeners)

    def push(self, change: ViewChange) -> None:
        """Announce a change to every listener."""
        for listener in list(self._listeners):
            listener(change)

    def append(self, *blocks: Block) -> None:
        """Append blocks at the end."""
        for block in blocks:
            self._blocks.append(block)
            self._index[block.key] = block
        self.push(ViewChange(blocks_added=tuple(block.key for block in blocks)))

    def update(self, key: str, **values: Any) -> Block:
        """Replace fields of a loaded block; returns the new block."""
        old = self._index[key]
        new = replace(old, **values)
        self._blocks[self._blocks.index(old)] = new
        self._index[key] = new
        self.push(ViewChange(blocks_changed=(key,)))
        return new

    def remove(self, key: str) -> None:
        """Remove a loaded block."""
        self._blocks.remove(self._index.pop(key))
        self.push(ViewChange(blocks_removed=(key,)))

    def set(self, **values: Any) -> None:
        """Set ``queue``, ``tasks``, ``footer``, ``status``, ``busy`` or the notices.

        The notices are ``notices``, ``trust_question`` and ``approval``.
        """
        for name, value in values.items():
            setattr(self, name, list(value) if name in ("queue", "tasks", "notices") else value)
        self.push(
            ViewChange(
                queue="queue" in values,
                tasks="tasks" in values,
                footer="footer" in values,
                status="status" in values or "busy" in values,
                notices="notices" in values,
                trust="trust_question" in values,
                approval="approval" in values,
            )
        )

    def load_older(self, count: int) -> int:
        """Move up to ``count`` older blocks into the loaded ones."""
        moved = self._older[-count:] if count else []
        del self._older[len(self._older) - len(moved) :]
        self._blocks[0:0] = moved
        if moved:
            self.push(ViewChange(older_loaded=len(moved)))
        return len(moved)


@dataclass
class RecordingController:
    """A controller that records calls and answers with the values it holds.

    Attributes:
        model: The model ``load_older`` reads from.
        calls: ``(name, args)`` of every call, in order.
        abort_texts: What ``abort`` returns.
        withdraw_texts: What ``withdraw`` returns, by submission ID.
        fork_text: What ``fork`` returns.
        thinking_levels: What ``cycle_thinking`` returns, in turn.
        model_choices: What ``models`` returns.
        conversation_list: What ``conversations`` returns.
        session_list: What ``sessions`` returns.
        paths: What ``complete_path`` filters by prefix.
        prompts: What ``history`` returns.
        skill_list: What ``skills`` returns.
        reload_failures: What ``reload_extensions`` returns (the files that failed).
        command_list: What ``custom_commands`` returns.
        fail: Names of actions that raise ``RuntimeError``.
        settings_refreshes: How often the screen asked to re-read the settings.
        jobs_running: What ``running_jobs`` returns.
        refusals: What ``refusal`` answers, by action (an attached screen's lines).
        details: What ``session_details`` returns.
        name: The session's name (``name_session`` sets it).
    """

    model: StaticScreenModel | None = None
    calls: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)
    abort_texts: list[str] = field(default_factory=list)
    withdraw_texts: dict[int, str] = field(default_factory=dict)
    fork_text: str = ""
    thinking_levels: list[str] = field(default_factory=lambda: ["low", "medium", "high"])
    model_choices: list[ModelChoice] = field(default_factory=list)
    conversation_list: list[ConversationInfo] = field(default_factory=list)
    session_list: list[SessionInfo] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)
    skill_list: list[SkillInfo] = field(default_factory=list)
    reload_failures: list[str] = field(default_factory=list)
    command_list: list[CommandInfo] = field(default_factory=list)
    fail: set[str] = field(default_factory=set)
    settings_refreshes: int = 0
    jobs_running: int = 0
    refusals: dict[str, str] = field(default_factory=dict)
    details: SessionDetails = field(
        default_factory=lambda: SessionDetails(
            store="/tmp/session.sqlite", session_id="", created_ms=None
        )
    )
    name: str = ""

    def _record(self, name: str, *args: Any) -> None:
        self.calls.append((name, args))
        if name in self.fail:
            raise RuntimeError(f"{name} is broken")

    def called(self, name: str) -> list[tuple[Any, ...]]:
        """Return the arguments of every call of ``name``."""
        return [args for call, args in self.calls if call == name]

    def refusal(self, action: HostAction) -> str | None:
        """``refusals[action]`` (set by a test), else ``None``."""
        return self.refusals.get(action)

    async def submit(self, text: str, *, follow_up: bool = False) -> None:
        """Record a submission."""
        self._record("submit", text, follow_up)

    async def run_shell(self, command: str, *, context: bool) -> None:
        """Record a shell command (``!cmd``)."""
        self._record("run_shell", command, context)

    async def abort(self) -> list[str]:
        """Record an abort; return ``abort_texts``."""
        self._record("abort")
        return list(self.abort_texts)

    async def withdraw(self, submission_id: int) -> str | None:
        """Record a withdrawal; return its text."""
        self._record("withdraw", submission_id)
        return self.withdraw_texts.get(submission_id)

    async def load_older(self, count: int) -> int:
        """Record the request and let the model load older blocks."""
        self._record("load_older", count)
        return self.model.load_older(count) if self.model is not None else 0

    async def compact(self, instructions: str | None = None) -> None:
        """Record a compaction request."""
        self._record("compact", instructions)

    async def cycle_permission_mode(self) -> str:
        """Record the cycle; the mode after ``auto-edit``."""
        self._record("cycle_permission_mode")
        return "ask"

    async def permissions(self) -> list[str]:
        """Record the call; the default mode and no rules."""
        self._record("permissions")
        return ["mode: auto-edit (default)"]

    async def reload_extensions(self) -> list[str]:
        """Record the call; ``reload_failures``."""
        self._record("reload_extensions")
        return list(self.reload_failures)

    async def mcp_servers(self) -> list[str]:
        """Record the call; no servers."""
        self._record("mcp_servers")
        return ["No MCP servers"]

    async def clients(self) -> list[str]:
        """Record the call; only this terminal."""
        self._record("clients")
        return ["this terminal"]

    async def session_details(self) -> SessionDetails:
        """Record the call; ``details`` with the current ``name``."""
        self._record("session_details")
        return replace(self.details, name=self.name)

    async def session_name(self) -> str:
        """Record the call; ``name``."""
        self._record("session_name")
        return self.name

    async def name_session(self, name: str) -> str:
        """Record the call; keep ``name`` as given (stripped)."""
        self._record("name_session", name)
        self.name = name.strip()
        return self.name

    async def cycle_thinking(self) -> str:
        """Record the cycle; return the next level."""
        self._record("cycle_thinking")
        level = self.thinking_levels.pop(0)
        self.thinking_levels.append(level)
        return level

    def models(self) -> list[ModelChoice]:
        """Return ``model_choices``."""
        self._record("models")
        return list(self.model_choices)

    async def set_model(self, ref: str) -> None:
        """Record the model choice."""
        self._record("set_model", ref)

    async def conversations(self) -> list[ConversationInfo]:
        """Return ``conversation_list``."""
        self._record("conversations")
        return list(self.conversation_list)

    async def switch_conversation(self, conversation_id: int) -> None:
        """Record the switch."""
        self._record("switch_conversation", conversation_id)

    async def fork(self, entry_id: int) -> str:
        """Record the fork; return ``fork_text``."""
        self._record("fork", entry_id)
        return self.fork_text

    async def new_session(self) -> None:
        """Record the request."""
        self._record("new_session")

    async def sessions(self) -> list[SessionInfo]:
        """Return ``session_list``."""
        self._record("sessions")
        return list(self.session_list)

    async def open_session(self, path: str) -> None:
        """Record the session choice."""
        self._record("open_session", path)

    async def export(self, fmt: ExportFormat, path: str | None = None) -> str:
        """Record the export; return where it would be written."""
        self._record("export", fmt, path)
        return path or f"transcript.{fmt}"

    def custom_commands(self) -> list[CommandInfo]:
        """Return ``command_list``."""
        return list(self.command_list)

    async def run_custom_command(self, name: str, arguments: str) -> None:
        """Record a custom command."""
        self._record("run_custom_command", name, arguments)

    def skills(self) -> list[SkillInfo]:
        """Return ``skill_list``."""
        return list(self.skill_list)

    def complete_path(self, prefix: str) -> list[str]:
        """Return the ``paths`` that start with ``prefix``."""
        return [path for path in self.paths if path.startswith(prefix)][:50]

    def history(self) -> Sequence[str]:
        """Return ``prompts``."""
        return list(self.prompts)

    def refresh_settings(self) -> None:
        """Count the re-read (no record: the screen calls it every second)."""
        self.settings_refreshes += 1

    async def answer_trust(self, question_id: str, trusted: bool) -> None:
        """Record the answer; the question is answered (``trust_question`` clears)."""
        self._record("answer_trust", question_id, trusted)
        if self.model is not None:
            self.model.set(trust_question=None)

    async def decide(self, call_id: str, choice: str, message: str | None = None) -> None:
        """Record the decision; the call no longer waits (``approval`` clears)."""
        self._record("decide", call_id, choice, message)
        if self.model is not None:
            self.model.set(approval=None)

    async def stop_task(self, task_id: int) -> str:
        """Record the stop."""
        self._record("stop_task", task_id)
        return f"Stopping task {task_id}."

    async def background_command(self) -> str:
        """Record the move."""
        self._record("background_command")
        return "Moved the running command to the background."

    async def running_jobs(self) -> int:
        """The jobs a test says run (``jobs_running``)."""
        return self.jobs_running

    def leave_jobs_running(self) -> None:
        """Record the choice."""
        self._record("leave_jobs_running")

    async def close(self) -> None:
        """Record the close."""
        self._record("close")


def sample_blocks(count: int, *, start: int = 0) -> list[Block]:
    """Return ``count`` blocks of a plausible session: prompts, answers and tool cards.

    Args:
        count: How many blocks.
        start: The first entry ID (blocks are keyed ``e<id>``).

    Returns:
        The blocks, oldest first.
    """
    from pi_durable_tui.app import ThinkingPart, ToolCard

    blocks: list[Block] = []
    for entry_id in range(start, start + count):
        key = f"e{entry_id}"
        match entry_id % 4:
            case 0:
                text = f"Please look at module {entry_id} and fix the failing test."
                blocks.append(Block(key, "user", entry_id, text=text))
            case 1:
                text = (
                    f"Reading **module {entry_id}** first.\n\n"
                    "```python\ndef check(value: int) -> bool:\n    return value > 0\n```\n\n"
                    "- the check is inverted\n- the test expects `True`"
                )
                thinking = (ThinkingPart("The failure is probably the comparison."),)
                blocks.append(Block(key, "assistant", entry_id, text=text, thinking=thinking))
            case 2:
                card = ToolCard(
                    f"call{entry_id}",
                    "bash",
                    "done",
                    command="pytest -q tests/test_check.py",
                    output="\n".join(f"line {n} of output" for n in range(12)) + "\n3 passed",
                    exit_code=0,
                    duration_ms=1234,
                )
                blocks.append(Block(key, "tool", entry_id, tool=card))
            case _:
                diff = (
                    "--- a/check.py\n+++ b/check.py\n@@ -1,2 +1,2 @@\n"
                    " def check(value: int) -> bool:\n-    return value < 0\n+    return value > 0"
                )
                card = ToolCard(f"call{entry_id}", "edit", "done", path="check.py", diff=diff)
                blocks.append(Block(key, "tool", entry_id, tool=card))
    return blocks
