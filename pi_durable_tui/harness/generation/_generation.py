"""The generation task ``pi.generation``: one model turn of a run (R83-R92).

Input ``{}`` (or ``{"request": checkpoint}`` for a successor the settlement of a
tool round prepared, ``_preparation``); the run's inputs live in ``pi.live.run``.
Checkpoints:

- ``prepare {attempt, compacted?, overflow?}`` (R83): resolve the agent and model,
  plan the system entries (R77-R81), check the compaction thresholds (R108), then
  in one commit append the planned ``pi.system`` entries and move to ``request``
  with the model, thinking level and stream options pinned and ``cutoff`` = the
  newest entry.
- ``request {attempt, compacted?, model, thinking_level, stream_options, cutoff}``
  (R84-R86): convert a partial an interrupted attempt left, stream the response
  with partials committed at most every 100 ms, then classify it in one commit:
  an answer ends the run (R64), tool calls start a round (R89), an overflow starts
  one blocking compaction, a retryable error moves to ``retry``, anything else
  fails the run with ``model_error``.
- ``retry {attempt, compacted?, until}`` (R87): sleep, then ``prepare`` again.
- ``tools {assistant, tools, pending}`` (R90): see ``_tool_round``.

The abort handler (R91) answers pending calls of a round as aborted, converts a
committed partial, and settles the run's inputs ``unanswered``/``aborted``.

Deferred responses (``poll``, R88) are not offered by any provider here, so that
phase does not exist.
"""

from __future__ import annotations

from typing import Any

from pi_durable_tui.ai import (
    AssistantMessage,
    DoneEvent,
    ErrorEvent,
    Model,
    ModelRef,
    StreamOptions,
    is_context_overflow,
)
from pi_durable_tui.harness._runtime import HarnessRuntime, with_services
from pi_durable_tui.harness._services import HarnessServices
from pi_durable_tui.harness._settings import retry_wait_ms
from pi_durable_tui.harness.compaction import (
    select_cut,
)
from pi_durable_tui.harness.context import (
    ContextView,
    build_request,
    load_context,
)
from pi_durable_tui.harness.conversations import (
    INTERRUPTED_PARTIAL,
    answer,
    convert_partial,
    fail_run,
)
from pi_durable_tui.harness.extensions import (
    Continue,
    call_hook,
    define_task,
)
from pi_durable_tui.harness.generation._partials import PartialCommitter
from pi_durable_tui.harness.generation._preparation import (
    Decided,
    fail_generation,
    initial_checkpoint,
    plan_request,
    start_blocking_compaction,
)
from pi_durable_tui.harness.generation._tool_round import (
    abort_pending_calls,
    start_round,
    tools_phase,
)
from pi_durable_tui.harness.state import (
    LIVE_DOC,
    PROVIDER_DOC,
    add_model_usage,
    append_assistant,
    dump,
)
from pi_durable_tui.kernel import (
    Aborted,
    Completed,
    Failed,
    Running,
    Tx,
)
from pi_durable_tui.storage.json_ops import JsonObject
from pi_durable_tui.storage.records import TaskRecord


def _checkpoint(task: TaskRecord) -> JsonObject:
    checkpoint = task.state.get("checkpoint")
    return dict(checkpoint) if isinstance(checkpoint, dict) else {}


def _carry(checkpoint: JsonObject, **values: Any) -> JsonObject:
    """A new checkpoint keeping ``compacted`` across phases (R83, R87)."""
    data: JsonObject = dict(values)
    if "compacted" in checkpoint:
        data["compacted"] = checkpoint["compacted"]
    return data


# -- prepare (R83, R108): see ``_preparation`` --


async def _prepare(task: TaskRecord, runtime: HarnessRuntime, services: HarnessServices) -> None:
    plan = await plan_request(runtime, services, _checkpoint(task))
    if isinstance(plan, Decided):
        await plan.commit(runtime)
        return

    async def to_request(tx: Tx) -> Running:
        return Running(await plan.apply(tx))

    await runtime.commit(to_request)


# -- request (R84-R86) --


async def _session_id(services: HarnessServices, runtime: HarnessRuntime) -> str | None:
    doc = await services.session.snapshot(PROVIDER_DOC, runtime.conversation_id)
    if doc is None:  # a legacy conversation: create it on the line (R84)
        conversation_id = runtime.conversation_id

        async def create(tx: Tx) -> Any:
            return await tx.doc(PROVIDER_DOC, conversation_id)

        doc = await runtime.commit(create)
    session_id = doc.get("session_id") if doc else None
    return session_id if isinstance(session_id, str) else None


async def _stream(
    runtime: HarnessRuntime,
    services: HarnessServices,
    model: Model,
    checkpoint: JsonObject,
    view: ContextView,
) -> AssistantMessage:
    agent = await runtime.agent()
    messages = list(view.messages)
    hooks = agent.hooks("pi.generation", "before_request")
    for hook in hooks:
        replaced = await call_hook(
            hook,
            messages,
            runtime,
            point="before_request",
            report=services.report,
            aborted=runtime.aborted,
        )
        if isinstance(replaced, list):
            messages = replaced
    # A hook may change stored dicts in place, so its requests validate everything.
    context = build_request(messages, None if hooks else services.validated)
    thinking = checkpoint.get("thinking_level") or "off"
    options = StreamOptions.model_validate(
        {
            **(checkpoint.get("stream_options") or {}),
            "reasoning": None if thinking == "off" else thinking,
            "session_id": await _session_id(services, runtime),
        }
    )
    interval = services.settings().progress.partial_interval_ms
    committer = PartialCommitter(runtime, services, int(checkpoint.get("attempt", 1)), interval)
    final: AssistantMessage | None = None
    stream = services.models.stream(model, context, options, abort=runtime.aborted)
    try:
        async for event in stream:
            if isinstance(event, DoneEvent):
                final = event.message
            elif isinstance(event, ErrorEvent):
                final = event.error
            else:
                committer.update(event)
    finally:
        await committer.stop()
        await stream.aclose()
    assert final is not None
    return final


async def _request(task: TaskRecord, runtime: HarnessRuntime, services: HarnessServices) -> None:
    checkpoint = _checkpoint(task)
    attempt = int(checkpoint.get("attempt", 1))
    conversation_id = runtime.conversation_id

    async def begin(tx: Tx) -> None:
        live = await tx.doc(LIVE_DOC, conversation_id)
        await convert_partial(tx, conversation_id, live, INTERRUPTED_PARTIAL)
        live["generation"] = {"attempt": attempt}

    # REMINDER: the opening commit converts a partial an interrupted attempt left
    # (R84); when preparation already set this attempt and nothing streamed, it
    # would write nothing, so it is skipped (one commit less per turn).
    committed = await services.session.snapshot(LIVE_DOC, conversation_id) or {}
    if committed.get("generation") != {"attempt": attempt}:
        await runtime.commit(begin)
    ref = checkpoint.get("model") or {}
    model = services.models.get(ModelRef(str(ref.get("provider")), str(ref.get("model_id"))))
    if model is None:
        await fail_generation(
            runtime,
            "no_model",
            f"Model {ref.get('provider')}/{ref.get('model_id')} is not available",
        )
        return
    view = await load_context(
        services.session.storage,
        conversation_id,
        int(checkpoint["cutoff"]),
        cache=services.contexts,
    )
    message = await _stream(runtime, services, model, checkpoint, view)
    if runtime.aborted.is_set():
        return  # the abort (or close) path answers for this attempt (R37, R92)
    agent = await runtime.agent()
    for hook in agent.hooks("pi.generation", "after_response"):
        await call_hook(hook, message, runtime, point="after_response", report=services.report)
    await _classify(runtime, services, model, checkpoint, view, message)


async def _classify(
    runtime: HarnessRuntime,
    services: HarnessServices,
    model: Model,
    checkpoint: JsonObject,
    view: ContextView,
    message: AssistantMessage,
) -> None:
    """One commit that files the response and decides what comes next (R86)."""
    conversation_id = runtime.conversation_id
    attempt = int(checkpoint.get("attempt", 1))
    stored = dump(message)
    if message.stop_reason == "toolUse" and message.tool_calls():
        await start_round(runtime, services, checkpoint, view, stored)
        return
    if message.stop_reason in ("stop", "length", "toolUse"):
        continuation = await _on_yield(runtime, services, message)

        async def finish(tx: Tx) -> Any:
            entry = append_assistant(tx, conversation_id, stored)
            await add_model_usage(tx, conversation_id, stored)
            await answer(tx, services, conversation_id, entry.id, continuation)
            return Completed({"entry_id": entry.id})

        await runtime.commit(finish)
        return
    text = message.error_message or f"Model response ended with stop reason {message.stop_reason}"
    settings = services.settings()
    if (
        message.stop_reason == "error"
        and is_context_overflow(message, model.context_window)
        and settings.compaction.enabled
        and "compacted" not in checkpoint
        and select_cut(view, settings.compaction.keep_recent_tokens) is not None
    ):
        await start_blocking_compaction(runtime, services, "overflow", attempt, text, error=stored)
        return
    delay = retry_wait_ms(settings.retry, message, attempt)
    if delay is not None:
        until = runtime.now() + delay

        async def to_retry(tx: Tx) -> Running:
            append_assistant(tx, conversation_id, stored)
            await add_model_usage(tx, conversation_id, stored)
            live = await tx.doc(LIVE_DOC, conversation_id)
            live["generation"] = {"attempt": attempt, "retry": {"at": until, "error": text}}
            return Running(_carry(checkpoint, phase="retry", attempt=attempt, until=until))

        await runtime.commit(to_retry)
        return
    task_id = runtime.task_id

    async def failed(tx: Tx) -> Failed:
        append_assistant(tx, conversation_id, stored)
        await add_model_usage(tx, conversation_id, stored)
        live = await tx.doc(LIVE_DOC, conversation_id)
        live.pop("generation", None)
        await fail_run(tx, conversation_id, task_id, "model_error", text)
        return Failed(text, detail={"reason": "model_error"})

    await runtime.commit(failed)


async def _on_yield(
    runtime: HarnessRuntime, services: HarnessServices, message: AssistantMessage
) -> str | None:
    """The first ``on_yield`` hook returning ``Continue`` wins (R65)."""
    agent = await runtime.agent()
    for hook in agent.hooks("pi.generation", "on_yield"):
        decision = await call_hook(hook, message, runtime, point="on_yield", report=services.report)
        if isinstance(decision, Continue):
            return decision.content
    return None


# -- retry (R87) --


async def _retry(task: TaskRecord, runtime: HarnessRuntime) -> None:
    checkpoint = _checkpoint(task)
    attempt = int(checkpoint.get("attempt", 1))
    await runtime.sleep(float(checkpoint.get("until", 0)))
    conversation_id = runtime.conversation_id

    async def again(tx: Tx) -> Running:
        live = await tx.doc(LIVE_DOC, conversation_id)
        live["generation"] = {"attempt": attempt + 1}
        return Running(_carry(checkpoint, phase="prepare", attempt=attempt + 1))

    await runtime.commit(again)


# -- abort (R91, R92) --


async def _abort(task: TaskRecord, runtime: HarnessRuntime, services: HarnessServices) -> None:
    checkpoint = _checkpoint(task)
    conversation_id = runtime.conversation_id
    task_id = runtime.task_id
    pending = await abort_pending_calls(runtime, services, checkpoint)

    async def abort(tx: Tx) -> Aborted:
        for write in pending:
            await write(tx)
        live = await tx.doc(LIVE_DOC, conversation_id)
        run = live.get("run")
        if isinstance(run, dict) and run.get("task_id") == task_id:
            await fail_run(tx, conversation_id, task_id, "aborted")
        else:
            await convert_partial(tx, conversation_id, live)
            live.pop("generation", None)
        return Aborted()

    await runtime.commit(abort)


GENERATION_TASK = define_task(
    "pi.generation",
    initial=initial_checkpoint,
    phases={
        "prepare": with_services(_prepare),
        "request": with_services(_request),
        "retry": _retry,
        "tools": with_services(tools_phase),
    },
    abort=with_services(_abort),
)
"""The built-in generation task (R83-R92)."""
