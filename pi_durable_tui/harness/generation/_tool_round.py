"""Tool rounds of the generation task: start, continuation, settlement (R89, R90, R91).

``start_round`` (R89) is one commit that appends the tool-calling assistant entry
and gives each call a slot in ``pi.live.tools``: a call to a tool that was not
offered (by the committed context through ``cutoff``) gets a ``tool_unavailable``
result at once and a ``done`` slot (a deferred tool counts as offered: a call by
its full name works whether or not its schema was sent, issue 16); the others get
``pi.tool`` tasks owned by the generation. A sequential round
(``settings.tool_execution`` or any called tool's ``execution_mode``) starts only
the first task. The generation then waits on its
tool tasks (``all_settled``, phase ``tools``).

``tools_phase`` (R90) starts the next call of a sequential round, or settles the
round: the ``after_tools`` observers get the assistant entry and the result
entries (``EntryMessage``: entry ID and message, results in call order), then one
commit: ``add_tools`` controls extend the agent's tool filter;
``terminate`` on every call, or a ``handoff`` (the last in call order wins) ends
the run with the tool-calling answer (a handoff appends a ``pi.reset`` first);
otherwise the ``post_tools`` boundary places steers and a successor generation
takes over the run. When the boundary places nothing, the settlement also does the
successor's preparation (R83, ``_preparation``): the successor is created at
``request`` with the system entries appended, so its own ``prepare`` commit is
not needed.

A round in three commits (issue 14): when the round starts, the generation offers
its settlement (``runtime.offer_continuation``, the kernel's ``Continuation``); the
tool task whose result is the round's last builds it (``settle_with_last_result``:
the successor's preparation, outside the line) and the result commit carries it.
Rounds with ``after_tools`` observers, controls, or a sequential call to start
settle through ``tools_phase`` as above.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pi_durable_tui.harness._runtime import HarnessRuntime
from pi_durable_tui.harness._services import HarnessServices
from pi_durable_tui.harness.context import ContextView
from pi_durable_tui.harness.conversations import answer, run_boundary, settle, start_run
from pi_durable_tui.harness.extensions import Diagnostic, EntryMessage, call_hook
from pi_durable_tui.harness.generation._preparation import (
    FIRST_CHECKPOINT,
    Preparation,
    plan_request,
)
from pi_durable_tui.harness.state import (
    AGENT_DOC,
    LIVE_DOC,
    RESET,
    add_model_usage,
    append_assistant,
    append_tool_result,
    deferred_names,
    end_run,
    message_of,
    run_inputs,
    tool_result_message,
)
from pi_durable_tui.kernel import Completed, Continuation, TaskOwned, Tx, Waiting
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.records import TaskRecord


def _calls(message: JsonObject) -> list[JsonObject]:
    return [
        block
        for block in message.get("content") or []
        if isinstance(block, dict) and block.get("type") == "tool_call"
    ]


def _unavailable(call: JsonObject, now: float) -> tuple[JsonObject, list[Diagnostic]]:
    text = f"Tool {call['name']} is not available"
    diagnostics = [Diagnostic("error", text, "tool_unavailable")]
    message = tool_result_message(
        call_id=call["id"],
        tool_name=call["name"],
        content=[],
        diagnostics=diagnostics,
        is_error=True,
        timestamp_ms=now,
    )
    return message, diagnostics


async def start_round(
    runtime: HarnessRuntime,
    services: HarnessServices,
    checkpoint: JsonObject,
    view: ContextView,
    stored: JsonObject,
) -> None:
    """Append the tool-calling answer and start the round's tool tasks (R89)."""
    agent = await runtime.agent()
    offered = {spec.get("name") for spec in view.prompt.tool_specs}
    offered |= deferred_names(agent.tools)  # called by full name without a schema (issue 16)
    calls = _calls(stored)
    sequential = services.settings().tool_execution == "sequential" or any(
        (tool := agent.tool(call["name"])) is not None
        and call["name"] in offered
        and tool.execution_mode == "sequential"
        for call in calls
    )
    conversation_id = runtime.conversation_id
    generation_id = runtime.task_id
    tool_task = services.task_definition("pi.tool")
    now = runtime.now()

    async def begin(tx: Tx) -> Waiting:
        entry = append_assistant(tx, conversation_id, stored)
        await add_model_usage(tx, conversation_id, stored)
        slots: list[JsonObject] = []
        started: list[int] = []
        pending: list[str] = []
        for call in calls:
            slot: JsonObject = {"call_id": call["id"], "name": call["name"], "status": "pending"}
            if call["name"] not in offered:
                message, diagnostics = _unavailable(call, now)
                result = append_tool_result(tx, conversation_id, message, diagnostics)
                slot.update(status="done", entry=result.id)
            elif sequential and (started or pending):
                pending.append(call["id"])
            else:
                task = tx.create_task(
                    tool_task,
                    {"assistant": entry.id, "call_id": call["id"]},
                    ownership=TaskOwned(generation_id),
                )
                slot["task_id"] = task.id
                started.append(task.id)
            slots.append(slot)
        live = await tx.doc(LIVE_DOC, conversation_id)
        live.pop("generation", None)
        live["tools"] = slots
        return Waiting(
            on=started,
            checkpoint={
                "phase": "tools",
                "assistant": entry.id,
                "tools": started,
                "pending": pending,
            },
        )

    # Offered before the commit: a result that lands before this coroutine resumes
    # still finds it (``settle_with_last_result``).
    runtime.offer_continuation(settle_with_last_result)
    await runtime.commit(begin)


async def tools_phase(task: TaskRecord, runtime: HarnessRuntime, services: HarnessServices) -> None:
    """Continue a sequential round, or settle the round (R90)."""
    checkpoint = dict(task.state.get("checkpoint") or {})
    pending: list[str] = list(checkpoint.get("pending") or [])
    if pending:
        await _next_sequential(runtime, services, checkpoint, pending)
        return
    conversation_id = runtime.conversation_id
    tool_ids: list[int] = list(checkpoint.get("tools") or [])
    outcomes = dict(zip(tool_ids, await runtime.outcomes(tool_ids), strict=True))
    live = await services.session.snapshot(LIVE_DOC, conversation_id) or {}
    slots: list[JsonObject] = list(live.get("tools") or [])
    assistant_id = int(checkpoint["assistant"])
    stored = await services.entry(assistant_id)
    message = message_of(stored.entry) if stored is not None else None
    assistant = EntryMessage(assistant_id, message) if message is not None else None
    results: list[EntryMessage] = []
    for slot in slots:
        entry_id = slot.get("entry")
        if entry_id is not None:
            found = await services.entry(int(entry_id))
            message = message_of(found.entry) if found is not None else None
            if message is not None:
                results.append(EntryMessage(int(entry_id), message))
    agent = await runtime.agent()
    for hook in agent.hooks("pi.generation", "after_tools"):
        await call_hook(
            hook, assistant, results, runtime, point="after_tools", report=services.report
        )
    controls = [_control(slot, outcomes) for slot in slots]
    add_tools = [name for control in controls for name in control.get("add_tools", [])]
    terminate = bool(slots) and all(control.get("terminate") for control in controls)
    handoffs = [c["handoff"] for c in controls if isinstance(c.get("handoff"), str)]
    # The successor's preparation, planned now so the settlement creates it at
    # ``request`` (issue 14). REMINDER: used only when the boundary places nothing
    # (no entry after the results it judged) and no tool control changes the
    # agent; otherwise the successor prepares itself. Losing it in a crash loses
    # nothing: recovery settles the round again from its ``tools`` checkpoint.
    plan = None
    if not (terminate or handoffs or add_tools):
        planned = await plan_request(runtime, services, dict(FIRST_CHECKPOINT))
        plan = planned if isinstance(planned, Preparation) else None

    async def settle_round(tx: Tx) -> Completed:
        if add_tools:
            await _add_tools(tx, conversation_id, add_tools)
        if terminate or handoffs:
            head = None
            if handoffs:
                user = {"role": "user", "content": handoffs[-1], "timestamp": int(runtime.now())}
                head = tx.append(conversation_id, RESET, model=[user], head="self").id
            await answer(tx, services, conversation_id, assistant_id, head=head)
            return Completed({"entry_id": assistant_id})
        return await _hand_over(tx, services, conversation_id, assistant_id, plan)

    await runtime.commit(settle_round)


async def _hand_over(
    tx: Tx,
    services: HarnessServices,
    conversation_id: int,
    assistant_id: int,
    plan: Preparation | None,
    tail: int | None = None,
) -> Completed:
    """Place the ``post_tools`` boundary and start the successor (R64, R90, R83).

    The successor starts at ``request`` with ``plan`` applied when the boundary
    placed nothing (the context is the one the plan judged), else at ``prepare``.
    """
    live = await tx.doc(LIVE_DOC, conversation_id)
    live.pop("tools", None)
    inputs = run_inputs(live)
    boundary = await run_boundary(tx, services, conversation_id, "post_tools")
    if boundary.reset:
        await settle(tx, inputs, "unanswered", reason="reset")
        if boundary.user_inputs:
            start_run(tx, services, conversation_id, live, boundary.user_inputs)
        else:
            end_run(live)
    else:
        request = await plan.apply(tx, tail) if plan is not None and not boundary.records else None
        start_run(
            tx, services, conversation_id, live, inputs + boundary.user_inputs, request=request
        )
    return Completed({"entry_id": assistant_id})


async def settle_with_last_result(
    waiter: TaskRecord, runtime: HarnessRuntime, services: HarnessServices, note: JsonObject
) -> Continuation | None:
    """The round's settlement, built by the tool task whose result ends the round (issue 14).

    The generation offers this when it starts waiting (``start_round``); the tool
    task whose result is the round's last calls it before its result commit
    (``runtime.continuation``), so the result, the settlement and the successor's
    start at ``request`` are one commit. ``note`` is ``{"message": <the result
    message>, "control": <its control or None>}``. It declines (the generation
    settles in a commit of its own, ``tools_phase``) when the round still has a
    sequential call to start, any call has a control, or ``after_tools`` observers
    must see the committed results first (R90).

    # REMINDER: everything that runs extension code or reads happens here, outside
    # the line; the step only stages writes. The result commit stays atomic: a
    # crash before it leaves the round as today (R95), after it nothing is lost.
    """
    checkpoint = dict(waiter.state.get("checkpoint") or {})
    if checkpoint.get("phase") != "tools" or checkpoint.get("pending") or note.get("control"):
        return None
    agent = await runtime.agent()
    if agent.hooks("pi.generation", "after_tools"):
        return None
    siblings = [int(i) for i in checkpoint.get("tools") or [] if int(i) != runtime.task_id]
    message = note.get("message")
    planned = await plan_request(
        runtime, services, dict(FIRST_CHECKPOINT), [message] if isinstance(message, dict) else []
    )
    if not isinstance(planned, Preparation):
        return None
    conversation_id = waiter.conversation_id
    assistant_id = int(checkpoint["assistant"])

    async def step(tx: Tx) -> Completed | None:
        # The siblings have ended by now (the kernel checked): a control among
        # their outcomes leaves the settlement to ``tools_phase`` (R90).
        for sibling in siblings:
            record = await services.session.read_task(sibling)
            outcome = record.state.get("outcome") if record is not None else None
            if not isinstance(outcome, dict) or _control({"task_id": sibling}, {sibling: outcome}):
                return None
        live = await tx.doc(LIVE_DOC, conversation_id)
        entries = [int(s["entry"]) for s in live.get("tools") or [] if s.get("entry") is not None]
        tail = max(entries, default=None)
        return await _hand_over(tx, services, conversation_id, assistant_id, planned, tail)

    return Continuation(waiter.id, services.task_definition("pi.generation"), step)


def _control(slot: JsonObject, outcomes: dict[int, JsonObject]) -> JsonObject:
    """A call's control; calls answered without a task never terminate (R90)."""
    task_id = slot.get("task_id")
    if task_id is None:
        return {}
    outcome = outcomes.get(int(task_id)) or {}
    if outcome.get("status") != "completed":
        return {}
    result = outcome.get("result")
    control = result.get("control") if isinstance(result, dict) else None
    return control if isinstance(control, dict) else {}


async def _add_tools(tx: Tx, conversation_id: int, names: list[str]) -> None:
    """Offer more tools: extend an array filter, shrink a removal filter (R90)."""
    agent = await tx.doc(AGENT_DOC, conversation_id)
    tools = agent.get("tools")
    if isinstance(tools, list):
        agent["tools"] = tools + [n for n in dict.fromkeys(names) if n not in tools]
    elif isinstance(tools, dict):
        removed = [n for n in tools.get("remove", []) if n not in names]
        agent["tools"] = {"remove": removed}


async def _next_sequential(
    runtime: HarnessRuntime, services: HarnessServices, checkpoint: JsonObject, pending: list[str]
) -> None:
    conversation_id = runtime.conversation_id
    generation_id = runtime.task_id
    call_id = pending[0]
    tool_task = services.task_definition("pi.tool")

    async def start_next(tx: Tx) -> Waiting:
        task = tx.create_task(
            tool_task,
            {"assistant": checkpoint["assistant"], "call_id": call_id},
            ownership=TaskOwned(generation_id),
        )
        live = await tx.doc(LIVE_DOC, conversation_id)
        for slot in live.get("tools") or []:
            if slot.get("call_id") == call_id and "task_id" not in slot:
                slot["task_id"] = task.id
                break
        return Waiting(
            on=[task.id],
            checkpoint={
                **checkpoint,
                "tools": [*checkpoint.get("tools", []), task.id],
                "pending": pending[1:],
            },
        )

    runtime.offer_continuation(settle_with_last_result)
    await runtime.commit(start_next)


async def abort_pending_calls(
    runtime: HarnessRuntime, services: HarnessServices, checkpoint: JsonObject
) -> list[Callable[[Tx], Awaitable[Any]]]:
    """Writes answering every call still pending in a round as aborted (R91)."""
    if checkpoint.get("phase") != "tools" or not checkpoint.get("pending"):
        return []
    conversation_id = runtime.conversation_id
    stored = await services.entry(int(checkpoint["assistant"]))
    message = message_of(stored.entry) if stored is not None else None
    names = {call["id"]: call["name"] for call in _calls(message or {})}
    now = runtime.now()
    writes: list[Callable[[Tx], Awaitable[Any]]] = []
    for call_id in checkpoint["pending"]:
        name = names.get(call_id, "tool")
        text = f"Tool {name} was aborted"
        diagnostics = [Diagnostic("error", text, "aborted")]
        result = tool_result_message(
            call_id=call_id,
            tool_name=name,
            content=[],
            diagnostics=diagnostics,
            is_error=True,
            timestamp_ms=now,
        )

        async def write(
            tx: Tx, result: JsonObject = result, diagnostics: list[Diagnostic] = diagnostics
        ) -> None:
            entry = append_tool_result(tx, conversation_id, result, diagnostics)
            live = await tx.doc(LIVE_DOC, conversation_id)
            for slot in live.get("tools") or []:
                if slot.get("call_id") == result["tool_call_id"] and "task_id" not in slot:
                    slot.update(status="done", entry=entry.id)

        writes.append(write)
    return writes
