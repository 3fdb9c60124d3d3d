"""The task tree the screen shows, from the harness's task graph (R126; reference 5.3).

Roots are tasks without an owner task whose conversation no live task owns;
children are the tasks a node owns, then the conversation-owned tasks of the
conversations it owns. Labels are words a person reads: ``turn`` for a
generation, ``bash: npm test`` for a tool call, ``compaction (threshold)``,
``subagent 12`` for a task owning a child conversation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pi_durable_tui.app._view import TaskNode

Labeler = Callable[[Mapping[str, Any]], str]


def _status(state: Mapping[str, Any]) -> tuple[str, str]:
    status = str(state.get("status", "pending"))
    if status == "completing":
        outcome = state.get("outcome")
        return "completing", str(outcome) if outcome else ""
    return status, str(state.get("phase") or "")


def build_tree(
    graph: Mapping[str, Any],
    label: Labeler,
    started_at: Callable[[int], float | None],
    now_ms: float,
    blocked: Mapping[int, str] | None = None,
) -> tuple[TaskNode, ...]:
    """Nest the graph's live tasks by owner.

    Args:
        graph: ``{"tasks": {"<id>": node}}`` from ``Harness.task_graph()``.
        label: Words for a node.
        started_at: A task's first start (harness clock, ms), or ``None``.
        now_ms: The harness clock now.
        blocked: Blocked reasons by task ID (shown as status ``blocked``).

    Returns:
        The roots, in task ID order.
    """
    nodes = {int(k): v for k, v in (graph.get("tasks") or {}).items()}
    owned_by: dict[int, int] = {}
    for task_id, node in nodes.items():
        for conversation in node.get("conversations") or []:
            owned_by[int(conversation)] = task_id
    children: dict[int, list[int]] = {task_id: [] for task_id in nodes}
    roots: list[int] = []
    for task_id, node in sorted(nodes.items()):
        owner = node.get("owner")
        if isinstance(owner, int) and owner in nodes:
            children[owner].append(task_id)
        elif (
            node.get("conversation_id") in owned_by and owned_by[node["conversation_id"]] != task_id
        ):
            children[owned_by[node["conversation_id"]]].append(task_id)
        else:
            roots.append(task_id)

    def make(task_id: int) -> TaskNode:
        node = nodes[task_id]
        status, phase = _status(node.get("state") or {})
        if blocked and task_id in blocked:
            status, phase = "blocked", blocked[task_id]
        started = started_at(task_id)
        conversations = [int(c) for c in node.get("conversations") or []]
        return TaskNode(
            task_id=task_id,
            kind=str(node.get("kind")),
            label=label(node),
            status=status,  # type: ignore[arg-type]
            phase=phase,
            elapsed_s=None if started is None else max(0.0, (now_ms - started) / 1000),
            background=bool(node.get("background")),
            aborting=bool(node.get("abort_requested")),
            subagent_conversation_id=conversations[0] if conversations else None,
            children=tuple(make(child) for child in children[task_id]),
        )

    return tuple(make(task_id) for task_id in roots)
