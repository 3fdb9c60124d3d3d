"""The compaction task ``pi.compaction``: summarize the older part of a context (R108-R114).

Input ``{"reason": "manual"|"threshold"|"overflow", "instructions"?}``; checkpoints
``select``, ``summarize {attempt, model, thinking_level, stream_options,
max_tokens, tail, first_kept}`` and ``retry {..., until}``. Who starts it decides
how its summary lands (R108, R112):

- owned by a generation (blocking: threshold or overflow): the summary entry is
  appended directly; result ``{"entry_id"}``;
- owned by the conversation (manual ``compact()``, or a background threshold
  compaction): the summary is admitted as a write submission with request ID
  ``compaction:<task id>`` and placed by the inbox rules; result
  ``{"submission_id"}``. The placing commit removes its status (the request ID
  names the task: the entry's ``data`` is ``{"reason"}`` alone, R112).

``select`` (R110) finds the cut (R109) and asks the ``before_compact`` hooks;
``summarize`` (R111) re-derives the summarized messages from the immutable context
at ``tail``, asks the model for a structured checkpoint without tools, and files the
result in one commit that also counts its usage. The abort handler removes the
status and ends ``aborted`` with no entry (R114).
"""

from __future__ import annotations

from typing import Any

from pi_durable_tui.ai import (
    Context,
    ModelRef,
    StreamOptions,
    UserMessage,
)
from pi_durable_tui.harness._runtime import HarnessRuntime, with_services
from pi_durable_tui.harness._services import HarnessServices
from pi_durable_tui.harness._settings import retry_wait_ms
from pi_durable_tui.harness._submission_types import EntryDraft, Write
from pi_durable_tui.harness.compaction._compaction_range import (
    SUMMARY_SYSTEM_PROMPT,
    checkpoint_prompt,
    select_cut,
    serialize_conversation,
    summary_message_text,
)
from pi_durable_tui.harness.context import load_context
from pi_durable_tui.harness.conversations import admit, compaction_request
from pi_durable_tui.harness.extensions import call_hook, define_task
from pi_durable_tui.harness.state import (
    COMPACTION,
    LIVE_DOC,
    PROVIDER_DOC,
    add_model_usage,
    compaction_of,
    remove_compaction,
)
from pi_durable_tui.kernel import Aborted, Completed, Failed, Running, Tx
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.records import TaskRecord


def _input(task: TaskRecord) -> JsonObject:
    return dict(task.input) if isinstance(task.input, dict) else {}


def _checkpoint(task: TaskRecord) -> JsonObject:
    checkpoint = task.state.get("checkpoint")
    return dict(checkpoint) if isinstance(checkpoint, dict) else {}


async def _end(runtime: HarnessRuntime, state: Any) -> None:
    """Remove the compaction's status and end the task with ``state``."""
    conversation_id = runtime.conversation_id
    task_id = runtime.task_id

    async def end(tx: Tx) -> Any:
        live = await tx.doc(LIVE_DOC, conversation_id)
        remove_compaction(live, task_id)
        return state

    await runtime.commit(end)


async def _select(task: TaskRecord, runtime: HarnessRuntime, services: HarnessServices) -> None:
    data = _input(task)
    agent = await runtime.agent()
    model = services.models.get(agent.model) if agent.model is not None else None
    if model is None:
        message = (
            "No model is configured"
            if agent.model is None
            else f"Model {agent.model} is not available"
        )
        await _end(runtime, Failed(message, detail={"reason": "no_model"}))
        return
    settings = services.settings()
    view = await load_context(
        services.session.storage, runtime.conversation_id, cache=services.contexts
    )
    cut = select_cut(view, settings.compaction.keep_recent_tokens)
    if cut is None:
        await _end(runtime, Completed({}))
        return
    for hook in agent.hooks("pi.compaction", "before_compact"):
        info = {
            "reason": data.get("reason"),
            "entries": [entry.id for entry in cut.summarized],
            "messages": cut.messages,
            "first_kept": cut.first_kept,
            "instructions": data.get("instructions"),
        }
        decision = await call_hook(
            hook, info, runtime, point="before_compact", report=services.report
        )
        if isinstance(decision, dict) and decision.get("decline"):
            await _end(runtime, Completed({}))
            return
        if isinstance(decision, dict) and isinstance(decision.get("summary"), str):
            await _place(task, runtime, services, cut.first_kept, decision["summary"], None)
            return
    reserve = settings.compaction.reserve_tokens
    max_tokens = int(0.8 * reserve)
    if model.max_tokens > 0:
        max_tokens = min(max_tokens, model.max_tokens)
    stream_options = {k: v for k, v in settings.stream.items() if k != "deferred"}
    checkpoint: JsonObject = {
        "phase": "summarize",
        "attempt": 1,
        "model": {"provider": model.provider, "model_id": model.id},
        "thinking_level": agent.thinking_level,
        "stream_options": stream_options,
        "max_tokens": max_tokens,
        "tail": max(entry.id for entry in view.entries),  # the marker comes first
        "first_kept": cut.first_kept,
    }
    conversation_id = runtime.conversation_id
    task_id = runtime.task_id
    reason = str(data.get("reason") or "manual")
    blocking = task.owner is not None

    async def to_summarize(tx: Tx) -> Running:
        live = await tx.doc(LIVE_DOC, conversation_id)
        if compaction_of(live, task_id) is None:
            status = {"task_id": task_id, "reason": reason, "blocking": blocking, "attempt": 1}
            live["compactions"] = sorted(
                [*(live.get("compactions") or []), status], key=lambda s: s["task_id"]
            )
        return Running(checkpoint)

    await runtime.commit(to_summarize)


async def _summarize(task: TaskRecord, runtime: HarnessRuntime, services: HarnessServices) -> None:
    checkpoint = _checkpoint(task)
    data = _input(task)
    attempt = int(checkpoint.get("attempt", 1))
    ref = checkpoint.get("model") or {}
    model = services.models.get(ModelRef(str(ref.get("provider")), str(ref.get("model_id"))))
    if model is None:
        text = f"Model {ref.get('provider')}/{ref.get('model_id')} is not available"
        await _end(runtime, Failed(text, detail={"reason": "no_model"}))
        return
    first_kept = int(checkpoint["first_kept"])
    view = await load_context(
        services.session.storage,
        runtime.conversation_id,
        int(checkpoint["tail"]),
        cache=services.contexts,
    )
    summarized: list[JsonObject] = []
    for entry in view.entries:
        if entry.id < first_kept or entry is view.head:
            summarized.extend(view.contributions.get(entry.id, []))
    prompt = checkpoint_prompt(serialize_conversation(summarized), data.get("instructions"))
    context = Context(
        system_prompt=SUMMARY_SYSTEM_PROMPT,
        messages=[UserMessage(content=prompt, timestamp=int(runtime.now()))],
    )
    thinking = checkpoint.get("thinking_level") or "off"
    provider = await services.session.snapshot(PROVIDER_DOC, runtime.conversation_id) or {}
    options = StreamOptions.model_validate(
        {
            **(checkpoint.get("stream_options") or {}),
            "cache_retention": "none",
            "max_tokens": checkpoint.get("max_tokens"),
            "reasoning": None if thinking == "off" else thinking,
            "session_id": provider.get("session_id"),
        }
    )
    message = await services.models.stream(model, context, options, abort=runtime.aborted).result()
    if runtime.aborted.is_set():
        return  # an attempt cut short counts no usage (R114)
    stored = message.model_dump(mode="json", exclude_none=True)
    summary = message.text().strip()
    conversation_id = runtime.conversation_id
    if message.stop_reason == "stop" and summary and not message.tool_calls():
        await _place(task, runtime, services, first_kept, summary, stored)
        return
    delay = retry_wait_ms(services.settings().retry, message, attempt)
    error_text = message.error_message or ""
    if delay is not None:
        until = runtime.now() + delay
        task_id = runtime.task_id

        async def to_retry(tx: Tx) -> Running:
            await add_model_usage(tx, conversation_id, stored)
            live = await tx.doc(LIVE_DOC, conversation_id)
            status = compaction_of(live, task_id)
            if status is not None:
                status["attempt"] = attempt
                status["retry"] = {"at": until, "error": error_text}
            return Running({**checkpoint, "phase": "retry", "until": until})

        await runtime.commit(to_retry)
        return
    if message.stop_reason == "length":
        text = "Summarization hit the token limit; the summary is incomplete"
    elif message.tool_calls():
        text = "Summarization attempted to call a tool"
    elif message.stop_reason == "error" or message.stop_reason == "aborted":
        text = f"Summarization failed: {error_text or message.stop_reason}"
    else:
        text = "Summarization produced no text"
    task_id = runtime.task_id

    async def failed(tx: Tx) -> Failed:
        await add_model_usage(tx, conversation_id, stored)
        live = await tx.doc(LIVE_DOC, conversation_id)
        remove_compaction(live, task_id)
        return Failed(text, detail={"reason": "model_error"})

    await runtime.commit(failed)


async def _place(
    task: TaskRecord,
    runtime: HarnessRuntime,
    services: HarnessServices,
    first_kept: int,
    summary: str,
    response: JsonObject | None,
) -> None:
    """Place the summary entry: directly when blocking, else as a write (R112)."""
    conversation_id = runtime.conversation_id
    task_id = runtime.task_id
    reason = str(_input(task).get("reason") or "manual")
    now = int(runtime.now())
    draft = EntryDraft(
        COMPACTION,
        model=[{"role": "user", "content": summary_message_text(summary), "timestamp": now}],
        data={"reason": reason},
        head=first_kept,
    )
    blocking = task.owner is not None

    async def place(tx: Tx) -> Completed:
        if not blocking:
            # REMINDER: the request-ID lookup is a table read: it must come first.
            record = await admit(
                tx, services, conversation_id, Write(draft, request_id=compaction_request(task_id))
            )
            if response is not None:
                await add_model_usage(tx, conversation_id, response)
            return Completed({"submission_id": record.id})
        if response is not None:
            await add_model_usage(tx, conversation_id, response)
        entry = tx.append(
            conversation_id, COMPACTION, model=draft.model, data=draft.data, head=first_kept
        )
        live = await tx.doc(LIVE_DOC, conversation_id)
        remove_compaction(live, task_id)
        return Completed({"entry_id": entry.id})

    await runtime.commit(place)


async def _retry(task: TaskRecord, runtime: HarnessRuntime) -> None:
    checkpoint = _checkpoint(task)
    await runtime.sleep(float(checkpoint.get("until", 0)))
    attempt = int(checkpoint.get("attempt", 1)) + 1
    conversation_id = runtime.conversation_id
    task_id = runtime.task_id

    async def again(tx: Tx) -> Running:
        live = await tx.doc(LIVE_DOC, conversation_id)
        status = compaction_of(live, task_id)
        if status is not None:
            status["attempt"] = attempt
            status.pop("retry", None)
        data = {k: v for k, v in checkpoint.items() if k != "until"}
        return Running({**data, "phase": "summarize", "attempt": attempt})

    await runtime.commit(again)


async def _abort(task: TaskRecord, runtime: HarnessRuntime) -> None:
    await _end(runtime, Aborted())


COMPACTION_TASK = define_task(
    "pi.compaction",
    initial=lambda _input: {"phase": "select"},
    phases={
        "select": with_services(_select),
        "summarize": with_services(_summarize),
        "retry": _retry,
    },
    abort=_abort,
)
"""The built-in compaction task (R108-R114)."""
