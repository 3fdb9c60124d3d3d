"""How a run ends: answers, failures, aborts and scheduler cleanup (R64, R65, R83, R86, R91, R45).

These functions run inside one commit and edit ``pi.live`` in place:

- ``convert_partial``: a committed streamed partial becomes one ``pi.assistant``
  entry with stop reason ``aborted`` (usage counted) (R84, R91, R92, R45);
- ``answer``: the final boundary, then either settle the run's inputs ``done``
  with the answer and start a successor run for the placed user items, or, for an
  ``on_yield`` continuation that applies, go on with the same inputs (R64, R65);
- ``fail_run``: settle the run's inputs ``unanswered`` with a reason and end the
  run; the inbox is left alone (R64).
"""

from __future__ import annotations

from pi_durable_tui.harness._services import HarnessServices
from pi_durable_tui.harness.conversations._inbox import run_boundary, settle, start_run
from pi_durable_tui.harness.state import (
    LIVE_DOC,
    add_model_usage,
    append_assistant,
    append_user,
    end_run,
    run_inputs,
)
from pi_durable_tui.kernel import Tx
from pi_durable_tui.storage.json_ops import Json, JsonObject

ABORTED = "Request was aborted"
"""The error message of a partial kept when its request was aborted (R92)."""
INTERRUPTED_PARTIAL = "The response was cut off: the process stopped while it streamed"
"""The error message of a partial an interrupted attempt left, kept by the next (R84).

The screen tells such a partial (the answer the next attempt writes again) from
one the user aborted by this message (issue 12)."""


async def convert_partial(
    tx: Tx, conversation_id: int, live: JsonObject, why: str = ABORTED
) -> int | None:
    """Turn a committed partial into an aborted assistant entry; returns its ID (R84, R92).

    Args:
        tx: The commit.
        conversation_id: The conversation.
        live: Its ``pi.live`` draft.
        why: The entry's error message: an abort, or (``INTERRUPTED_PARTIAL``) a partial an
            interrupted attempt left behind, found by the next attempt.
    """
    generation = live.get("generation")
    if not isinstance(generation, dict) or not isinstance(generation.get("message"), dict):
        return None
    message = generation["message"]
    message = dict(message)
    message["stop_reason"] = "aborted"
    message.setdefault("error_message", why)
    entry = append_assistant(tx, conversation_id, message)
    await add_model_usage(tx, conversation_id, message)
    generation.pop("message", None)
    return entry.id


async def answer(
    tx: Tx,
    services: HarnessServices,
    conversation_id: int,
    answer_entry: int,
    continuation: str | None = None,
    *,
    head: int | None = None,
) -> None:
    """Settle the run with its answer and apply the final boundary (R64, R65).

    Args:
        tx: The classification commit (it already appended ``answer_entry``).
        services: The harness services.
        conversation_id: The conversation.
        answer_entry: The final assistant entry (or the tool-calling one).
        continuation: An ``on_yield`` continuation to apply if nothing was placed.
        head: The ``head`` of a head marker this commit appended (a handoff's reset).
    """
    live = await tx.doc(LIVE_DOC, conversation_id)
    inputs = run_inputs(live)
    live.pop("generation", None)
    live.pop("tools", None)
    boundary = await run_boundary(tx, services, conversation_id, "final", head=head)
    if continuation is not None and not boundary.user_inputs and not boundary.reset:
        append_user(tx, conversation_id, continuation, services.session.clock.now())
        start_run(tx, services, conversation_id, live, inputs)
        return
    await settle(tx, inputs, "done", answer=answer_entry)
    if boundary.user_inputs:
        start_run(tx, services, conversation_id, live, boundary.user_inputs)
    else:
        end_run(live)


async def fail_run(
    tx: Tx, conversation_id: int, task_id: int | None, reason: str, detail: Json = None
) -> None:
    """Settle the run's inputs ``unanswered`` and end the run (R64).

    Args:
        tx: The commit.
        conversation_id: The conversation.
        task_id: Only end the run when this task holds it (``None``: whatever holds it).
        reason: ``model_error``, ``no_model``, ``aborted``, ``faulted``, ...
        detail: The error text or message, for people.
    """
    live = await tx.doc(LIVE_DOC, conversation_id)
    run = live.get("run")
    if not isinstance(run, dict) or (task_id is not None and run.get("task_id") != task_id):
        return
    await convert_partial(tx, conversation_id, live)
    await settle(tx, run_inputs(live), "unanswered", reason=reason, detail=detail)
    end_run(live)
