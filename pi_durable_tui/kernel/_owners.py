"""How new work names its owner: the ownership arguments of ``Tx`` (R11, reference 1.3, 1.7).

Creation always states ownership explicitly:

- a task is ``ConversationOwned()`` (it hangs from its conversation, and only such a
  task may be ``background``) or ``TaskOwned(task_id)`` (it hangs from a live task
  and lives in that task's conversation);
- a conversation is ``Ownerless()`` (a root) or ``TaskOwned(task_id)``; the owner's
  conversation is derived from the task record, never written by callers.

Whether the owner may take new work is judged when the commit prepares (the
tasks part, R11); these are plain values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias


@dataclass(frozen=True, slots=True)
class ConversationOwned:
    """Ownership of a task by its conversation (optionally a background task)."""


@dataclass(frozen=True, slots=True)
class TaskOwned:
    """Ownership of a task or conversation by a live task."""

    task_id: int


@dataclass(frozen=True, slots=True)
class Ownerless:
    """A root conversation, owned by no task."""


TaskOwnership: TypeAlias = ConversationOwned | TaskOwned
"""What ``Tx.create_task`` accepts as ``ownership``."""

ConversationOwnership: TypeAlias = Ownerless | TaskOwned
"""What ``Tx.create_conversation`` and ``Tx.fork_conversation`` accept as ``ownership``."""
