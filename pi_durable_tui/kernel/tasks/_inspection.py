"""Read-only views of the scheduler: ``inspect()`` (R28) and the task graph (R126).

Neither writes anything, runs task code, or enables scheduling (R23).

- ``inspect_tasks`` reads at one point of the line: the scheduling mode, every
  live task with its activity (``running``, ``completing``, ``waiting {on}``,
  ``ready {migrates}`` or ``blocked {reason, error?}``), and the queued and placed
  submissions in ID order (R28).
- The task graph holds every live task as a node; ``TaskGraphState`` keeps it
  current from commit publications (a node appears with the commit that creates
  the task and disappears with the one that makes it terminal) until the
  Session starts closing (R126, R27).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pi_durable_tui.kernel._publication import CommitInfo
from pi_durable_tui.kernel._staging import StagedCommit
from pi_durable_tui.kernel.tasks._host import TaskHost
from pi_durable_tui.kernel.tasks._ownership import LiveIndex, ordinary_owned_work
from pi_durable_tui.kernel.tasks._resolution import block_reason
from pi_durable_tui.kernel.tasks._scheduler import Scheduler
from pi_durable_tui.storage.json_ops import Json, JsonObject, copy_json
from pi_durable_tui.storage.records import SubmissionRecord, TaskRecord

Scheduling = Literal["paused", "running", "closing"]


def task_node(live: LiveIndex, record: TaskRecord) -> JsonObject:
    """Return the task-graph node of a live task (R126)."""
    state = record.state
    status = state["status"]
    checkpoint = state.get("checkpoint")
    phase = checkpoint.get("phase") if isinstance(checkpoint, dict) else None
    node_state: JsonObject
    if status in ("pending", "running"):
        node_state = {"status": status, "phase": phase}
    elif status == "waiting":
        node_state = {
            "status": "waiting",
            "phase": phase,
            "on": copy_json(state["on"]),
            "policy": state["policy"],
        }
    else:
        outcome = state["outcome"]
        node_state = {"status": "completing", "outcome": outcome["status"]}
    node: JsonObject = {
        "id": record.id,
        "kind": record.kind,
        "conversation_id": record.conversation_id,
        "background": record.background,
        "abort_requested": record.abort_requested,
        "state": node_state,
        "conversations": list(live.owned_conversations(record.id)),
    }
    if record.owner is not None:
        node["owner"] = record.owner
    return node


def task_graph(live: LiveIndex) -> JsonObject:
    """Return ``{"tasks": {"<id>": node}}`` for every live task (R126)."""
    return {"tasks": {str(r.id): task_node(live, r) for r in live.tasks()}}


class TaskGraphState:
    """The task graph, kept current by commit publications; read ``value`` or subscribe.

    Args:
        host: The Session whose commits it follows.
    """

    def __init__(self, host: TaskHost) -> None:
        self._host = host
        self._value = task_graph(host.live)
        self._listeners: list[Callable[[JsonObject], None]] = []
        self._unsubscribe = host.subscribe(self._on_commit)

    @property
    def value(self) -> JsonObject:
        """A copy of the current graph."""
        return copy_json(self._value)  # type: ignore[return-value]

    def subscribe(self, listener: Callable[[JsonObject], None]) -> Callable[[], None]:
        """Call ``listener(graph)`` after each commit that changes the graph."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def close(self) -> None:
        """Stop following commits."""
        self._unsubscribe()

    def _on_commit(self, info: CommitInfo) -> None:
        # REMINDER: like every watch, the graph ends at the seal of close() and keeps
        # its last value; commits that settle during close are not shown (R27).
        if self._host.closing or (not info.tasks and not info.conversations):
            return
        graph = task_graph(self._host.live)
        if graph == self._value:
            return
        self._value = graph
        for listener in list(self._listeners):
            listener(copy_json(graph))  # type: ignore[arg-type]


def _activity(live: LiveIndex, scheduler: Scheduler, record: TaskRecord) -> JsonObject:
    if record.id in scheduler.invocations:
        return {"running": True}
    status = record.status
    if status == "completing":
        return {"completing": True}
    if record.abort_requested:
        owned = ordinary_owned_work(live, record.id)
        if owned:
            return {"waiting": {"on": list[Json](owned)}}
    elif status == "waiting":
        on: list[int] = record.state["on"]
        pending: list[Json] = [i for i in on if live.task(i) is not None]
        if pending:
            return {"waiting": {"on": pending}}
    definition = scheduler.resolution.registry.get(record.kind)
    blocked = block_reason(record, definition, scheduler.blocked.get(record.id))
    if blocked is not None:
        data: JsonObject = {"reason": blocked.reason}
        if blocked.error is not None:
            data["error"] = str(blocked.error)
        return {"blocked": data}
    assert definition is not None
    return {"ready": {"migrates": record.version < definition.version}}


async def inspect_tasks(host: TaskHost, scheduler: Scheduler) -> JsonObject:
    """Return ``{scheduling, tasks, submissions}`` at one point of the line (R28).

    Writes nothing and runs no task code.
    """
    result: dict[str, Any] = {}

    async def read(_staged: StagedCommit) -> None:
        scheduling: Scheduling = (
            "closing" if host.closing else "running" if scheduler.enabled else "paused"
        )
        tasks = []
        for record in host.live.tasks():
            item = record.to_json()
            item.pop("memos", None)
            item["activity"] = _activity(host.live, scheduler, record)
            tasks.append(item)
        submissions: list[SubmissionRecord] = []
        cursor = None
        while True:
            page = await host.storage.scan_submissions(
                status=("queued", "placed"), limit=500, cursor=cursor
            )
            submissions.extend(page.items)
            if page.cursor is None:
                break
            cursor = page.cursor
        result.update(
            scheduling=scheduling,
            tasks=tasks,
            submissions=[s.to_json() for s in submissions],
        )

    await host.run(read)
    return result
