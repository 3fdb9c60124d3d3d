"""The tool task ``pi.tool``: one tool call from resolution to its result entry (R93-R107).

Input ``{"assistant": <entry id>, "call_id": ...}``; checkpoints ``call``,
``approval {"arguments"}`` (waiting for the user's decision, ``_approval``) and
``execute {"arguments", "replay"}`` (the durable intent); result
``{"entry_id", "control"?}``.

The commit of a round's last result also settles the round and starts the next
generation when the generation offered that (``runtime.continuation``, issue 14).

- ``call`` (R93): resolve the tool among the agent's tools, refuse argument text that
  was not a JSON object (``_arguments``), repair and validate the arguments, run the
  ``before_tool`` chain, validate again - none of which records intent - then pass
  the permission gate (``_approval``: run, refuse, or wait durably for the user's
  decision), then commit the intent (checkpoint ``execute`` and slot ``running``),
  build the environment, execute, run the ``after_tool`` chain and commit the
  result (R96-R98, R106).
- ``execute`` is reached only after a crash or close during execution (R95): the
  call runs again iff the stored policy and the tool's current policy are both
  ``safe``; otherwise it ends ``failed`` with an ``interrupted`` result holding the
  output it had committed.
- the abort handler (R101) commits an ``aborted`` result from the slot's durable
  output, after the ``on_abort`` chain.

Every result entry is redacted as it is committed, like everything a commit
stores (the session's filter, ``HarnessHooks.filter_json``, issue 13): the values
of this process's secret-looking environment variables never reach the
transcript.
"""

from __future__ import annotations

import asyncio
import copy
import time
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from pi_durable_tui.harness._runtime import HarnessRuntime, with_services
from pi_durable_tui.harness._services import HarnessServices
from pi_durable_tui.harness.extensions import (
    Diagnostic,
    OutputLimits,
    Tool,
    ToolBlock,
    ToolCallInfo,
    ToolResult,
    bound_text,
    call_hook,
    define_task,
    invoke,
    truncation_notice,
)
from pi_durable_tui.harness.state import (
    LIVE_DOC,
    ResolvedAgent,
    add_tool_usage,
    append_tool_result,
    message_of,
    slot_of_task,
    tool_result_message,
)
from pi_durable_tui.harness.tool._approval import await_decision, denial_text, gate, refusal_text
from pi_durable_tui.harness.tool._arguments import not_json_problem, raw_arguments, validate
from pi_durable_tui.harness.tool._tool_api import CallProgress, ToolCallApi
from pi_durable_tui.kernel import (
    Aborted,
    Completed,
    Failed,
    Report,
    Running,
    SessionClosed,
    SessionFailed,
    TaskGateClosed,
    Tx,
)
from pi_durable_tui.storage.errors import StorageRejected
from pi_durable_tui.storage.json_ops import Json, JsonObject
from pi_durable_tui.storage.records import TaskRecord

_PROGRESS = ("output", "dropped_bytes", "dropped_lines", "details", "diagnostics")


@dataclass(frozen=True, slots=True)
class _Call:
    assistant: int
    call_id: str
    name: str
    arguments: dict[str, Any]
    raw: str | None = None
    """The argument text when it was not a JSON object (``arguments`` is then ``{}``)."""

    def info(self, arguments: dict[str, Any]) -> ToolCallInfo:
        return ToolCallInfo(self.call_id, self.name, arguments, self.assistant)


async def _read_call(services: HarnessServices, task: TaskRecord) -> _Call:
    data = task.input if isinstance(task.input, dict) else {}
    assistant, call_id = data.get("assistant"), data.get("call_id")
    stored = await services.entry(int(assistant or 0))
    message = message_of(stored.entry) if stored is not None else None
    for block in (message or {}).get("content") or []:
        if (
            isinstance(block, dict)
            and block.get("type") == "tool_call"
            and block.get("id") == call_id
        ):
            arguments = block.get("arguments")
            return _Call(
                int(assistant or 0),
                str(call_id),
                str(block.get("name")),
                arguments if isinstance(arguments, dict) else {},
                raw_arguments(block),
            )
    raise LookupError(f"Tool call {call_id} is not in assistant entry {assistant}")


# -- results --


@dataclass(slots=True)
class _Result:
    content: list[JsonObject]
    diagnostics: list[Diagnostic]
    is_error: bool
    details: Json = None
    usage: JsonObject | None = None
    duration_ms: int | None = None
    control: JsonObject | None = None


def _text_item(text: str) -> list[JsonObject]:
    return [{"type": "text", "text": text}] if text else []


async def _commit_result(
    runtime: HarnessRuntime,
    services: HarnessServices,
    call: _Call,
    result: _Result,
    outcome: str,
    message: str = "",
) -> None:
    """Append the result entry, mark the slot done, count usage, end the task (R106)."""
    now = runtime.now()
    stored = tool_result_message(
        call_id=call.call_id,
        tool_name=call.name,
        content=result.content,
        diagnostics=result.diagnostics,
        is_error=result.is_error,
        timestamp_ms=now,
        details=result.details,
        usage=result.usage,
        duration_ms=result.duration_ms,
    )
    conversation_id = runtime.conversation_id
    task_id = runtime.task_id

    async def finish(tx: Tx) -> Any:
        entry = append_tool_result(tx, conversation_id, stored, result.diagnostics)
        live = await tx.doc(LIVE_DOC, conversation_id)
        slot = slot_of_task(live, task_id)
        if slot is not None:
            slot["status"] = "done"
            slot["entry"] = entry.id
            for key in _PROGRESS:
                slot.pop(key, None)
        await add_tool_usage(tx, conversation_id, call.name, result.usage)
        value: JsonObject = {"entry_id": entry.id}
        if result.control:
            value["control"] = result.control
        if outcome == "failed":
            return Failed(message, result=value)
        if outcome == "aborted":
            return Aborted(result=value)
        return Completed(value)

    # The last result of a round carries the round's settlement (issue 14): the
    # generation offered it (``runtime.continuation``); an abort never does.
    then = None
    if outcome != "aborted" and not runtime.aborted.is_set():
        try:
            then = await runtime.continuation(
                runtime, services, {"message": stored, "control": result.control}
            )
        except Exception as error:  # REMINDER: never at the cost of the result
            _report_settlement(services, error)
    if then is None:
        await runtime.commit(finish)
        return
    try:
        await runtime.commit(finish, then=then)
    except (SessionFailed, SessionClosed, TaskGateClosed, StorageRejected):
        raise
    except Exception as error:
        # Nothing of that commit landed: store the result alone; the generation
        # settles the round in a commit of its own (``tools_phase``).
        _report_settlement(services, error)
        await runtime.commit(finish)


def _report_settlement(services: HarnessServices, error: Exception) -> None:
    text = f"Settling the round with its last result failed: {error}"
    services.report(Report("settlement_failed", text, error))


async def _error_result(
    runtime: HarnessRuntime,
    services: HarnessServices,
    call: _Call,
    code: str,
    text: str,
    outcome: str = "completed",
) -> None:
    """A harness-written error result without partial output (R100)."""
    diagnostic = Diagnostic("error", text, code)
    await _commit_result(runtime, services, call, _Result([], [diagnostic], True), outcome, text)


def _assemble(result: ToolResult, progress: CallProgress, limits: OutputLimits) -> _Result:
    """Build the stored result of an execution that returned (R97)."""
    diagnostics = list(progress.diagnostics) + list(result.diagnostics)
    buffer = progress.buffer
    dropped = (0, 0)
    if result.content is None:
        content = _text_item(buffer.text)
        if buffer.dropped_bytes or buffer.dropped_lines:
            dropped = (buffer.dropped_lines, buffer.dropped_bytes)
    else:
        items = (
            [{"type": "text", "text": result.content}]
            if isinstance(result.content, str)
            else [block.model_dump(mode="json", exclude_none=True) for block in result.content]
        )
        content, dropped = _bound_items(items, limits)
    diagnostics += _truncation(*dropped, limits)
    details = result.details if result.details is not None else progress.last_details
    return _Result(
        content=content,
        diagnostics=diagnostics,
        is_error=result.is_error,
        details=details,
        usage=result.usage.model_dump(mode="json") if result.usage is not None else None,
        control=result.control.to_json() if result.control is not None else None,
    )


def _truncation(
    dropped_lines: int, dropped_bytes: int, limits: OutputLimits, *, rebuilt: bool = False
) -> list[Diagnostic]:
    """R97's ``truncated`` warning when anything was dropped, else nothing."""
    if not (dropped_lines or dropped_bytes):
        return []
    notice = truncation_notice(dropped_lines, dropped_bytes, limits.retain, rebuilt=rebuilt)
    return [Diagnostic("warn", notice, "truncated")]


def _bound_items(
    items: list[JsonObject], limits: OutputLimits
) -> tuple[list[JsonObject], tuple[int, int]]:
    """Collapse explicit text items into one bounded item when they exceed the limits (R97)."""
    texts = [i for i, item in enumerate(items) if item.get("type") == "text"]
    if not texts:
        return items, (0, 0)
    joined = "".join(items[i].get("text", "") for i in texts)
    bounded = bound_text(joined, limits)
    if not (bounded.dropped_bytes or bounded.dropped_lines):
        return items, (0, 0)
    keep = texts[0] if limits.retain == "head" else texts[-1]
    out: list[JsonObject] = []
    for index, item in enumerate(items):
        if index == keep:
            out.append({"type": "text", "text": bounded.text})
        elif index not in texts:
            out.append(item)
    return out, (bounded.dropped_lines, bounded.dropped_bytes)


def _from_slot(slot: JsonObject | None, rebuilt: bool, limits: OutputLimits) -> _Result:
    """A result rebuilt from the slot's durable progress (R95, R100, R101)."""
    slot = slot or {}
    diagnostics = [Diagnostic.from_json(d) for d in slot.get("diagnostics") or []]
    dropped_bytes = int(slot.get("dropped_bytes") or 0)
    dropped_lines = int(slot.get("dropped_lines") or 0)
    diagnostics += _truncation(dropped_lines, dropped_bytes, limits, rebuilt=rebuilt)
    return _Result(
        content=_text_item(str(slot.get("output") or "")),
        diagnostics=diagnostics,
        is_error=True,
        details=slot.get("details"),
    )


async def _slot(runtime: HarnessRuntime, services: HarnessServices) -> JsonObject | None:
    live = await services.session.snapshot(LIVE_DOC, runtime.conversation_id) or {}
    slot = slot_of_task(live, runtime.task_id)
    return copy.deepcopy(slot) if slot is not None else None


# -- execution --


async def _execute(
    runtime: HarnessRuntime,
    services: HarnessServices,
    agent: ResolvedAgent,
    tool: Tool[Any],
    call: _Call,
    arguments: dict[str, Any],
    validated: BaseModel,
) -> None:
    env: Any = None
    env_error: BaseException | None = None
    try:
        env = services.build_env(runtime.conversation_id, agent.cwd)
    except Exception as error:  # becomes the call's tool_error (R118)
        env_error = error
    interval = services.settings().progress.output_interval_ms
    progress = CallProgress(runtime, services, tool.output, interval)
    api = ToolCallApi(runtime, services, progress, call.call_id, env)
    started = time.monotonic()
    returned: ToolResult | None = None
    failure: BaseException | None = None
    try:
        if env_error is not None:
            raise env_error
        returned = await tool.execute(validated, api)
    except asyncio.CancelledError:
        await progress.settle()
        raise
    except Exception as error:
        if runtime.aborted.is_set():
            await progress.settle()
            raise  # the abort path answers this call (R96)
        failure = error
    duration = round((time.monotonic() - started) * 1000)
    await progress.settle()
    if failure is not None:
        # R96, R97: the retained output, the recorded diagnostics, the error, and
        # last the truncation warning when the retained output was cut.
        diagnostics = [
            *progress.diagnostics,
            Diagnostic("error", str(failure) or repr(failure), "tool_error"),
        ]
        buffer = progress.buffer
        truncated = _truncation(buffer.dropped_lines, buffer.dropped_bytes, tool.output)
        result = _Result(
            content=_text_item(buffer.text),
            diagnostics=diagnostics + truncated,
            is_error=True,
            details=progress.last_details,
            duration_ms=duration,
        )
        try:
            await _commit_result(
                runtime, services, call, result, "failed", f"Tool {call.name} threw"
            )
        finally:
            progress.resolve_details()  # the terminal commit is the final flush (R104)
        return
    current = returned if isinstance(returned, ToolResult) else ToolResult()
    for hook in agent.hooks("pi.tool", "after_tool"):
        info = call.info(copy.deepcopy(arguments))
        replaced = await call_hook(
            hook, info, current, runtime, point="after_tool", report=services.report
        )
        if isinstance(replaced, ToolResult):
            current = replaced
    result = _assemble(current, progress, tool.output)
    result.duration_ms = duration
    try:
        await _commit_result(runtime, services, call, result, "completed")
    finally:
        progress.resolve_details()  # the terminal commit is the final flush (R104)


async def _call_phase(task: TaskRecord, runtime: HarnessRuntime, services: HarnessServices) -> None:
    call = await _read_call(services, task)
    agent = await runtime.agent()
    tool = agent.tool(call.name)
    if tool is None:
        await _error_result(
            runtime, services, call, "tool_unavailable", f"Tool {call.name} is not available"
        )
        return
    if call.raw is not None:
        await _error_result(
            runtime, services, call, "invalid_arguments", not_json_problem(tool.name, call.raw)
        )
        return
    arguments = copy.deepcopy(call.arguments)
    if tool.prepare_arguments is not None:
        try:
            arguments = tool.prepare_arguments(arguments)
        except Exception as error:
            await _error_result(runtime, services, call, "invalid_arguments", str(error))
            return
    validated, problem = validate(tool, arguments)
    if validated is None:
        await _error_result(runtime, services, call, "invalid_arguments", problem)
        return
    for hook in agent.hooks("pi.tool", "before_tool"):
        try:
            decision = await invoke(hook, call.info(copy.deepcopy(arguments)), runtime)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if runtime.aborted.is_set():
                raise
            decision = ToolBlock(str(error))
        if isinstance(decision, ToolBlock):
            text = f"Tool call blocked: {decision.reason}"
            await _error_result(runtime, services, call, "blocked", text)
            return
        if isinstance(decision, dict):
            arguments = decision
            validated, problem = validate(tool, arguments)
            if validated is None:
                await _error_result(runtime, services, call, "invalid_arguments", problem)
                return
    assert validated is not None
    outcome, code, text = await gate(runtime, services, agent, tool, arguments, validated)
    if outcome == "refused":
        await _error_result(runtime, services, call, code, text)
    elif outcome == "wait":
        await _decided(runtime, services, agent, tool, call, arguments, validated)
    else:
        await _start(runtime, services, agent, tool, call, arguments, validated)


async def _decided(
    runtime: HarnessRuntime,
    services: HarnessServices,
    agent: ResolvedAgent,
    tool: Tool[Any],
    call: _Call,
    arguments: dict[str, Any],
    validated: BaseModel,
) -> None:
    """Wait for the committed decision of a call that asked, then act on it (issue 13)."""
    decision = await await_decision(runtime, services)
    if decision.get("choice") == "deny":
        if decision.get("by") == "headless":
            hint = services.settings().permissions.hint
            text = refusal_text(decision.get("request") or {"tool": call.name}, hint)
            await _error_result(runtime, services, call, "permission_required", text)
        else:
            await _error_result(runtime, services, call, "permission_denied", denial_text(decision))
        return
    await _start(runtime, services, agent, tool, call, arguments, validated)


async def _approval_phase(
    task: TaskRecord, runtime: HarnessRuntime, services: HarnessServices
) -> None:
    """A call waiting for its decision when a crash or close cut it (issue 13)."""
    call = await _read_call(services, task)
    arguments = (task.state.get("checkpoint") or {}).get("arguments") or {}
    agent = await runtime.agent()
    tool = agent.tool(call.name)
    if tool is None:
        await _error_result(
            runtime, services, call, "tool_unavailable", f"Tool {call.name} is not available"
        )
        return
    validated, problem = validate(tool, arguments)
    if validated is None:
        await _error_result(runtime, services, call, "invalid_arguments", problem)
        return
    await _decided(runtime, services, agent, tool, call, arguments, validated)


async def _start(
    runtime: HarnessRuntime,
    services: HarnessServices,
    agent: ResolvedAgent,
    tool: Tool[Any],
    call: _Call,
    arguments: dict[str, Any],
    validated: BaseModel,
) -> None:
    """Commit the durable intent, then execute (R93)."""
    conversation_id = runtime.conversation_id
    task_id = runtime.task_id
    checkpoint: JsonObject = {"phase": "execute", "arguments": arguments, "replay": tool.replay}

    async def intent(tx: Tx) -> Running:
        live = await tx.doc(LIVE_DOC, conversation_id)
        slot = slot_of_task(live, task_id)
        if slot is not None:
            slot["status"] = "running"
        return Running(checkpoint)

    await runtime.commit(intent)
    await _execute(runtime, services, agent, tool, call, arguments, validated)


async def _execute_phase(
    task: TaskRecord, runtime: HarnessRuntime, services: HarnessServices
) -> None:
    """Recovery of an execution a crash or close cut (R95)."""
    call = await _read_call(services, task)
    checkpoint = task.state.get("checkpoint") or {}
    arguments = checkpoint.get("arguments") or {}
    agent = await runtime.agent()
    tool = agent.tool(call.name)
    if checkpoint.get("replay") == "safe" and tool is not None and tool.replay == "safe":
        validated, _problem = validate(tool, arguments)
        if validated is not None:
            conversation_id = runtime.conversation_id
            task_id = runtime.task_id

            async def restart(tx: Tx) -> None:
                live = await tx.doc(LIVE_DOC, conversation_id)
                slot = slot_of_task(live, task_id)
                if slot is not None:
                    slot["status"] = "running"
                    for key in _PROGRESS:
                        slot.pop(key, None)

            await runtime.commit(restart)
            await _execute(runtime, services, agent, tool, call, arguments, validated)
            return
    limits = tool.output if tool is not None else OutputLimits()
    result = _from_slot(await _slot(runtime, services), True, limits)
    text = f"Tool {call.name} was interrupted and may have partially run"
    result.diagnostics.append(Diagnostic("error", text, "interrupted"))
    await _commit_result(runtime, services, call, result, "failed", text)


async def _abort(task: TaskRecord, runtime: HarnessRuntime, services: HarnessServices) -> None:
    """Answer an aborted call from its durable output, after the ``on_abort`` chain (R101).

    The hooks see the aborted result as it would be committed: the committed
    output as its content, the last details, the committed diagnostics (a
    truncation warning when output was dropped) and the ``aborted`` error; each
    returns a replacement or ``None``. Content a hook changed is bounded by the
    tool's limits, with a truncation warning after the hook's diagnostics; the
    retained content, unchanged, is never bounded again.
    """
    call = await _read_call(services, task)
    agent = await runtime.agent()
    tool = agent.tool(call.name)
    limits = tool.output if tool is not None else OutputLimits()
    slot = await _slot(runtime, services)
    approval = (slot or {}).get("approval") or {}
    if approval and "decision" not in approval:
        text = "Not run: the user stopped the turn before deciding on this call."
        await _error_result(runtime, services, call, "aborted", text, "aborted")
        return
    result = _from_slot(slot, False, limits)
    text = f"Tool {call.name} was aborted"
    result.diagnostics.append(Diagnostic("error", text, "aborted"))
    built = ToolResult(
        content=str((slot or {}).get("output") or ""),
        details=result.details,
        is_error=True,
        diagnostics=tuple(result.diagnostics),
    )
    current = built
    for hook in agent.hooks("pi.tool", "on_abort"):
        info = call.info(dict(call.arguments))
        replaced = await call_hook(
            hook, info, current, runtime, point="on_abort", report=services.report
        )
        if isinstance(replaced, ToolResult):
            current = replaced
    if current is not built:
        diagnostics = list(current.diagnostics)
        if current.content is not None and current.content != built.content:
            items = (
                [{"type": "text", "text": current.content}]
                if isinstance(current.content, str)
                else [b.model_dump(mode="json", exclude_none=True) for b in current.content]
            )
            result.content, dropped = _bound_items(items, limits)
            diagnostics += _truncation(*dropped, limits)
        result.diagnostics = diagnostics
        result.details = current.details
    await _commit_result(runtime, services, call, result, "aborted")


TOOL_TASK = define_task(
    "pi.tool",
    initial=lambda _input: {"phase": "call"},
    phases={
        "call": with_services(_call_phase),
        "approval": with_services(_approval_phase),
        "execute": with_services(_execute_phase),
    },
    abort=with_services(_abort),
)
"""The built-in tool task (R93-R107)."""
