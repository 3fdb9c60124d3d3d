"""How the examples print the task graph (R126): conversations and the tasks under them.

A task appears under the task that owns it, or under its conversation when it
is conversation-owned; a conversation owned by a task (a subagent's) appears
under that task.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from pi_durable_tui.kernel import TaskGraphState


def _task_line(node: dict[str, Any]) -> str:
    state = node["state"]
    text = f"{node['kind']}#{node['id']} {state['status']}"
    if state.get("phase"):
        text += f" ({state['phase']})"
    if node["background"]:
        text += " [background]"
    return text


def task_tree(graph: dict[str, Any]) -> list[str]:
    """Render a task graph value as indented lines, one per conversation or task."""
    nodes = sorted(graph["tasks"].values(), key=lambda node: node["id"])
    owned = {cid for node in nodes for cid in node["conversations"]}
    lines: list[str] = []

    def conversation(cid: int, depth: int) -> None:
        lines.append("  " * depth + f"conversation {cid}")
        for node in nodes:
            if node["conversation_id"] == cid and node.get("owner") is None:
                task(node, depth + 1)

    def task(node: dict[str, Any], depth: int) -> None:
        lines.append("  " * depth + _task_line(node))
        for child in nodes:
            if child.get("owner") == node["id"]:
                task(child, depth + 1)
        for cid in node["conversations"]:
            conversation(cid, depth + 1)

    for cid in sorted({node["conversation_id"] for node in nodes} - owned):
        conversation(cid, 0)
    return lines


def print_task_tree(graph: dict[str, Any], indent: str = "  ") -> None:
    """Print the task graph as a tree (``(no live tasks)`` when it is empty)."""
    for line in task_tree(graph) or ["(no live tasks)"]:
        print(indent + line)


def running_commands(graph: dict[str, Any]) -> list[int]:
    """The conversations where a tool call is executing, one per executing call."""
    return [
        node["conversation_id"]
        for node in graph["tasks"].values()
        if node["kind"] == "pi.tool" and node["state"].get("phase") == "execute"
    ]


async def graph_reaches(
    graph: TaskGraphState, predicate: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """Wait until the live task graph satisfies ``predicate``; return that value."""
    reached: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

    def check(value: dict[str, Any]) -> None:
        if not reached.done() and predicate(value):
            reached.set_result(value)

    unsubscribe = graph.subscribe(check)
    check(graph.value)
    try:
        return await reached
    finally:
        unsubscribe()
