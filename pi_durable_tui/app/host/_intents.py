"""What a client's ``call`` does: each intent through the host's harness (issue 15).

Clients never open the store. An intent runs here, in the process that holds
it, exactly as the host's own screen would run it: a prompt, a steer or a
follow-up is ``Conversation.submit``; Esc is ``Conversation.abort`` (R57; the
withdrawn queued texts come back, for the client's editor), and it stops a shell
command the host's user runs there (``!cmd``); an approval
decision is ``Harness.decide`` (a call decided elsewhere first is refused with
the harness's words); ``older`` and ``history`` read a page of entries and
``conversations`` lists the session's conversations and ``session`` the
session's facts (reads, never writes); ``name_session`` commits ``/name``.
Its effect reaches every client, the caller included, only as committed state
through the commit frames: no client sees an optimistic echo.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from pi_durable_tui.ai import ModelRef, clamp_thinking_level, supported_thinking_levels
from pi_durable_tui.app._view import missing_key_hint
from pi_durable_tui.app.host._frames import history_page, older_page
from pi_durable_tui.app.screen import (
    list_conversations,
    name_session,
    session_details,
    session_name,
    stop_user_command,
)
from pi_durable_tui.harness import (
    AGENT_DOC,
    INBOX_DOC,
    AgentChange,
    DecisionRejected,
    Input,
    WhenBusy,
)

if TYPE_CHECKING:
    from pi_durable_tui.app.agent import AgentApp


class IntentRefused(Exception):
    """An intent the harness would not carry out; its message goes back to the client."""


async def perform(app: AgentApp, conversation_id: int, method: str, args: dict[str, Any]) -> Any:
    """Run one checked intent (``_wire.check_call``) on a conversation; returns its value.

    Raises:
        IntentRefused: The harness refused it (a decision already made, an
            unknown model), with words for the client.
    """
    harness = app.harness
    conversation = harness.conversation(conversation_id)
    if method == "submit":
        when_busy: WhenBusy = "follow_up" if args.get("follow_up") else "steer"
        submission = await conversation.submit(Input(args["text"], when_busy=when_busy))
        if conversation_id == app.root.id:
            await app.remember_title(args["text"])
        return {"submission_id": submission.id}
    if method == "abort":
        return await _abort(app, conversation_id)
    if method == "withdraw":
        handle = await harness.submission(args["submission_id"])
        return handle is not None and await handle.abort() == "aborted"
    if method == "decide":
        try:
            await harness.decide(
                conversation_id,
                args["call_id"],
                args["choice"],  # the harness rejects an unknown one
                message=args.get("message"),
            )
        except DecisionRejected as error:
            raise IntentRefused(f"Not decided: {error}") from None
        return None
    if method == "background_command":
        from pi_durable_tui.app.agent import moved_notice
        from pi_durable_tui.tools import move_to_background

        return moved_notice(move_to_background(conversation_id))
    if method == "stop_task":
        from pi_durable_tui.app.agent import stop_task

        try:
            return await stop_task(harness, int(args["task_id"]))
        except ValueError as error:
            raise IntentRefused(str(error)) from None
    if method == "compact":
        return {"task_id": await conversation.compact(args.get("instructions"))}
    if method in ("set_model", "cycle_thinking"):
        return await _configure(app, conversation_id, method, args)
    if method == "older":
        count = max(1, min(int(args["count"]), 500))
        return await older_page(harness.session, conversation_id, int(args["before"]), count)
    if method == "history":
        count = max(1, min(int(args["count"]), 500))
        return await history_page(harness.session, conversation_id, int(args["after"]), count)
    if method == "conversations":
        listed = await list_conversations(app, conversation_id)
        return [dataclasses.asdict(info) for info in listed]
    if method == "session":
        return dataclasses.asdict(await session_details(app, conversation_id))
    if method == "session_name":
        return await session_name(app)
    if method == "name_session":
        try:
            return await name_session(app, args["name"])
        except ValueError as error:
            raise IntentRefused(str(error)) from None
    raise IntentRefused(f"Unknown method {method!r}")


async def _abort(app: AgentApp, conversation_id: int) -> list[str]:
    """Abort the conversation's foreground work; the texts of the inputs it withdrew."""
    harness = app.harness
    inbox = await harness.session.snapshot(INBOX_DOC, conversation_id) or {}
    items = inbox.get("items") or []
    queued = [item for item in items if isinstance(item, dict) and item.get("mode") != "write"]
    stop_user_command(conversation_id)  # a ``!cmd`` the host's user runs stops too
    await harness.conversation(conversation_id).abort()
    texts: list[str] = []
    for item in queued:
        handle = await harness.submission(int(item["id"]))
        record = await handle.status() if handle is not None else None
        if record is not None and record.status == "unanswered" and record.reason == "aborted":
            content = item.get("content")
            texts.append(content if isinstance(content, str) else "")
    return texts


async def _configure(app: AgentApp, conversation_id: int, method: str, args: dict[str, Any]) -> Any:
    agent = await app.harness.session.snapshot(AGENT_DOC, conversation_id) or {}
    current = agent.get("model") if isinstance(agent.get("model"), dict) else None
    level = str(agent.get("thinking_level") or "off")
    conversation = app.harness.conversation(conversation_id)
    try:
        if method == "set_model":
            model = app.models.resolve(args["ref"])
        else:
            if current is None:
                raise IntentRefused("No model is configured; select one with /model")
            model = app.models.resolve(f"{current['provider']}/{current['model_id']}")
    except (LookupError, ValueError) as error:
        raise IntentRefused(str(error)) from None
    if method == "set_model":
        missing = app.models.missing_key(model)
        if missing is not None:
            raise IntentRefused(missing_key_hint(f"{model.provider}/{model.id}", missing))
        clamped = clamp_thinking_level(model, level)  # type: ignore[arg-type]
        await conversation.configure(
            AgentChange(model=ModelRef(model.provider, model.id), thinking_level=clamped)
        )
        return None
    levels = supported_thinking_levels(model)
    if levels == ["off"]:
        raise IntentRefused(f"{model.provider}/{model.id} has no thinking levels")
    index = levels.index(level) if level in levels else -1
    chosen = levels[(index + 1) % len(levels)]
    await conversation.configure(AgentChange(thinking_level=chosen))
    return chosen
