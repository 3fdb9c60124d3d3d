"""Durable tasks: definitions, the runtime, and the scheduler (R11, R22, R23, R35-R58, R126).

A part of the kernel, not a public face: authors import the public names
(``define_task``, ``TaskDefinition``, ``TaskRuntime``, ``TaskRegistry``, the
states ``Running`` ... ``Aborted``) from ``pi_durable_tui.kernel``. The commit
line uses the rest.

Its private modules, in the direction their imports run (each imports only
modules listed before it):

- ``_states``, ``_records``: what a phase returns, and reading task records;
- ``_ownership``: the live ownership tree, traversals and cascades (R-1.7, R48);
- ``_host``: ``TaskHost``, what this part needs from the Session (a protocol the
  commit line satisfies, so nothing here imports the Session);
- ``_transitions``: state changes judged on a commit's candidate records (R11,
  R38, R51-R56);
- ``_runtime``: ``TaskRuntime``, what phases and abort handlers may do (R38-R43);
- ``_definitions``, ``_registry``: ``define_task`` and the registry (R32, R35);
- ``_resolution``: which definition takes a task, blocked reasons (R35, R44);
- ``_waits``, ``_backoff``: waiters resolved by publications (R56, R58), and
  retries of failed scheduler writes (R45);
- ``_invocations``: running phases and abort handlers, the step (R37, R43);
- ``_reconcile``: derived marks and held tasks that drained (R48, R52-R54);
- ``_aborts``: explicit aborts and orphaning (R46, R49, R57);
- ``_scheduler``: the loop, its passes, reservation (R22, R23, R36);
- ``_inspection``: ``inspect()`` and the task graph (R28, R126).

Outside itself, this package imports only the commit line's lower levels
(``kernel._errors``, ``_clock``, ``_staging``, ``_tx``, ``_hooks``,
``_publication``), never the Session.
"""

from pi_durable_tui.kernel.tasks._backoff import BASE_DELAY_MS, MAX_DELAY_MS
from pi_durable_tui.kernel.tasks._continuations import Continuation
from pi_durable_tui.kernel.tasks._definitions import (
    AbortHandler,
    PhaseHandler,
    TaskDefinition,
    define_task,
)
from pi_durable_tui.kernel.tasks._inspection import TaskGraphState, inspect_tasks, task_graph
from pi_durable_tui.kernel.tasks._ownership import (
    LiveIndex,
    conversation_busy_tasks,
    ordinary_owned_work,
)
from pi_durable_tui.kernel.tasks._registry import TaskRegistry
from pi_durable_tui.kernel.tasks._runtime import TaskRuntime
from pi_durable_tui.kernel.tasks._scheduler import Scheduler
from pi_durable_tui.kernel.tasks._states import (
    Aborted,
    Completed,
    Failed,
    Running,
    TaskState,
    Waiting,
)
from pi_durable_tui.kernel.tasks._transitions import prepare_commit

__all__ = [
    "BASE_DELAY_MS",
    "MAX_DELAY_MS",
    "AbortHandler",
    "Aborted",
    "Completed",
    "Continuation",
    "Failed",
    "LiveIndex",
    "PhaseHandler",
    "Running",
    "Scheduler",
    "TaskDefinition",
    "TaskGraphState",
    "TaskRegistry",
    "TaskRuntime",
    "TaskState",
    "Waiting",
    "conversation_busy_tasks",
    "define_task",
    "inspect_tasks",
    "ordinary_owned_work",
    "prepare_commit",
    "task_graph",
]
