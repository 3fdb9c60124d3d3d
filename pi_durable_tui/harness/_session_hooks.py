"""The harness's answers to the kernel's hooks (R25, R45, R48, R57).

- ``conversation_created``: the creation hook (R25, see ``_creation``);
- ``scheduler_outcome``: cleanup in the commit that makes a ``faulted`` or
  ``orphaned`` outcome final (R45): a run the task held ends (a committed partial
  becomes an aborted assistant entry, the inputs settle ``unanswered`` with
  ``faulted`` or the orphan reason); a tool task's slot is marked ``done`` without
  an entry (context derivation later synthesizes the missing result, R74); a
  compaction's status is removed;
- ``conversations_cancelled``: an abort reached these conversations; their queued
  inputs are withdrawn, their queued writes stay (R48, R57, R67);
- ``filter_json``: every value a commit stores passes through the harness's
  ``SecretRedactor`` (issue 13): answer text, thinking, tool arguments, tool
  output, errors, notices, titles and documents are redacted at the moment of
  commit, whoever wrote them.
"""

from __future__ import annotations

from pi_durable_tui.env import SecretRedactor
from pi_durable_tui.harness.conversations import CreationHook, fail_run, withdraw_inputs
from pi_durable_tui.harness.state import LIVE_DOC, remove_compaction, slot_of_task
from pi_durable_tui.kernel import SessionHooks, Tx
from pi_durable_tui.storage.json_ops import Json, JsonObject
from pi_durable_tui.storage.records import ConversationRecord, TaskRecord


class HarnessHooks(SessionHooks):
    """Session hooks of one harness.

    Args:
        creation: The creation hook shared with the conveniences.
        redactor: Hides secret values in everything committed.
    """

    def __init__(self, creation: CreationHook, redactor: SecretRedactor) -> None:
        self._creation = creation
        self._redactor = redactor

    def filter_json(self, value: Json) -> Json:
        """Redact every secret value in what a commit stores (issue 13)."""
        result: Json = self._redactor.json(value)
        return result

    async def conversation_created(self, tx: Tx, record: ConversationRecord) -> None:
        """Initialize a conversation in its creating commit (R25)."""
        await self._creation.on_commit_prepare(tx, record)

    async def scheduler_outcome(self, tx: Tx, task: TaskRecord, outcome: JsonObject) -> None:
        """Clean up after a scheduler-written outcome (R45)."""
        if outcome.get("status") == "faulted":
            reason = "faulted"
            error = outcome.get("error")
            detail = error.get("message") if isinstance(error, dict) else None
        else:
            reason = str(outcome.get("reason") or "orphaned")
            detail = None
        conversation_id = task.conversation_id
        await fail_run(tx, conversation_id, task.id, reason, detail)
        if task.kind == "pi.tool":
            live = await tx.doc(LIVE_DOC, conversation_id)
            slot = slot_of_task(live, task.id)
            if slot is not None:
                slot["status"] = "done"
                for key in ("output", "dropped_bytes", "dropped_lines", "details", "diagnostics"):
                    slot.pop(key, None)
        elif task.kind == "pi.compaction":
            remove_compaction(await tx.doc(LIVE_DOC, conversation_id), task.id)

    async def conversations_cancelled(self, tx: Tx, conversation_ids: list[int]) -> None:
        """Withdraw the queued inputs of conversations an abort reached (R48, R57)."""
        for conversation_id in conversation_ids:
            await withdraw_inputs(tx, conversation_id)
