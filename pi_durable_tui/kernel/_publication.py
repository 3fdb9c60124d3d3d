"""What a commit publishes, and the listeners that receive it (R2).

After storage confirms a commit, the Session adopts it (its caches and live
index) and then publishes one ``CommitInfo`` to every listener, in commit order.
Nothing is published for a commit that storage did not confirm, so everything
downstream (document states, watches, views, waiters, the scheduler) only ever
sees committed state.

Listeners run synchronously on the line and must not raise; a listener that
raises is removed and reported, so one faulty observer cannot stall commits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pi_durable_tui.kernel.docs import DocChange
from pi_durable_tui.storage.records import (
    ConversationRecord,
    EntryRecord,
    SubmissionRecord,
    TaskRecord,
)


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """Everything one commit changed, in the order it was staged."""

    seq: int
    conversations: tuple[ConversationRecord, ...] = ()
    entries: tuple[EntryRecord, ...] = ()
    tasks: tuple[TaskRecord, ...] = ()
    """New records of every task written, including terminal ones."""
    previous_tasks: dict[int, TaskRecord | None] = field(default_factory=dict)
    """The live record each written task had before (``None`` for a new task)."""
    submissions: tuple[SubmissionRecord, ...] = ()
    documents: tuple[DocChange, ...] = ()
    stored: bool = True
    """False for a commit that changed only the live index (``StagedCommit.reserve_task``)."""


Listener = Callable[[CommitInfo], None]


class Publisher:
    """An ordered set of commit listeners.

    Args:
        on_error: Called with a listener's exception before the listener is removed.
    """

    def __init__(self, on_error: Callable[[BaseException], None]) -> None:
        self._listeners: dict[int, Listener] = {}
        self._next = 0
        self._on_error = on_error

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Add a listener; returns a function that removes it (idempotent)."""
        key = self._next
        self._next += 1
        self._listeners[key] = listener

        def unsubscribe() -> None:
            self._listeners.pop(key, None)

        return unsubscribe

    def publish(self, info: CommitInfo) -> None:
        """Deliver a commit to every listener, in subscription order."""
        for key, listener in list(self._listeners.items()):
            if key not in self._listeners:
                continue
            try:
                listener(info)
            except Exception as error:  # REMINDER: commits never fail because of an observer.
                self._listeners.pop(key, None)
                self._on_error(error)
