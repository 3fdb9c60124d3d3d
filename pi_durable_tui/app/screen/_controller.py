"""``AgentController``: every action the screen takes, through the harness (issue 8).

Actions run one at a time in the order they were made (a small lock), except
``abort``, which must never wait behind them (reference 5.2). Nothing here shows
anything: each action's effect reaches the screen as committed state through the
``LiveScreenModel``.

- ``submit``: a prompt when idle; while the agent works, a steer (placed after
  the current tool round), or a follow-up when asked (placed when the run answers).
- ``abort`` (Esc): ``Conversation.abort()`` on the shown conversation; background
  tasks keep running; the texts of the queued inputs it withdrew come back for
  the editor.
- ``compact``: starts a manual compaction; a notice says how it ended
  (``Compacted.``, queued, dropped, nothing to compact, aborted, failed).
- ``fork``: a new conversation that sees the history before a user message, shown
  at once; the message's text comes back for the editor (to edit and resend).
- ``new_session`` / ``open_session``: open another session of the directory with
  the same providers (a new one with the shown model and thinking level), then
  close this one; a stored one shows its recovery report, like ``--continue``.
- ``session_details`` / ``name_session``: ``/session`` and ``/name`` (``_session_details``,
  ``_session_name``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from pi_durable_tui.ai import ModelRef, clamp_thinking_level, supported_thinking_levels
from pi_durable_tui.app._ports import ActionRefused, ExportFormat, HostAction
from pi_durable_tui.app._terminal_text import terminal_safe
from pi_durable_tui.app._view import (
    CommandInfo,
    ConversationInfo,
    ModelChoice,
    SessionDetails,
    SessionInfo,
    SkillInfo,
    missing_key_hint,
)
from pi_durable_tui.app.agent import (
    AgentApp,
    export_transcript,
    live_jobs,
    moved_notice,
    stop_task,
)
from pi_durable_tui.app.files import (
    Expansion,
    ProjectFiles,
    SettingsError,
    TrustRequest,
    discover_commands,
    discover_skills,
    expand_command,
    expand_command_line,
    session_infos,
)
from pi_durable_tui.app.screen._compaction_notices import compaction_notice, written_outcome
from pi_durable_tui.app.screen._conversation_list import list_conversations
from pi_durable_tui.app.screen._editor_aids import complete_path, read_history, remember
from pi_durable_tui.app.screen._export_file import open_export_file
from pi_durable_tui.app.screen._names import entry_text
from pi_durable_tui.app.screen._recovery import recovery_report
from pi_durable_tui.app.screen._screen_model import LiveScreenModel
from pi_durable_tui.app.screen._session_details import session_details
from pi_durable_tui.app.screen._session_name import mirror_name, name_session, session_name
from pi_durable_tui.app.screen._shown import show_conversation, shown_conversation
from pi_durable_tui.app.screen._store_failure import StoreStopped
from pi_durable_tui.app.screen._trust_answers import answer_trust
from pi_durable_tui.app.screen._user_shell import UserShell
from pi_durable_tui.harness import (
    MODES,
    PERMISSIONS_DOC,
    AgentChange,
    DecisionRejected,
    Input,
    WhenBusy,
)
from pi_durable_tui.kernel import SessionFailed
from pi_durable_tui.tools import move_to_background

T = TypeVar("T")


class KeepServing(Exception):
    """Raised by a ``before_close`` step: other clients are attached, leave the session open.

    The screen's model closes; the session and its host stay until whoever
    raised it closes them (issue 15: the hosting terminal quits, the others go on).
    """


class AgentController:
    """The ``Controller`` of the screen over an open ``AgentApp``.

    Args:
        app: The open session (the controller closes it).
        model: The screen model following it.
    """

    def __init__(
        self,
        app: AgentApp,
        model: LiveScreenModel,
    ) -> None:
        self.app = app
        self._session_mode: str | None = None  # the mode F4 chose (pi.permissions)
        self.model = model
        self._lock = asyncio.Lock()
        self._shell = UserShell()  # ``!cmd``: never behind the lock, Esc stops it
        self._closed = False
        self._waiters: set[asyncio.Future[None]] = set()
        self._project_files: ProjectFiles | None = None
        self._unwatch_settings = self._watch_settings(app)
        self._before_close: list[Callable[[], Awaitable[None]]] = []
        self.presence: Callable[[], list[str]] | None = None
        """Who is attached (set by the session's host, issue 15); ``None`` when not served."""

    def before_close(self, step: Callable[[], Awaitable[None]]) -> None:
        """Run ``step`` first when closing (the session's host says bye to its clients)."""
        self._before_close.append(step)

    def _watch_settings(self, app: AgentApp) -> Callable[[], None]:
        """Report settings problems and trust requests to the screen.

        Each problem of a settings edit becomes a notice (the old settings stay);
        each project settings content that waits for the user's trust is announced.
        """
        loop = asyncio.get_running_loop()

        def failed(error: SettingsError) -> None:
            # Re-reads happen at harness decisions: show it after the current step.
            loop.call_soon(self.model.add_notice, "warning", settings_notice(error))

        def asked(_request: TrustRequest) -> None:
            loop.call_soon(self.model.trust_changed)

        unwatch_errors = app.settings.on_error(failed)
        unwatch_trust = app.settings.on_trust_request(asked)

        def unwatch() -> None:
            unwatch_errors()
            unwatch_trust()

        return unwatch

    async def _serial(self, action: Callable[[], Awaitable[T]]) -> T:
        async with self._lock:
            return await _unless_stopped(action)

    @property
    def _conversation(self):  # type: ignore[no-untyped-def]
        return self.app.harness.conversation(self.model.conversation_id)

    # -- the Controller protocol --

    def refusal(self, action: HostAction) -> str | None:
        """Never: this process holds the session, so everything acts on it."""
        return None

    async def submit(self, text: str, *, follow_up: bool = False) -> None:
        """Submit text: a prompt when idle, a steer when busy, or a follow-up if asked."""
        self._shell.refuse_while_running()  # a turn never interleaves with it

        async def submit() -> None:
            when_busy: WhenBusy = "follow_up" if follow_up else "steer"
            submission = await self._conversation.submit(Input(text, when_busy=when_busy))
            self.model.watched.add(submission.id)
            self._remember(text)
            if self.model.conversation_id == self.app.root.id:
                await self.app.remember_title(text)

        await self._serial(submit)

    async def abort(self) -> list[str]:
        """Abort the shown conversation's foreground work; return withdrawn input texts."""
        return await _unless_stopped(self._abort)

    async def _abort(self) -> list[str]:
        self._shell.stop()
        queued = [item for item in self.model.queue if item.mode != "write"]
        await self._conversation.abort()
        texts: list[str] = []
        for item in queued:
            handle = await self.app.harness.submission(item.submission_id)
            record = await handle.status() if handle is not None else None
            if record is not None and record.status == "unanswered" and record.reason == "aborted":
                texts.append(item.text)
        return texts

    async def run_shell(self, command: str, *, context: bool) -> None:
        """``!cmd`` (``!!cmd`` without ``context``) in the shown conversation (``_user_shell``)."""
        shown, harness = self.model.conversation_id, self.app.harness
        await _unless_stopped(lambda: self._shell.run(harness, shown, command, context=context))

    async def withdraw(self, submission_id: int) -> str | None:
        """Withdraw one queued item; its text for the editor (``None`` if placed)."""

        async def withdraw() -> str | None:
            item = next((q for q in self.model.queue if q.submission_id == submission_id), None)
            handle = await self.app.harness.submission(submission_id)
            if handle is None or await handle.abort() != "aborted":
                return None
            return item.text if item is not None else None

        return await self._serial(withdraw)

    async def load_older(self, count: int) -> int:
        """Page older blocks in."""
        return await self.model.load_older(count)

    async def compact(self, instructions: str | None = None) -> None:
        """Compact the shown conversation; a notice says how it ended (reference 5.3)."""
        task_id = await self._serial(lambda: self._conversation.compact(instructions))
        waiter = asyncio.ensure_future(self._notice_compaction(task_id))
        self._waiters.add(waiter)
        waiter.add_done_callback(self._waiters.discard)

    async def _notice_compaction(self, task_id: int) -> None:
        with contextlib.suppress(Exception):
            harness = self.app.harness
            record = await harness.wait_for_task(task_id)
            outcome = record.state.get("outcome") if isinstance(record.state, dict) else None
            outcome = outcome if isinstance(outcome, dict) else {}
            result = outcome.get("result")
            if isinstance(result, dict) and isinstance(result.get("submission_id"), int):
                # Not blocking a turn, the summary went through the inbox as a write:
                # placed at once when idle, else at the next turn boundary (or dropped).
                handle = await harness.submission(result["submission_id"])
                if handle is None:
                    return
                written = await handle.status()
                if written.status == "queued":
                    self.model.add_notice(*compaction_notice(outcome))
                    written = await handle.wait()
                outcome = written_outcome(written.status, written.reason)
            self.model.add_notice(*compaction_notice(outcome))

    async def cycle_thinking(self) -> str:
        """Move to the model's next thinking level."""

        async def cycle() -> str:
            model = (
                self.app.models.get(self.model.footer.model) if self.model.footer.model else None
            )
            if model is None:
                raise ValueError("No model is configured; select one with /model")
            levels = supported_thinking_levels(model)
            if levels == ["off"]:
                raise ValueError(f"{self.model.footer.model} has no thinking levels")
            current = self.model.footer.thinking_level
            index = levels.index(current) if current in levels else -1
            level = levels[(index + 1) % len(levels)]
            await self._conversation.configure(AgentChange(thinking_level=level))
            return level

        return await self._serial(cycle)

    async def cycle_permission_mode(self) -> str:
        """Commit the session's next permission mode (F4, issue 13); a notice names it.

        The session's mode wins over the settings' for the rest of the session; the
        order is ``MODES`` (plan, auto-edit, ask, auto).
        """
        current = (await self.app.harness.permission_policy()).mode
        mode = MODES[(MODES.index(current) + 1) % len(MODES)] if current in MODES else MODES[0]
        await self.app.harness.set_permission_mode(mode)
        self._session_mode = mode
        self.show_permission_mode()
        self.model.add_notice("info", f"Permission mode: {mode}")
        return mode

    async def permissions(self) -> list[str]:
        """The mode and rules in force, each with where it came from (``/permissions``)."""
        policy = await self.app.harness.permission_policy()
        lines = [f"mode: {policy.mode}"]
        for rule in policy.rules:
            lines.append(f"{rule.effect} {rule.text}  ({rule.source})")
        lines += [f"protected (always asks): {path}" for path in policy.protected]
        return [terminal_safe(line) for line in lines]

    async def reload_extensions(self) -> list[str]:
        """``/reload``: the extension files swapped in; one line per file that failed."""
        return [terminal_safe(line) for line in self.app.reload_extensions()]

    async def mcp_servers(self) -> list[str]:
        """Each MCP server, its state and its tools (``/mcp``)."""
        return [terminal_safe(line) for line in self.app.mcp_servers.status_lines()]

    async def clients(self) -> list[str]:
        """Who is attached to the session (``/clients``), this terminal first."""
        if self.presence is None:
            return ["this terminal (the session is not served to others)"]
        return self.presence()

    async def session_details(self) -> SessionDetails:
        """What ``/session`` lists, the shown conversation's figures from the footer."""
        found = await session_details(self.app, self.model.conversation_id)
        return found.with_footer(self.model.footer)

    async def session_name(self) -> str:
        """The session's committed name, or empty."""
        return await session_name(self.app)

    async def name_session(self, name: str) -> str:
        """Commit the session's name (``/name``), then mirror it for the picker."""
        return await self._serial(lambda: name_session(self.app, name))

    def models(self) -> list[ModelChoice]:
        """The models ``/model`` offers."""
        return [
            ModelChoice(
                ref=f"{m.provider}/{m.id}",
                name=m.name or m.id,
                provider=m.provider,
                context_window=m.context_window,
                reasoning=m.reasoning,
                configured=self.app.models.missing_key(m) is None,
                missing_key=self.app.models.missing_key(m),
            )
            for m in self.app.models.list()
        ]

    async def set_model(self, ref: str) -> None:
        """Use a model in the shown conversation (the thinking level is clamped to it).

        Raises:
            ActionRefused: A malformed or unknown model (the message says which
                providers or models exist), or its key is missing (the message names
                the variable to set, issue 12).
        """

        async def set_model() -> None:
            try:
                model = self.app.models.resolve(ref)
            except (LookupError, ValueError) as error:
                raise ActionRefused(str(error)) from None
            missing = self.app.models.missing_key(model)
            if missing is not None:
                raise ActionRefused(missing_key_hint(f"{model.provider}/{model.id}", missing))
            level = clamp_thinking_level(model, self.model.footer.thinking_level)  # type: ignore[arg-type]
            change = AgentChange(model=ModelRef(model.provider, model.id), thinking_level=level)
            await self._conversation.configure(change)

        await self._serial(set_model)

    async def conversations(self) -> list[ConversationInfo]:
        """The main conversation and the subagent conversations, newest first."""
        return await list_conversations(self.app, self.model.conversation_id)

    async def switch_conversation(self, conversation_id: int) -> None:
        """Show another conversation; the editor then talks to it."""
        await self._serial(lambda: show_conversation(self.app, self.model, conversation_id))

    async def fork(self, entry_id: int) -> str:
        """Fork before a user message, show the fork, and return the message's text."""

        async def fork() -> str:
            storage = self.app.harness.session.storage
            stored = await storage.entry(entry_id, self.model.conversation_id)
            if stored is None:
                raise ValueError(f"Entry {entry_id} is not in this conversation")
            text = entry_text(stored.entry)
            before = await storage.scan_entries(
                self.model.conversation_id, max_entry_id=entry_id - 1, order="desc", limit=1
            )
            if before.items:
                fork = await self._conversation.fork(before.items[0].entry.id)
            else:
                # Nothing precedes the message: a fresh conversation with the same agent.
                footer = self.model.footer
                agent = AgentChange(
                    cwd=footer.cwd,
                    model=_model_of(footer.model),
                    thinking_level=footer.thinking_level,  # type: ignore[arg-type]
                )
                fork = await self.app.harness.create_conversation(agent=agent)
            await show_conversation(self.app, self.model, fork.id)
            return text

        return await self._serial(fork)

    async def new_session(self) -> None:
        """Start a new session for the working directory."""
        await self._serial(lambda: self._switch_session(None))

    async def sessions(self) -> list[SessionInfo]:
        """The stored sessions of this directory, newest first."""
        # A thread: with a database, listing is a query (never on the screen's loop).
        return await asyncio.to_thread(session_infos, self.app.session_key)

    async def open_session(self, path: str) -> None:
        """Switch to another stored session."""
        await self._serial(lambda: self._switch_session(path))

    async def _switch_session(self, path: str | None) -> None:
        footer = self.model.footer
        model = f"{footer.model}:{footer.thinking_level}" if footer.model else None
        opened = await self.app.open_another(path, model=model)
        report = await recovery_report(opened) if path is not None else []
        await mirror_name(opened)
        await self.model.close()
        old, self.app = self.app, opened
        self._unwatch_settings()
        self._unwatch_settings = self._watch_settings(opened)
        await old.close()
        self.model.rebind(opened)
        await self.model.attach(await shown_conversation(opened))
        await self.read_permission_mode()
        self.model.show_recovery(report)
        opened.harness.resume()

    async def export(self, fmt: ExportFormat, path: str | None = None) -> str:
        """Write the shown conversation's transcript (a fork's, a subagent's); its full path.

        Raises:
            ActionRefused: The file cannot be opened for writing; nothing was written.
        """
        target, out = open_export_file(self.app.cwd, fmt, path)
        storage = self.app.harness.session.storage
        with out:
            await export_transcript(storage, fmt, out, conversation_id=self.model.conversation_id)
        return str(target)

    def custom_commands(self) -> list[CommandInfo]:
        """The custom slash commands of the project and the user (``files._commands``)."""
        return [
            CommandInfo(c.name, c.argument_hint, c.description, c.source)
            for c in discover_commands(self.app.cwd).commands
        ]

    async def run_custom_command(self, name: str, arguments: str) -> None:
        """Send a custom command's text (read now) as a typed message; notes become notices."""
        await self._send(expand_command(name, arguments, self.app.cwd))

    async def submit_line(self, text: str) -> None:
        """Submit a line given on the command line: a custom command runs, else a message."""
        expansion = expand_command_line(text, self.app.cwd)
        if expansion is None:
            await self.submit(text)
        else:
            await self._send(expansion)

    async def _send(self, expansion: Expansion) -> None:
        for note in expansion.notes:
            self.model.add_notice("info", note)
        await self.submit(expansion.text)

    def skills(self) -> list[SkillInfo]:
        """The skills the system prompt lists (none over SSH); a bad file is a notice."""
        if self.app.remote is not None:
            return []
        scan = discover_skills(self.app.cwd)
        for problem in scan.problems:
            self.model.add_notice("warning", problem)
        return [SkillInfo(s.name, s.description, str(s.path), s.source) for s in scan.skills]

    def complete_path(self, prefix: str) -> list[str]:
        """Paths for ``@prefix`` (at most 50), relative to the shown conversation's directory.

        See ``_editor_aids.complete_path``; none over SSH (the files are on
        another host: listing them per keystroke costs trips).
        """
        if self.app.remote is not None:
            return []
        root = self.model.working_directory
        if self._project_files is None or self._project_files.root != root:
            self._project_files = ProjectFiles(root)  # another session may work elsewhere
        return complete_path(root, prefix, self._project_files)

    def history(self) -> Sequence[str]:
        """Earlier prompts of this directory, oldest first."""
        return read_history(self.app.session_key)

    def _remember(self, text: str) -> None:
        remember(self.app.session_key, text)

    def refresh_settings(self) -> None:
        """Re-read the settings files if they changed (a malformed edit is a notice)."""
        with contextlib.suppress(SettingsError):  # reported by ``on_error`` (never first)
            self.app.settings.current()
        self.show_permission_mode()  # an edited ``permission_mode`` shows in the footer

    def show_permission_mode(self) -> None:
        """Put the mode in force in the footer: the session's (F4), else the settings'."""
        mode = self._session_mode
        if mode is None:
            with contextlib.suppress(SettingsError):
                mode = self.app.settings.harness().permissions.mode
        if mode is not None:
            self.model.set_permission_mode(mode)

    async def read_permission_mode(self) -> None:
        """Read the session's chosen mode (a continued session keeps its F4 choice)."""
        chosen = await self.app.harness.session.snapshot(PERMISSIONS_DOC) or {}
        mode = chosen.get("mode")
        self._session_mode = mode if isinstance(mode, str) else None
        self.show_permission_mode()

    async def answer_trust(self, question_id: str, trusted: bool) -> None:
        """Trust, or not, the project settings content the user was shown (issue 13)."""
        answer_trust(self.app, self.model, question_id, trusted)

    async def decide(self, call_id: str, choice: str, message: str | None = None) -> None:
        """Commit the user's decision on a call waiting for approval (issue 13).

        ``once`` runs the call; ``session`` adds its suggested rule for this session;
        ``project`` adds it to the project's ``.pidurable/settings.json`` too
        (written by pidurable, never by the model; the content pidurable wrote is
        trusted only when what it replaced was); ``deny`` refuses it, with
        ``message`` for the model. A call that no longer waits (decided elsewhere,
        aborted) is a notice, not an error.
        """
        waiting = self.model.approval
        rule = waiting.suggestion if waiting is not None and waiting.call_id == call_id else None
        try:
            await self.app.harness.decide(
                self.model.conversation_id,
                call_id,
                choice,  # type: ignore[arg-type]  # the harness rejects an unknown one
                message=message,
            )
        except DecisionRejected as error:
            self.model.add_notice("warning", f"Not decided: {error}")
            return
        if choice == "project" and rule is not None:
            try:
                self.app.settings.add_project_rule(rule)
            except (OSError, SettingsError) as error:
                self.model.add_notice(
                    "warning",
                    f"Allowed {rule} for this session; the project's settings could not be "
                    f"written ({error})",
                )
            else:
                self.model.add_notice("info", f"Allowed always in this project: {rule}")
        elif choice == "session" and rule is not None:
            self.model.add_notice("info", f"Allowed for this session: {rule}")

    async def stop_task(self, task_id: int) -> str:
        """Stop a live task (``/tasks stop N``, issue 13)."""
        return await stop_task(self.app.harness, task_id)

    async def background_command(self) -> str:
        """Ctrl+B: the running ``bash`` command of the shown conversation becomes a job."""
        return moved_notice(move_to_background(self.model.conversation_id))

    async def running_jobs(self) -> int:
        """The jobs leaving would end (those not left running at an earlier exit)."""
        return sum(not job.kept for job in await live_jobs(self.app.harness))

    def leave_jobs_running(self) -> None:
        """Leave the background jobs running at exit (the quit prompt's ``l``)."""
        self.app.leave_jobs_running = True

    async def close(self) -> None:
        """Close the screen model, the harness and the store; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        keep = False
        for step in self._before_close:
            try:
                await step()
            except KeepServing:
                keep = True
            except Exception:
                pass
        for waiter in list(self._waiters):
            waiter.cancel()
        await self.model.close()
        if not keep:
            await self.app.close()


async def _unless_stopped(action: Callable[[], Awaitable[T]]) -> T:
    """Run ``action``; a session its store failed under raises ``StoreStopped`` (issue 12)."""
    try:
        return await action()
    except SessionFailed as error:
        raise StoreStopped() from error


def settings_notice(error: SettingsError) -> str:
    """The notice for a settings edit that cannot be used (issue 12)."""
    return f"{error}; the settings from before stay in force until it is fixed"


def _model_of(ref: str) -> ModelRef | None:
    return ModelRef.parse(ref) if ref else None
