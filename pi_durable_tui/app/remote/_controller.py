"""``RemoteController``: the screen's actions on a session hosted elsewhere (issue 15).

The same ``Controller`` protocol as ``AgentController``, so the TUI calls one
interface whether it hosts the session or is attached. Every change is a
``call`` the host runs through its own harness (``app.host._intents``): a
prompt, a steer, a follow-up, Esc, withdrawing a queued item, an approval
decision, ``/compact``, ``/model``, Shift+Tab, ``/name``; ``/session`` asks the
host for the session's facts. Its effect comes back to this
screen, like to every other, only as committed state.

What acts on the host's process rather than on the shared session (``/fork``,
``/new``, ``/resume``, ``/export``, a permission-mode change: ``HostAction``)
is refused by ``refusal``, which the screen asks before it starts one: one line
saying why and what to do (run it in the hosting terminal, or take over). The
other things that need the host's store or files (listing permission rules,
trusting a project's settings) are refused when
called, in one sentence naming the terminal that can do them; listing things is
empty rather than wrong.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence

from pi_durable_tui.app._ports import ActionRefused, ExportFormat, HostAction
from pi_durable_tui.app._view import (
    CommandInfo,
    ConversationInfo,
    ModelChoice,
    SessionDetails,
    SessionInfo,
    SkillInfo,
)
from pi_durable_tui.app.client import HostGone, HostRefused
from pi_durable_tui.app.host import describe_clients
from pi_durable_tui.app.remote._feed import RemoteFeed
from pi_durable_tui.app.screen import LiveScreenModel

ONLY_THE_HOST = "the terminal that hosts this session"


TAKE_OVER = "leave here (Ctrl+D) and take over with `pidurable --continue`"

GONE = "the session's host is gone (see the notice); ctrl+c twice quits"
"""Why an action fails once the host is gone, after ``<action> failed: ``."""

_ACTIONS: dict[HostAction, str] = {
    "fork": "/fork",
    "new": "/new",
    "resume": "/resume",
    "export": "/export",
    "permission_mode": "Changing the permission mode (F4)",
    "shell": "A shell command (!cmd)",
}


def _refused(what: str) -> ValueError:
    return ValueError(f"{what} is done in {ONLY_THE_HOST} (this one is attached to it)")


def host_action_refusal(action: HostAction, clients: Sequence[dict[str, object]], pid: int) -> str:
    """The line an attached screen says for ``action``: why, and what to do instead.

    Args:
        action: What was asked.
        clients: Who is attached, as the host last said (its own terminal is ``host``).
        pid: The host's process id.
    """
    what = _ACTIONS[action]
    why = f"{what} acts on the host's process (pid {pid}), not on this shared session"
    if any(client.get("host") for client in clients):
        return f"{why}: run it in the hosting terminal, or quit that one, {TAKE_OVER}"
    # ``pidurable serve``, or a hosting terminal that quit and keeps serving.
    return f"{why}: stop the host (kill {pid}), {TAKE_OVER}"


class RemoteController:
    """The ``Controller`` of an attached screen.

    Args:
        feed: The link to the host.
        model: The screen model following it.
    """

    def __init__(self, feed: RemoteFeed, model: LiveScreenModel) -> None:
        self.feed = feed
        self.model = model
        self._lock = asyncio.Lock()
        self._closed = False

    def refusal(self, action: HostAction) -> str | None:
        """Always a line: every ``HostAction`` acts on the host's process (module docstring)."""
        return host_action_refusal(action, self.feed.clients, self.feed.host_pid)

    def _refuse(self, action: HostAction) -> ValueError:
        return ValueError(self.refusal(action))

    async def _call(self, method: str, **args: object) -> object:
        try:
            return await self.feed.link.call(method, **args)
        except HostRefused as error:  # the host's words for what to fix
            raise ActionRefused(str(error)) from None
        except HostGone:
            # The notice says what happened and what to do (``_attach.host_gone``).
            raise ValueError(GONE) from None

    async def submit(self, text: str, *, follow_up: bool = False) -> None:
        """A prompt, a steer, or a follow-up, sent to the host."""
        async with self._lock:
            found = await self._call("submit", text=text, follow_up=follow_up)
        if isinstance(found, dict) and isinstance(found.get("submission_id"), int):
            self.model.watched.add(found["submission_id"])

    async def submit_line(self, line: str) -> None:
        """A typed line (custom commands expand on the host's side: sent as typed)."""
        await self.submit(line)

    async def run_shell(self, command: str, *, context: bool) -> None:
        """Refused (``refusal``): the command would run on the host's machine."""
        raise ActionRefused(self.refusal("shell"))

    async def abort(self) -> list[str]:
        """Esc: the host aborts the foreground work for every client."""
        texts = await self._call("abort")
        return [str(t) for t in texts] if isinstance(texts, list) else []

    async def withdraw(self, submission_id: int) -> str | None:
        """Withdraw one queued item."""
        item = next((q for q in self.model.queue if q.submission_id == submission_id), None)
        withdrawn = await self._call("withdraw", submission_id=submission_id)
        return item.text if withdrawn and item is not None else None

    async def load_older(self, count: int) -> int:
        """Page older blocks in from the host."""
        return await self.model.load_older(count)

    async def compact(self, instructions: str | None = None) -> None:
        """``/compact`` on the host."""
        await self._call("compact", instructions=instructions)

    async def cycle_thinking(self) -> str:
        """Shift+Tab on the host."""
        return str(await self._call("cycle_thinking"))

    async def cycle_permission_mode(self) -> str:
        """Refused (``refusal``): permission modes stay with the host's user settings."""
        raise self._refuse("permission_mode")

    async def permissions(self) -> list[str]:
        """Permission rules are read where the store is held."""
        raise _refused("Listing the permission rules")

    async def reload_extensions(self) -> list[str]:
        """Extension files are imported where the store is held."""
        raise _refused("Reloading the extension files")

    async def mcp_servers(self) -> list[str]:
        """MCP servers run where the store is held."""
        raise _refused("Listing the MCP servers")

    async def clients(self) -> list[str]:
        """Who is attached, as the host last said."""
        return describe_clients(self.feed.clients, self.feed.client_id)

    async def session_details(self) -> SessionDetails:
        """The host's facts of the session, with this screen's footer figures."""
        found = await self._call("session")
        if not isinstance(found, dict):
            raise ValueError(f"The host answered /session with {type(found).__name__}")
        known = {f.name for f in dataclasses.fields(SessionDetails)}
        details = SessionDetails(**{k: v for k, v in found.items() if k in known})
        return details.with_footer(self.model.footer)

    async def session_name(self) -> str:
        """The name the host's store holds."""
        return str(await self._call("session_name") or "")

    async def name_session(self, name: str) -> str:
        """``/name`` on the host: committed in its store, mirrored beside it."""
        return str(await self._call("name_session", name=name))

    def models(self) -> list[ModelChoice]:
        """The host knows its providers; ``/model provider/id`` still works."""
        return []

    async def set_model(self, ref: str) -> None:
        """``/model`` on the host."""
        await self._call("set_model", ref=ref)

    async def conversations(self) -> list[ConversationInfo]:
        """The session's conversations, as the host lists them (``/agents``)."""
        listed = await self._call("conversations")
        return [ConversationInfo(**info) for info in listed] if isinstance(listed, list) else []

    async def switch_conversation(self, conversation_id: int) -> None:
        """Follow another conversation: the host sends its snapshot, then its commits."""
        async with self._lock:
            await self.model.attach(conversation_id)

    async def fork(self, entry_id: int) -> str:
        """Refused (``refusal``)."""
        raise self._refuse("fork")

    async def new_session(self) -> None:
        """Refused (``refusal``)."""
        raise self._refuse("new")

    async def sessions(self) -> list[SessionInfo]:
        """Nothing to pick while attached."""
        return []

    async def open_session(self, path: str) -> None:
        """Refused (``refusal``)."""
        raise self._refuse("resume")

    async def export(self, fmt: ExportFormat, path: str | None = None) -> str:
        """Refused (``refusal``)."""
        raise self._refuse("export")

    def custom_commands(self) -> list[CommandInfo]:
        """Custom commands are the host's files."""
        return []

    async def run_custom_command(self, name: str, arguments: str) -> None:
        """Sent as typed; the host's harness sees the text."""
        await self.submit(f"/{name} {arguments}".rstrip())

    def skills(self) -> list[SkillInfo]:
        """The host's prompt lists them."""
        return []

    def complete_path(self, prefix: str) -> list[str]:
        """No completion of the host's files from here."""
        return []

    def history(self) -> Sequence[str]:
        """Nothing remembered yet in an attached screen."""
        return ()

    def refresh_settings(self) -> None:
        """Settings are the host's."""

    async def answer_trust(self, question_id: str, trusted: bool) -> None:
        """Never asked here (``trust_question`` is always ``None``)."""

    async def decide(self, call_id: str, choice: str, message: str | None = None) -> None:
        """An approval decision, made on the host; decided elsewhere first is a notice."""
        try:
            await self.feed.link.call("decide", call_id=call_id, choice=choice, message=message)
        except (HostRefused, HostGone) as error:
            self.model.add_notice("warning", str(error))

    async def stop_task(self, task_id: int) -> str:
        """The host stops the task (``/tasks stop N``)."""
        return str(await self._call("stop_task", task_id=task_id))

    async def background_command(self) -> str:
        """The host moves its running command to the background."""
        return str(await self._call("background_command"))

    async def running_jobs(self) -> int:
        """0: a client's exit ends nothing; the host's own exit decides the jobs."""
        return 0

    def leave_jobs_running(self) -> None:
        """Nothing to leave: the jobs are the host's."""

    async def close(self) -> None:
        """Leave the host (it keeps serving the others); safe to call twice."""
        if self._closed:
            return
        self._closed = True
        await self.model.close()
        await self.feed.close()
