"""The permission gate of ``pi.tool`` and durable approvals (issue 13, DESIGN.md 7).

Every call passes ``gate`` after its arguments are validated and the
``before_tool`` chain ran, before its intent is committed. The engine
(``harness.permissions``) decides from the settings' ``permissions`` section,
the session's choices in ``pi.permissions`` (a mode set by the mode key, the
rules "allow always in this session" added) and what the tool declares
(``read_only``, ``access``):

- ``allow``: the call goes on to its intent and execution;
- ``deny``: a ``permission_denied`` result says why (the rule, or plan mode);
- ``ask`` with ``on_ask="refuse"`` (print and JSON modes): one commit holds the
  request, its refusal and a ``permission_required`` result saying how the user
  can allow it;
- ``ask`` with ``on_ask="wait"``: one commit moves the task to the phase
  ``approval {"arguments"}`` and puts the request in the call's slot of
  ``pi.live`` (``slot["approval"] = {"request": {...}}``) BEFORE any screen
  shows it. ``commit_decision`` (``Harness.decide``) writes the user's decision
  into the same slot (and a session rule into ``pi.permissions``) before the
  tool starts; the phase then commits its intent or the refusal.

A crash while waiting resumes the phase ``approval``: a committed decision is
acted on without asking again, a missing one is waited for (or refused, when
the run resumes headless). A call allowed once runs once: after the intent
commit the call is in ``execute``, which never asks again.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Literal

from pydantic import BaseModel

from pi_durable_tui.harness._runtime import HarnessRuntime
from pi_durable_tui.harness._services import HarnessServices
from pi_durable_tui.harness.extensions import Tool
from pi_durable_tui.harness.permissions import (
    Decision,
    PermissionCall,
    PermissionMode,
    PermissionPolicy,
    decide,
)
from pi_durable_tui.harness.state import LIVE_DOC, PERMISSIONS_DOC, ResolvedAgent, slot_of_task
from pi_durable_tui.kernel import Running, Tx
from pi_durable_tui.storage.json_ops import JsonObject

Choice = Literal["once", "session", "project", "deny"]
"""The user's answer: allow once, allow always (session / project), or deny."""
CHOICES: tuple[Choice, ...] = ("once", "session", "project", "deny")
"""Every ``Choice``."""
GateOutcome = Literal["run", "refused", "wait"]
"""What the gate did with a call."""


class DecisionRejected(ValueError):
    """A decision for a call that is not waiting for one (or a bad choice)."""


def permission_call(tool: Tool[Any], validated: BaseModel, cwd: str) -> PermissionCall:
    """What the engine needs of a call: its tool's declaration and main argument."""
    argument: str | None = None
    kind = None
    if tool.access is not None:
        kind = tool.access.kind
        try:
            argument = str(tool.access.argument(validated))
        except Exception:  # a broken declaration counts as no argument (asks)
            argument = None
    return PermissionCall(tool.name, tool.read_only, kind, argument, cwd)


async def session_policy(services: HarnessServices) -> PermissionPolicy:
    """The policy in force now: the settings plus the session's mode and rules."""
    chosen = await services.session.snapshot(PERMISSIONS_DOC) or {}
    mode = chosen.get("mode")
    return services.settings().permissions.policy(
        mode=mode if isinstance(mode, str) else None,  # type: ignore[arg-type]
        session_rules=[r for r in chosen.get("allow") or [] if isinstance(r, str)],
    )


def _request(call: PermissionCall, decision: Decision, mode: PermissionMode) -> JsonObject:
    request: JsonObject = {
        "tool": call.tool,
        "reason": decision.reason,
        "mode": mode,
        "protected": decision.protected,
    }
    if call.argument is not None:
        request["argument"] = call.argument
    if decision.suggestion is not None and not decision.protected:
        request["suggestion"] = decision.suggestion
    return request


def refusal_text(request: JsonObject, hint: str) -> str:
    """What the model reads when a call needing approval could not wait for it."""
    what = request.get("suggestion") or request.get("tool")
    text = (
        f"Not run: this call needs the user's approval ({request.get('reason')}), and this "
        f"run has no one to ask, so it was refused. It was {what}."
    )
    if hint:
        text += f" The user can allow it: {hint}."
    return text + " Do not try to change the permission settings yourself."


def denial_text(decision: JsonObject) -> str:
    """What the model reads when the user denied a call."""
    text = "Not run: the user denied this call."
    message = decision.get("message")
    if isinstance(message, str) and message.strip():
        text += f" The user said: {message.strip()}"
    return text


async def gate(
    runtime: HarnessRuntime,
    services: HarnessServices,
    agent: ResolvedAgent,
    tool: Tool[Any],
    arguments: dict[str, Any],
    validated: BaseModel,
) -> tuple[GateOutcome, str, str]:
    """Decide a call before its intent (see the module docstring).

    Returns:
        ``("run", "", "")``; ``("refused", code, text)`` for the caller to commit as
        the call's result; or ``("wait", "", "")`` once the request is committed.
    """
    policy = await session_policy(services)
    call = permission_call(tool, validated, agent.cwd or "/")
    decision = decide(call, policy)
    if decision.outcome == "allow":
        return "run", "", ""
    if decision.outcome == "deny":
        return "refused", "permission_denied", f"Not run: {decision.reason}."
    request = _request(call, decision, policy.mode)
    settings = services.settings().permissions
    conversation_id, task_id = runtime.conversation_id, runtime.task_id
    if settings.on_ask == "refuse":

        async def mark(tx: Tx) -> None:
            live = await tx.doc(LIVE_DOC, conversation_id)
            slot = slot_of_task(live, task_id)
            if slot is not None:
                slot["approval"] = {
                    "request": request,
                    "decision": {"choice": "deny", "by": "headless"},
                }

        await runtime.commit(mark)
        return "refused", "permission_required", refusal_text(request, settings.hint)

    async def wait(tx: Tx) -> Running:
        live = await tx.doc(LIVE_DOC, conversation_id)
        slot = slot_of_task(live, task_id)
        if slot is not None:
            slot["approval"] = {"request": request}
        return Running({"phase": "approval", "arguments": arguments})

    await runtime.commit(wait)
    return "wait", "", ""


async def await_decision(runtime: HarnessRuntime, services: HarnessServices) -> JsonObject:
    """Wait until the call's slot holds a committed decision, and return it.

    A run resumed headless (``on_ask="refuse"``) refuses a request still open.
    """
    task_id = runtime.task_id
    event = services.approvals.setdefault(task_id, asyncio.Event())
    try:
        while True:
            event.clear()
            live = await services.session.snapshot(LIVE_DOC, runtime.conversation_id) or {}
            approval = (slot_of_task(live, task_id) or {}).get("approval") or {}
            decision = approval.get("decision")
            if isinstance(decision, dict):
                return decision
            if services.settings().permissions.on_ask == "refuse":
                return {"choice": "deny", "by": "headless", "request": approval.get("request")}
            await event.wait()
    finally:
        with contextlib.suppress(KeyError):
            if services.approvals.get(task_id) is event:
                del services.approvals[task_id]


async def commit_decision(
    services: HarnessServices,
    conversation_id: int,
    call_id: str,
    choice: Choice,
    *,
    message: str | None = None,
    rule: str | None = None,
) -> None:
    """Commit the user's decision on a waiting call, then wake its task.

    ``session`` and ``project`` add ``rule`` (default: the request's suggestion)
    to the session's allow rules in the same commit; writing the project's file
    is the host's part, done before this call.

    Raises:
        DecisionRejected: The call is not waiting for a decision (already decided,
            ended, or unknown), or the choice is not one of ``CHOICES``.
    """
    if choice not in CHOICES:
        raise DecisionRejected(f"A decision is one of {', '.join(CHOICES)}, not {choice!r}")
    found: list[int] = []

    async def record(tx: Tx) -> None:
        live = await tx.doc(LIVE_DOC, conversation_id)
        slot = next((s for s in live.get("tools") or [] if s.get("call_id") == call_id), None)
        approval = (slot or {}).get("approval")
        if slot is None or not isinstance(approval, dict) or "decision" in approval:
            raise DecisionRejected(f"Tool call {call_id} is not waiting for a decision")
        decision: JsonObject = {"choice": choice}
        if message:
            decision["message"] = message
        if choice in ("session", "project"):
            added = rule or approval["request"].get("suggestion")
            if added:
                decision["rule"] = added
                chosen = await tx.doc(PERMISSIONS_DOC)
                rules = list(chosen.get("allow") or [])
                if added not in rules:
                    chosen["allow"] = [*rules, added]
        approval["decision"] = decision
        found.append(int(slot["task_id"]))

    await services.session.commit(record)
    event = services.approvals.get(found[0]) if found else None
    if event is not None:
        event.set()


async def set_session_mode(services: HarnessServices, mode: PermissionMode) -> None:
    """Commit the session's permission mode (the mode key)."""

    async def record(tx: Tx) -> None:
        chosen = await tx.doc(PERMISSIONS_DOC)
        chosen["mode"] = mode

    await services.session.commit(record)
