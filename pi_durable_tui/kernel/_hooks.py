"""Extension points the layer above the kernel fills in, and reports.

The kernel knows nothing of chats, runs or inboxes. Where a kernel rule needs the
harness to act inside the same commit, it calls a ``SessionHooks`` method:

- ``conversation_created``: every commit that creates or forks a conversation,
  before the commit prepares (R25);
- ``scheduler_outcome``: the commit that makes a scheduler-written outcome
  (``faulted``, ``orphaned``) final, for cleanup (R45, R54);
- ``conversations_cancelled``: an abort reached these conversations; the
  harness withdraws their queued inputs in the same commit. A conversation abort
  passes the conversation itself and those its marked tasks own (R57), in the
  marking commit; a cascade passes the conversations strictly below an owner with
  cancellation intent (R48), in a reconcile commit, once while the cascade
  reaches them;
- ``filter_json``: every JSON value a commit stores (an entry's messages, data
  and edits, a task's input, state and memos, a submission's detail and reason,
  a document's value) passes through it just before storage, and what it
  returns is stored and published instead. The harness redacts secret values
  here, at the moment of commit, so no author of a commit can forget to
  (DESIGN.md section 7).

Problems that must not fail an operation (a listener raising, a definition that
cannot take a task, a migration that threw) become ``Report``s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pi_durable_tui.storage.json_ops import Json, JsonObject
from pi_durable_tui.storage.records import ConversationRecord, TaskRecord

if TYPE_CHECKING:
    from pi_durable_tui.kernel._tx import Tx


@dataclass(frozen=True, slots=True)
class Report:
    """A problem reported instead of raised (``onReport`` in the reference)."""

    code: str
    message: str
    error: BaseException | None = None
    task_id: int | None = None


class SessionHooks:
    """Default hooks: do nothing. Subclass to add behavior."""

    async def conversation_created(self, tx: Tx, record: ConversationRecord) -> None:
        """Called in every commit that creates or forks a conversation (R25)."""

    async def scheduler_outcome(self, tx: Tx, task: TaskRecord, outcome: JsonObject) -> None:
        """Called in the commit that makes a ``faulted`` or ``orphaned`` outcome final (R45)."""

    async def conversations_cancelled(self, tx: Tx, conversation_ids: list[int]) -> None:
        """Called when an abort reaches conversations; their queued inputs go (R48, R57)."""

    def filter_json(self, value: Json) -> Json:
        """Return what a commit stores in place of ``value`` (the value itself by default).

        # REMINDER: runs on every commit's values; return the same object when
        # nothing changes, so unchanged values cost no copy.
        """
        return value
