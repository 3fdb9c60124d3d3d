"""A generation's preparation: the planned request and the commit that moves to it (R83, R108).

``plan_request(scope, services, checkpoint)`` resolves the agent and the model, derives
the context once, renders the sections (R77-R81) and checks the compaction
thresholds (R108). It returns a ``Preparation`` when the generation can go to
``request``, or a ``Decided`` whose ``commit(runtime)`` fails the run (``no_model``,
an overflow whose compaction did not complete) or starts a blocking compaction.
It reads only what ``PlanningScope`` offers, so it plans for a running task (its
``HarnessRuntime``) as well as for a conversation about to admit an input.

``Preparation.apply(tx)`` stages what R83's one commit writes: the planned
``pi.system`` entries, the attempt's status in ``pi.live``, a background compaction
when one is due; it returns the ``request`` checkpoint (``cutoff`` = the new tail).

Three commits use it (issue 14), so a turn's generations need no ``prepare``
commit of their own:

- the admission of an input to an idle conversation (``plan_admitted_request``,
  installed as ``HarnessServices.request_planner``): planned before the commit,
  applied in it after the user message, and only if nothing was committed since
  the planning (the conversations part checks the store's sequence number);
- the settlement of a tool round (``_tool_round``, in the generation's own commit
  or riding on the round's last result), which prepares its successor;
- the ``prepare`` phase's own, whenever neither planned (a busy conversation, a
  stale plan, a decision to fail or to compact first).

The successor's input carries that checkpoint (``{"request": ...}``);
``initial_checkpoint`` turns it into the task's first checkpoint. Sections render
before the commit that appends the user message or the tool result, as they
would for a request prepared just before it (R77).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pi_durable_tui.harness._runtime import HarnessRuntime
from pi_durable_tui.harness._services import HarnessServices
from pi_durable_tui.harness.compaction import estimate_tokens, select_cut, tokens_upper_bound
from pi_durable_tui.harness.context import (
    ContextView,
    SystemEntryDraft,
    load_context,
    plan_system_entries,
    render_section,
)
from pi_durable_tui.harness.conversations import fail_run
from pi_durable_tui.harness.extensions import SectionInput, invoke
from pi_durable_tui.harness.state import (
    LIVE_DOC,
    LOADED_TOOLS_DOC,
    SYSTEM,
    ResolvedAgent,
    add_model_usage,
    append_assistant,
    exposed_tools,
)
from pi_durable_tui.kernel import ConversationOwned, Failed, Report, TaskOwned, Tx, Waiting
from pi_durable_tui.storage.json_ops import Json, JsonObject

FIRST_CHECKPOINT: JsonObject = {"phase": "prepare", "attempt": 1}


def initial_checkpoint(task_input: Json) -> JsonObject:
    """A generation's first checkpoint: ``prepare``, or the ``request`` its creator planned."""
    if isinstance(task_input, dict) and isinstance(task_input.get("request"), dict):
        return dict(task_input["request"])
    return dict(FIRST_CHECKPOINT)


async def fail_generation(
    runtime: HarnessRuntime, reason: str, message: str, detail: Any = None
) -> None:
    """Fail the generation and its run in one commit (R83, R86)."""
    task_id = runtime.task_id
    conversation_id = runtime.conversation_id

    async def fail(tx: Tx) -> Failed:
        live = await tx.doc(LIVE_DOC, conversation_id)
        live.pop("generation", None)
        await fail_run(
            tx, conversation_id, task_id, reason, detail if detail is not None else message
        )
        return Failed(message, detail={"reason": reason})

    await runtime.commit(fail)


class PlanningScope(Protocol):
    """What planning a request reads of the task (or conversation) it plans for."""

    @property
    def conversation_id(self) -> int:
        """The conversation."""
        ...

    @property
    def aborted(self) -> asyncio.Event:
        """Set when the planning task is aborted: a section's error then propagates (R78)."""
        ...

    async def agent(self) -> ResolvedAgent:
        """The conversation's agent, resolved (R33)."""
        ...

    async def outcomes(self, task_ids: Sequence[int]) -> list[JsonObject]:
        """The outcomes of terminal tasks (an awaited compaction, R83)."""
        ...


@dataclass(frozen=True, slots=True)
class Decided:
    """A preparation that ends otherwise than in ``request``: ``commit(runtime)`` does it."""

    commit: Callable[[HarnessRuntime], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Preparation:
    """What R83's commit writes, planned outside the line."""

    conversation_id: int
    drafts: list[SystemEntryDraft]
    pinned: JsonObject
    tail: int
    background: bool
    compaction_task: Any
    view: ContextView

    async def apply(self, tx: Tx, tail: int | None = None) -> JsonObject:
        """Stage the system entries and the attempt's status; return the ``request`` checkpoint.

        ``tail``: the newest entry when the commit appended entries after the
        planned view (a tool result); the planned view's tail otherwise.
        """
        conversation_id = self.conversation_id
        cutoff = max(self.tail, tail or 0)
        for draft in self.drafts:
            cutoff = tx.append(conversation_id, SYSTEM, model=draft.model, edits=draft.edits).id
        live = await tx.doc(LIVE_DOC, conversation_id)
        # The request phase skips its opening commit when this is already so (R84).
        live["generation"] = {"attempt": self.pinned["attempt"]}
        if self.background and not live.get("compactions"):
            compaction = tx.create_task(
                self.compaction_task,
                {"reason": "threshold"},
                ownership=ConversationOwned(),
                conversation_id=conversation_id,
                background=True,
            )
            live["compactions"] = [
                *(live.get("compactions") or []),
                {"task_id": compaction.id, "reason": "threshold", "blocking": False, "attempt": 1},
            ]
        return {**self.pinned, "cutoff": cutoff}


async def _render_sections(
    runtime: PlanningScope, services: HarnessServices, view: ContextView
) -> list[tuple[str, str]]:
    """Render the agent's sections in order, ``instructions`` last (R77, R78)."""
    agent = await runtime.agent()
    shown = view.prompt.sections
    env: Any = None
    try:
        env = services.build_env(runtime.conversation_id, agent.cwd)
    except Exception as error:
        services.report(Report("env_failed", f"Building the environment failed: {error}", error))
    rendered: list[tuple[str, str]] = []
    for section in agent.sections:
        previous = shown.get(section.key)
        try:
            text = await invoke(
                section.render, SectionInput(runtime.conversation_id, agent, env, previous)
            )
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if runtime.aborted.is_set():
                raise
            services.report(
                Report("section_failed", f"Section {section.key} raised: {error}", error)
            )
            if previous is not None:
                rendered.append((section.key, previous))
            continue
        if text is not None:
            rendered.append((section.key, render_section(section.key, str(text), section.tag)))
    if agent.instructions:
        rendered.append(("instructions", render_section("instructions", agent.instructions)))
    return rendered


async def plan_request(
    runtime: PlanningScope,
    services: HarnessServices,
    checkpoint: JsonObject,
    coming: Sequence[JsonObject] = (),
) -> Preparation | Decided:
    """Plan a ``prepare`` checkpoint's move to ``request`` (R83, R108).

    Args:
        runtime: The runtime of the generation preparing, of the task settling a
            round for its successor (the same conversation), or the admission's scope.
        services: The harness services.
        checkpoint: The ``prepare`` checkpoint.
        coming: Messages the commit applying the plan appends before the planned
            entries (a tool result, a user message not committed yet): counted by
            the thresholds.

    Returns:
        The preparation, or the decision to fail or to compact first.

    Raises:
        RuntimeError: When the conversation has no entries to send and none are
            coming (R83).
    """
    attempt = int(checkpoint.get("attempt", 1))
    agent = await runtime.agent()
    if agent.model is None:
        return Decided(lambda task: fail_generation(task, "no_model", "No model is configured"))
    model = services.models.get(agent.model)
    if model is None:
        text = f"Model {agent.model} is not available"
        return Decided(lambda task: fail_generation(task, "no_model", text))
    if checkpoint.get("overflow") is not None:
        outcome = (await runtime.outcomes([int(checkpoint["compacted"])]))[0]
        result = outcome.get("result") if outcome.get("status") == "completed" else None
        if not (isinstance(result, dict) and result.get("entry_id")):
            text = str(checkpoint["overflow"])
            return Decided(lambda task: fail_generation(task, "model_error", text))
    view = await load_context(
        services.session.storage, runtime.conversation_id, cache=services.contexts
    )
    if not view.entries and not coming:
        raise RuntimeError(f"Conversation {runtime.conversation_id} has no entries to send")
    sections = await _render_sections(runtime, services, view)
    settings = services.settings()
    loaded = await services.session.snapshot(LOADED_TOOLS_DOC, runtime.conversation_id) or {}
    offered = exposed_tools(
        agent.tools, set(loaded.get("loaded") or ()), model, settings.tool_search_share
    )
    drafts = plan_system_entries(view, sections, [tool.declaration for tool in offered])
    compaction = settings.compaction
    background = False
    planned = [*coming, *(message for draft in drafts for message in draft.model)]
    blocking = model.context_window - compaction.reserve_tokens
    lowest = (
        blocking - compaction.background_tokens if compaction.background_tokens > 0 else blocking
    )
    if (
        compaction.enabled
        and model.context_window > 0
        and "compacted" not in checkpoint
        # REMINDER: a bound below both thresholds decides like the estimate would,
        # without loading a tokenizer or walking the range for a cut (R108).
        and tokens_upper_bound(view, planned) > lowest
    ):
        estimate = estimate_tokens(view, planned, model=model)
        cut = select_cut(view, compaction.keep_recent_tokens, model=model)
        if cut is not None and estimate > blocking:
            return Decided(
                lambda task: start_blocking_compaction(task, services, "threshold", attempt, None)
            )
        if (
            cut is not None
            and compaction.background_tokens > 0
            and estimate > blocking - compaction.background_tokens
        ):
            background = True
    pinned: JsonObject = {
        "phase": "request",
        "attempt": attempt,
        "model": {"provider": model.provider, "model_id": model.id},
        "thinking_level": agent.thinking_level,
        "stream_options": dict(settings.stream),
    }
    if "compacted" in checkpoint:
        pinned["compacted"] = checkpoint["compacted"]
    # REMINDER: the head marker comes first in ``view.entries``, and it may be the
    # newest entry (a compaction placed after the kept ones): the rest ascend.
    tail = max(view.entries[0].id, view.entries[-1].id) if view.entries else 0
    return Preparation(
        conversation_id=runtime.conversation_id,
        drafts=drafts,
        pinned=pinned,
        tail=tail,
        background=background,
        compaction_task=services.task_definition("pi.compaction"),
        view=view,
    )


async def start_blocking_compaction(
    runtime: HarnessRuntime,
    services: HarnessServices,
    reason: str,
    attempt: int,
    overflow: str | None,
    *,
    error: JsonObject | None = None,
) -> None:
    """Create a compaction owned by this generation and wait for it (R86, R108).

    For an overflow, the same commit files the failed response (``error``) and
    clears the attempt's status, so a crash never separates the two (R86).
    """
    conversation_id = runtime.conversation_id
    task_id = runtime.task_id

    async def start(tx: Tx) -> Waiting:
        if error is not None:
            append_assistant(tx, conversation_id, error)
            await add_model_usage(tx, conversation_id, error)
            (await tx.doc(LIVE_DOC, conversation_id)).pop("generation", None)
        compaction = tx.create_task(
            services.task_definition("pi.compaction"),
            {"reason": reason},
            ownership=TaskOwned(task_id),
        )
        live = await tx.doc(LIVE_DOC, conversation_id)
        live["compactions"] = [
            *(live.get("compactions") or []),
            {"task_id": compaction.id, "reason": reason, "blocking": True, "attempt": 1},
        ]
        checkpoint: JsonObject = {
            "phase": "prepare",
            "attempt": attempt,
            "compacted": compaction.id,
        }
        if overflow is not None:
            checkpoint["overflow"] = overflow
        return Waiting(on=[compaction.id], checkpoint=checkpoint)

    await runtime.commit(start)


class _AdmissionScope:
    """The planning scope of a conversation admitting an input: no task runs yet."""

    def __init__(self, services: HarnessServices, conversation_id: int) -> None:
        self._services = services
        self._agent: ResolvedAgent | None = None
        self.conversation_id = conversation_id
        self.aborted = asyncio.Event()  # never set: no invocation to abort yet

    async def agent(self) -> ResolvedAgent:
        if self._agent is None:  # resolved once per planning, as a phase does (R33)
            self._agent = await self._services.agent(self.conversation_id)
        return self._agent

    async def outcomes(self, task_ids: Sequence[int]) -> list[JsonObject]:
        raise RuntimeError("A first request awaits no task")  # FIRST_CHECKPOINT has none


async def plan_admitted_request(
    services: HarnessServices, conversation_id: int, coming: Sequence[JsonObject]
) -> Preparation | None:
    """Plan the first request of a run before the commit that admits its input (issue 14).

    The admission applies it after appending the user message, so the run's
    generation starts at ``request``; a failing or compacting decision, or a
    section that raised, leaves the generation to prepare itself (R83, R108).

    Args:
        services: The harness services.
        conversation_id: The idle conversation receiving the input.
        coming: The user message the admission appends.

    Returns:
        The preparation, or ``None``.
    """
    planned = await plan_request(
        _AdmissionScope(services, conversation_id), services, dict(FIRST_CHECKPOINT), coming
    )
    return planned if isinstance(planned, Preparation) else None
