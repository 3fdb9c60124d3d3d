"""``AcpAgent``: the Agent Client Protocol on the screen's model and controller (issue 15).

An editor is one more client of a session, on the path the terminal takes:
``session/new`` and ``session/load`` open the session as ``pidurable`` does
(``AgentApp.open``, then ``start_hosted_screen``, so a terminal can attach to
the same session with ``pidurable -c``); a store open in a terminal already is
attached to instead (``attach_if_hosted``). Every action goes through the
``Controller``, every update comes from the ``ScreenModel`` (``_updates``):

- ``session/prompt``: ``Controller.submit``; the turn streams as updates until
  its submission settles and the conversation is idle; ``stopReason`` is
  ``cancelled`` after ``session/cancel``, ``refusal`` when the turn was left
  unanswered (the model failed for good: the agent will not go on with it),
  ``max_tokens`` when its last answer was cut at the model's max tokens
  (``length``), else ``end_turn``;
- ``session/load``: the whole stored history replayed as updates, a page at
  a time (``_history``), then the answer;
- ``session/cancel``: ``Controller.abort`` (Esc);
- a call waiting for approval (``ScreenModel.approval``) is sent to the client
  as ``session/request_permission``; its answer is ``Controller.decide`` (allow
  once, allow for the session with the suggested rule, reject).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pi_durable_tui.app._ports import Controller
from pi_durable_tui.app._view import ApprovalQuestion
from pi_durable_tui.app.acp._history import page_reader, replay_history
from pi_durable_tui.app.acp._rpc import INVALID_PARAMS, METHOD_NOT_FOUND, Connection, RpcError
from pi_durable_tui.app.acp._updates import Transcript
from pi_durable_tui.app.agent import AgentApp, AppOptions, PermissionChoices
from pi_durable_tui.app.files import SessionUnavailable
from pi_durable_tui.app.host import start_hosted_screen
from pi_durable_tui.app.remote import attach_if_hosted
from pi_durable_tui.app.screen import AgentController, LiveScreenModel
from pi_durable_tui.harness import PermissionMode

PROTOCOL_VERSION = 1


@dataclass(frozen=True, slots=True)
class AgentOptions:
    """What ``pidurable acp`` was started with, for every session it opens."""

    model: str | None = None
    faux_script: str | None = None
    permission_mode: PermissionMode | None = None


@dataclass(eq=False)
class _Session:
    model: LiveScreenModel
    controller: Controller
    transcript: Transcript
    cancelled: bool = False
    asked: set[str] = field(default_factory=set)
    asking: set[asyncio.Future[None]] = field(default_factory=set)


class AcpAgent:
    """The ACP methods of one connection.

    Args:
        options: How sessions are opened.
        redact: The process's redactor, for sessions this process does not hold.
    """

    def __init__(self, options: AgentOptions, redact: Callable[[str], str]) -> None:
        self.options = options
        self._redact = redact
        self._sessions: dict[str, _Session] = {}
        self.connection: Connection | None = None

    async def handle(self, method: str, params: dict[str, Any]) -> Any:
        """Run one request or notification (``_rpc.Handler``)."""
        if method == "initialize":
            return {
                "protocolVersion": PROTOCOL_VERSION,
                "agentCapabilities": {
                    "loadSession": True,
                    "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
                },
                "authMethods": [],
                "agentInfo": {"name": "pidurable", "title": "pidurable"},
            }
        if method == "session/new":
            return await self._open(_cwd(params), None)
        if method == "session/load":
            await self._open(_cwd(params), _string(params, "sessionId"))
            return None
        if method == "session/prompt":
            return await self._prompt(self._session(params), _prompt_text(params))
        if method == "session/cancel":
            session = self._session(params)
            session.cancelled = True
            await session.controller.abort()
            return None
        if method == "authenticate":
            return {}
        raise RpcError(METHOD_NOT_FOUND, f"unknown method {method!r}")

    def _session(self, params: dict[str, Any]) -> _Session:
        ident = _string(params, "sessionId")
        found = self._sessions.get(ident)
        if found is None:
            raise RpcError(INVALID_PARAMS, f"no open session {ident!r}; send session/new or load")
        return found

    async def _open(self, cwd: str, store: str | None) -> dict[str, str]:
        if store is not None and store in self._sessions:
            session = self._sessions[store]
            await self._replay(store, session)
            return {"sessionId": store}
        options = AppOptions(
            cwd=cwd,
            session=store,
            model=self.options.model if store is None else None,
            faux_script=self.options.faux_script,
            permissions=PermissionChoices(mode=self.options.permission_mode),
        )
        redact = self._redact
        controller: Controller
        try:
            app = await AgentApp.open(options)
        except SessionUnavailable as error:
            attached = await attach_if_hosted(error)
            if attached is None:
                raise RpcError(INVALID_PARAMS, str(error)) from None
            model, controller = attached
            ident = str(error.store)
        except Exception as error:
            raise RpcError(INVALID_PARAMS, f"cannot open the session: {error}") from None
        else:
            model, controller = await start_hosted_screen(app, reopened=store is not None)
            ident, redact = app.session_id, app.harness.redactor.text
        transcript = Transcript(model, redact)
        session = _Session(model, controller, transcript)
        self._sessions[ident] = session
        model.subscribe(lambda change: self._ask_pending(ident, session))
        if store is not None:
            await self._replay(ident, session)
        else:
            transcript.mark_seen()
        return {"sessionId": ident}

    async def _replay(self, ident: str, session: _Session) -> None:
        """The whole history, a page at a time, before the load is answered."""
        reader = page_reader(session.controller, session.model.conversation_id)

        def send(updates: list[dict[str, Any]]) -> None:
            self._send(ident, *updates)

        await replay_history(reader, send, session.transcript)

    def _send(self, ident: str, *updates: dict[str, Any]) -> None:
        if self.connection is not None:
            for update in updates:
                self.connection.notify("session/update", {"sessionId": ident, "update": update})

    async def _prompt(self, session: _Session, text: str) -> dict[str, str]:
        ident = next(k for k, v in self._sessions.items() if v is session)
        model = session.model
        changed = asyncio.Event()
        unsubscribe = model.subscribe(lambda change: changed.set())
        session.cancelled = False
        before = set(model.watched)
        try:
            await session.controller.submit(text)
            mine = model.watched - before
            while mine & model.watched or model.busy:
                await changed.wait()
                changed.clear()
                self._send(ident, *session.transcript.changes())
                plan = session.transcript.plan() if model.busy else None
                if plan is not None:
                    self._send(ident, plan)
            self._send(ident, *session.transcript.changes())
        finally:
            unsubscribe()
        if session.cancelled:
            return {"stopReason": "cancelled"}
        if await _unanswered(session.controller, mine):
            return {"stopReason": "refusal"}
        if session.transcript.stop_reason == "length":
            return {"stopReason": "max_tokens"}
        return {"stopReason": "end_turn"}

    def _ask_pending(self, ident: str, session: _Session) -> None:
        question = session.model.approval
        if question is None or question.call_id in session.asked or self.connection is None:
            return
        session.asked.add(question.call_id)
        task = asyncio.ensure_future(self._ask(ident, session, question))
        session.asking.add(task)
        task.add_done_callback(session.asking.discard)

    async def _ask(self, ident: str, session: _Session, question: ApprovalQuestion) -> None:
        assert self.connection is not None
        self._send(ident, *session.transcript.changes())  # the tool call first
        options = [{"optionId": "once", "name": "Allow once", "kind": "allow_once"}]
        if question.suggestion:
            name = f"Allow {question.suggestion} for this session"
            options.append({"optionId": "session", "name": name, "kind": "allow_always"})
        options.append({"optionId": "deny", "name": "Reject", "kind": "reject_once"})
        params = {
            "sessionId": ident,
            "toolCall": {
                "toolCallId": question.call_id,
                "title": session.transcript.redact(f"{question.tool}: {question.argument}"),
                "status": "pending",
            },
            "options": options,
        }
        with contextlib.suppress(RpcError):
            answer = await self.connection.request("session/request_permission", params)
            outcome = answer.get("outcome") if isinstance(answer, dict) else None
            if isinstance(outcome, dict) and outcome.get("outcome") == "selected":
                choice = outcome.get("optionId")
                if choice in ("once", "session", "deny"):
                    await session.controller.decide(question.call_id, str(choice))

    async def close(self) -> None:
        """Close every session (each says ``bye`` to terminals attached to it)."""
        for session in list(self._sessions.values()):
            for task in list(session.asking):
                task.cancel()
            with contextlib.suppress(Exception):
                await session.controller.close()
        self._sessions.clear()


async def _unanswered(controller: Controller, submissions: set[int]) -> bool:
    """Whether the turn was left without an answer (a model that failed for good)."""
    if not isinstance(controller, AgentController):
        return False  # an attached session: the host's screen says why
    for submission_id in submissions:
        handle = await controller.app.harness.submission(submission_id)
        record = await handle.status() if handle is not None else None
        if record is not None and record.status == "unanswered":
            return True
    return False


def _string(params: dict[str, Any], name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str) or not value:
        raise RpcError(INVALID_PARAMS, f"{name} must be a non-empty string")
    return value


def _cwd(params: dict[str, Any]) -> str:
    cwd = _string(params, "cwd")
    if not os.path.isabs(cwd) or not os.path.isdir(cwd):
        raise RpcError(INVALID_PARAMS, f"cwd must be an absolute path to a directory: {cwd!r}")
    return cwd


def _prompt_text(params: dict[str, Any]) -> str:
    blocks = params.get("prompt")
    if not isinstance(blocks, list):
        raise RpcError(INVALID_PARAMS, "prompt must be a list of content blocks")
    parts: list[str] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "resource_link":
            parts.append(f"@{block.get('uri', '')}")
        elif block.get("type") == "resource":
            resource = block.get("resource") or {}
            parts.append(str(resource.get("text") or f"@{resource.get('uri', '')}"))
    text = "\n".join(p for p in parts if p)
    if not text.strip():
        raise RpcError(INVALID_PARAMS, "prompt has no text; send a text content block")
    return text
