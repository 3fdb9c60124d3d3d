"""``RecentTasks``: what this Session itself committed about tasks, kept to spare reads.

Three questions a round asks of storage have answers this process already holds,
because it wrote them:

- the record of a task that just ended (a generation reads its tool tasks'
  outcomes right after they end, R52): the newest ``RECENT_ENDED`` terminal records
  adopted by this Session;
- whether a task that ends owns documents to retire (R56): for a task created by
  this Session, only documents this Session created under it can exist.

# REMINDER: both answers are true only because the store has a single writer (the
# single-writer lock, ``storage/lock.py``): no other process can end a task or add
# a document under one behind this Session's back. A task created before this
# Session opened is not "born" here and is always asked of storage.
# ``tests/kernel/test_recent.py`` checks what memory served against a
# reopened store.
"""

from __future__ import annotations

from collections import OrderedDict

from pi_durable_tui.storage.records import TaskRecord

RECENT_ENDED = 256
"""How many terminal task records a Session keeps in memory."""


class RecentTasks:
    """Terminal records and document ownership of tasks this Session committed."""

    def __init__(self) -> None:
        self._ended: OrderedDict[int, TaskRecord] = OrderedDict()
        self._born: set[int] = set()
        self._with_documents: set[int] = set()

    def ended(self, task_id: int) -> TaskRecord | None:
        """Return a terminal record this Session committed recently, if it holds one."""
        return self._ended.get(task_id)

    def adopt_ended(self, record: TaskRecord) -> None:
        """Keep the terminal record of a task; forget what its documents were."""
        self._ended[record.id] = record
        self._ended.move_to_end(record.id)
        while len(self._ended) > RECENT_ENDED:
            self._ended.popitem(last=False)
        self._born.discard(record.id)
        self._with_documents.discard(record.id)

    def born(self, task_id: int) -> None:
        """Note a task this Session created (its documents all pass through this Session)."""
        self._born.add(task_id)

    def has_documents(self, task_id: int) -> None:
        """Note that a commit of this Session wrote a document under the task."""
        self._with_documents.add(task_id)

    def owns_no_documents(self, task_id: int) -> bool:
        """Whether the task certainly has no stored documents (born here, none written)."""
        return task_id in self._born and task_id not in self._with_documents
