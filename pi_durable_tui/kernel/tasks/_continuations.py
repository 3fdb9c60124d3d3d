"""``Continuation``: a waiting task's next step, run in the commit that ends its wait (issue 14).

A task that waits (``Waiting(on=[...])``) normally moves on in a commit of its
own: the commit that ends the last task it waits on lands, the scheduler reserves
the waiter, its phase runs and commits. When the waiter's next step needs nothing
but that commit's state, the task that ends the wait may carry the step with its
own commit: ``runtime.commit(fn, then=Continuation(task_id, definition, step))``.
When the commit prepares, after the committing task's own state is staged (so the
owned-work rules of R53 have judged it), ``run_continuation`` checks that the wait
ends with this commit and that nothing else would stop the waiter from running now:

- the waiter is ``waiting``, carries no abort mark and no owner's cancellation
  intent reaches it (R47, R48);
- every task in its ``on`` is no longer live once the commit lands (R56);
- it runs under the definition the step comes from (same name and version: a task
  that needs a migration, R44, is left to the scheduler).

Then ``step(tx)`` runs on the line as the waiter (entries it appends get the
waiter's ``by_task_id``) and may return the waiter's next state, applied like a
runtime commit's (R38, R51-R53). Otherwise the step does not run and the waiter
moves on as before; a step is an optimisation, never the only way on.

# REMINDER: the step runs inside a commit callback: no model call, no process, no
# file I/O, no extension code (DESIGN.md section 2). Work of that kind is done
# before the commit, by whoever builds the step. Either way the commit is atomic:
# a crash before it lands leaves the wait as it was, and recovery takes the
# waiter's ordinary path (its phase, from its durable checkpoint).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pi_durable_tui.kernel._staging import StagedCommit
from pi_durable_tui.kernel._tx import Tx
from pi_durable_tui.kernel.tasks._host import TaskHost
from pi_durable_tui.kernel.tasks._ownership import TaskTree, cascade_source
from pi_durable_tui.kernel.tasks._states import Aborted, Completed, Failed, Running, Waiting
from pi_durable_tui.kernel.tasks._transitions import apply_state, candidate_index
from pi_durable_tui.storage.records import TaskRecord


class TaskKind(Protocol):
    """What a continuation needs of its task definition: the name and the version."""

    @property
    def name(self) -> str:
        """The task kind."""
        ...

    @property
    def version(self) -> int:
        """The definition's version."""
        ...


Builder = Callable[..., Awaitable["Continuation | None"]]
"""A waiting task's offer: ``builder(waiter_record, *args)`` prepares its step, or declines."""


class ContinuationOffers:
    """The steps waiting tasks offer to the task that will end their wait (in memory).

    A waiter offers a builder (``TaskRuntime.offer_continuation``); the task whose
    commit will end the wait asks for it before that commit
    (``TaskRuntime.continuation``), runs it outside the line (it may call extension
    code) and passes what it returns as ``then``. An offer is used once, and dropped
    when the waiter's next invocation starts: nothing here is durable, and a
    missing offer only means the waiter moves on in a commit of its own.
    """

    def __init__(self) -> None:
        self._builders: dict[int, Builder] = {}
        self._ending: set[int] = set()
        """Tasks that asked (``take``): each is about to commit its end."""

    def offer(self, task_id: int, builder: Builder) -> None:
        """Keep ``builder`` for the waiting task ``task_id`` (replacing an earlier one)."""
        self._builders[task_id] = builder

    def drop(self, task_id: int) -> None:
        """Forget a task's offer and its ending (its next invocation starts)."""
        self._builders.pop(task_id, None)
        self._ending.discard(task_id)

    def take(self, live: TaskTree, ending: int) -> tuple[TaskRecord, Builder] | None:
        """The offer of a waiter whose wait ends when ``ending`` ends, removed; or ``None``.

        Tasks of the wait that asked before ``ending`` count as ending too: of tasks
        ending side by side, the last to ask takes the offer. Whether its commit
        really ends the wait is judged on the line (``run_continuation``).
        """
        self._ending = {i for i in self._ending if live.task(i) is not None}
        self._ending.add(ending)
        for task_id in list(self._builders):
            record = live.task(task_id)
            if record is None:
                del self._builders[task_id]  # the waiter ended: its offer is stale
                continue
            if record.status != "waiting":
                continue
            on: list[int] = record.state["on"]
            if ending in on and all(i in self._ending or live.task(i) is None for i in on):
                return record, self._builders.pop(task_id)
        return None


@dataclass(frozen=True, slots=True)
class Continuation:
    """A waiting task's next step, for the commit that ends its wait.

    Attributes:
        task_id: The waiting task.
        definition: The definition the step belongs to (name and version checked).
        step: Receives the ``Tx`` of the commit; may return the waiter's next state.
    """

    task_id: int
    definition: TaskKind
    step: Callable[[Tx], Awaitable[Any] | Any]


async def run_continuation(host: TaskHost, staged: StagedCommit, then: Continuation) -> bool:
    """Run ``then.step`` as the waiter when this commit ends its wait; whether it ran.

    Raises:
        Exception: Whatever the step raised; the commit then lands nothing.
    """
    record = staged.candidate_task(then.task_id)
    if (
        record is None
        or record.status != "waiting"
        or record.abort_requested
        or record.kind != then.definition.name
        or record.version != then.definition.version
    ):
        return False
    index = candidate_index(host, staged)
    on: list[int] = record.state["on"]
    if any(index.task(task_id) is not None for task_id in on):
        return False
    if cascade_source(index, record) is not None:
        return False
    origin = staged.origin_task
    staged.origin_task = record.id
    try:
        state = then.step(Tx(staged))
        if inspect.isawaitable(state):
            state = await state
    finally:
        staged.origin_task = origin
    if isinstance(state, (Running, Waiting, Completed, Failed, Aborted)):
        await apply_state(host, staged, record.id, state)
    return True
