"""The ownership tree of live tasks and conversations, and what follows from it.

Tasks and conversations form one tree (reference section 1.7): a task hangs from
its owner task or, if none, from its conversation; a conversation hangs from its
owner task or is a root. ``LiveIndex`` keeps that tree for live tasks in memory
(the Session loads it at open and updates it after every commit), and
``CandidateIndex`` overlays the records staged by one transaction, so rules
"judged on the committing transaction's candidate records" (R11, R53) see them.

The functions below are pure reads of an index:

- ordinary traversal and ordinary owned work (R-1.7): background tasks are
  visited but never entered;
- conversation idleness (R58);
- cancellation cascades (R48) and their owner chains.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

from pi_durable_tui.kernel._recent import RecentTasks
from pi_durable_tui.kernel.tasks._records import has_cancellation_intent
from pi_durable_tui.storage.records import ConversationRecord, TaskRecord


class TaskTree(Protocol):
    """Read access to the live part of the ownership tree."""

    def task(self, task_id: int) -> TaskRecord | None:
        """Return a live task (``None`` when terminal or unknown)."""
        ...

    def children(self, task_id: int) -> Iterable[int]:
        """Return the live tasks owned by a task."""
        ...

    def conversation_tasks(self, conversation_id: int) -> Iterable[int]:
        """Return the live conversation-owned tasks of a conversation."""
        ...

    def owned_conversations(self, task_id: int) -> Iterable[int]:
        """Return the conversations a task owns."""
        ...

    def conversation_owner(self, conversation_id: int) -> int | None:
        """Return the task owning a conversation, or ``None`` (root or unknown)."""
        ...


class LiveIndex:
    """Live tasks and the conversations around them, kept in memory by the Session."""

    def __init__(self) -> None:
        self._tasks: dict[int, TaskRecord] = {}
        self._children: dict[int, set[int]] = {}
        self._conversation_tasks: dict[int, set[int]] = {}
        self._owned: dict[int, list[int]] = {}
        self._owners: dict[int, int | None] = {}
        self.recent = RecentTasks()
        """What this Session committed about tasks that ended or were born here."""

    def tasks(self) -> list[TaskRecord]:
        """Return every live task in ID order."""
        return [self._tasks[i] for i in sorted(self._tasks)]

    def task(self, task_id: int) -> TaskRecord | None:
        """Return a live task."""
        return self._tasks.get(task_id)

    def children(self, task_id: int) -> Iterable[int]:
        """Return the live tasks owned by a task."""
        return sorted(self._children.get(task_id, ()))

    def conversation_tasks(self, conversation_id: int) -> Iterable[int]:
        """Return the live conversation-owned tasks of a conversation."""
        return sorted(self._conversation_tasks.get(conversation_id, ()))

    def owned_conversations(self, task_id: int) -> Iterable[int]:
        """Return the conversations a task owns, in ID order."""
        return self._owned.get(task_id, [])

    def conversation_owner(self, conversation_id: int) -> int | None:
        """Return the task owning a conversation."""
        return self._owners.get(conversation_id)

    def knows_conversation(self, conversation_id: int) -> bool:
        """Whether the conversation's record has been seen."""
        return conversation_id in self._owners

    def add_conversation(self, record: ConversationRecord) -> None:
        """Remember a conversation's owner (conversation records are immutable)."""
        if record.id in self._owners:
            return
        owner = record.owner.task_id if record.owner is not None else None
        self._owners[record.id] = owner
        if owner is not None:
            owned = self._owned.setdefault(owner, [])
            owned.append(record.id)
            owned.sort()

    def put_task(self, record: TaskRecord) -> None:
        """Adopt a task's newest committed record (a terminal one leaves the index)."""
        self._unlink(record.id)
        if not record.is_live:
            self._tasks.pop(record.id, None)
            self.recent.adopt_ended(record)
            return
        self._tasks[record.id] = record
        if record.owner is not None:
            self._children.setdefault(record.owner, set()).add(record.id)
        else:
            self._conversation_tasks.setdefault(record.conversation_id, set()).add(record.id)

    def _unlink(self, task_id: int) -> None:
        old = self._tasks.get(task_id)
        if old is None:
            return
        if old.owner is not None:
            self._children.get(old.owner, set()).discard(task_id)
        else:
            self._conversation_tasks.get(old.conversation_id, set()).discard(task_id)


class CandidateIndex:
    """A ``LiveIndex`` seen through the records one transaction has staged."""

    def __init__(
        self,
        base: LiveIndex,
        tasks: dict[int, TaskRecord],
        conversations: dict[int, ConversationRecord],
    ) -> None:
        self._base = base
        self._tasks = tasks
        self._conversations = conversations

    def task(self, task_id: int) -> TaskRecord | None:
        """Return a task's candidate record if it is live."""
        if task_id in self._tasks:
            record = self._tasks[task_id]
            return record if record.is_live else None
        return self._base.task(task_id)

    def _live_ids(self, base_ids: Iterable[int], staged: Iterable[int]) -> list[int]:
        ids = set(base_ids) | set(staged)
        return sorted(i for i in ids if self.task(i) is not None)

    def children(self, task_id: int) -> Iterable[int]:
        """Return the live tasks a task owns, counting staged ones."""
        staged = (r.id for r in self._tasks.values() if r.owner == task_id)
        return self._live_ids(self._base.children(task_id), staged)

    def conversation_tasks(self, conversation_id: int) -> Iterable[int]:
        """Return the live conversation-owned tasks of a conversation, counting staged ones."""
        staged = (
            r.id
            for r in self._tasks.values()
            if r.owner is None and r.conversation_id == conversation_id
        )
        return self._live_ids(self._base.conversation_tasks(conversation_id), staged)

    def owned_conversations(self, task_id: int) -> Iterable[int]:
        """Return the conversations a task owns, counting staged ones."""
        staged = [
            c.id
            for c in self._conversations.values()
            if c.owner is not None and c.owner.task_id == task_id
        ]
        return sorted({*self._base.owned_conversations(task_id), *staged})

    def conversation_owner(self, conversation_id: int) -> int | None:
        """Return the task owning a conversation, counting staged conversations."""
        staged = self._conversations.get(conversation_id)
        if staged is not None:
            return staged.owner.task_id if staged.owner is not None else None
        return self._base.conversation_owner(conversation_id)


def _below_task(tree: TaskTree, task_id: int, cross_background: bool) -> Iterator[TaskRecord]:
    """Yield live tasks reached below a task by (ordinary) traversal."""
    for child in tree.children(task_id):
        record = tree.task(child)
        if record is not None:
            yield record
            if cross_background or not record.background:
                yield from _below_task(tree, child, cross_background)
    for conversation_id in tree.owned_conversations(task_id):
        yield from traverse_conversation(tree, conversation_id, cross_background)


def traverse_conversation(
    tree: TaskTree, conversation_id: int, cross_background: bool = False
) -> Iterator[TaskRecord]:
    """Yield every live task reached from a conversation (R-1.7).

    Ordinary traversal visits the conversation's own tasks, and, below each
    non-background one, the tasks and conversations it owns. With
    ``cross_background`` the traversal also enters background tasks (R57).
    """
    for task_id in tree.conversation_tasks(conversation_id):
        record = tree.task(task_id)
        if record is None:
            continue
        yield record
        if cross_background or not record.background:
            yield from _below_task(tree, task_id, cross_background)


def ordinary_owned_work(tree: TaskTree, task_id: int) -> list[int]:
    """Return the live non-background tasks ordinary traversal reaches below a task (R-1.7)."""
    return sorted({r.id for r in _below_task(tree, task_id, False) if not r.background})


def conversation_busy_tasks(tree: TaskTree, conversation_id: int) -> list[int]:
    """Return the live non-background tasks that keep a conversation from being idle (R58)."""
    return sorted({r.id for r in traverse_conversation(tree, conversation_id) if not r.background})


def owner_of(tree: TaskTree, record: TaskRecord) -> int | None:
    """Return the task a task hangs from: its owner, or its conversation's owner."""
    if record.owner is not None:
        return record.owner
    return tree.conversation_owner(record.conversation_id)


def owner_chain(tree: TaskTree, record: TaskRecord) -> Iterator[TaskRecord]:
    """Yield the live tasks above a task, nearest first, up to the first terminal owner."""
    seen = {record.id}
    current = owner_of(tree, record)
    while current is not None and current not in seen:
        seen.add(current)
        owner = tree.task(current)
        if owner is None:  # a terminal owner never cascades
            return
        yield owner
        current = owner_of(tree, owner)


def cascade_source(tree: TaskTree, record: TaskRecord) -> TaskRecord | None:
    """Return the live owner whose cancellation intent reaches a task, if any (R48).

    A background task is never reached (it is a boundary; only an explicit abort
    marks it). The walk up stops at a background owner without intent of its
    own, and at a terminal owner.
    """
    if record.background:
        return None
    for owner in owner_chain(tree, record):
        if has_cancellation_intent(owner):
            return owner
        if owner.background:
            return None
    return None


def cascade_targets(tree: LiveIndex) -> list[TaskRecord]:
    """Return live non-background tasks without an abort mark that a cascade reaches (R48)."""
    return [
        record
        for record in tree.tasks()
        if not record.background
        and not record.abort_requested
        and cascade_source(tree, record) is not None
    ]
