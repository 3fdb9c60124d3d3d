"""The task tree the screen shows, from the harness's task graph (R126; reference 5.3).

Roots are tasks without an owner task whose conversation no live task owns;
children are the tasks a node owns, then the conversation-owned tasks of the
conversations it owns. Labels are words a person reads, never bare ids
(issue 12): ``turn`` for a generation (under its subagent when it is one's),
``turn in fork of <first words>`` for a fork's, ``bash: npm test`` for a tool
call, ``compaction (threshold)``, ``subagent: <task>`` for a background subagent,
``job: npm run dev`` for a background job.
The ids and kinds stay on each ``TaskNode`` (``/tasks`` lists them).

``TaskTree`` follows the session: the view model calls ``schedule()`` after each
commit that touched tasks; refreshes coalesce (one runs at a time, and a commit
landing during one makes it run again, so the tree never stays behind the last
commit). A task's label and first start are read once and cached.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from pi_durable_tui.app._view import TaskNode
from pi_durable_tui.app.screen._names import conversation_label, conversation_title
from pi_durable_tui.kernel import Session
from pi_durable_tui.storage import TaskRecord

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
) -> tuple[TaskNode, ...]:
    """Nest the graph's live tasks by owner.

    Args:
        graph: ``{"tasks": {"<id>": node}}`` from ``Harness.task_graph()``.
        label: Words for a node.
        started_at: A task's first start (harness clock, ms), or ``None``.
        now_ms: The harness clock now.

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


async def tool_call_of(session: Session, record: TaskRecord) -> tuple[str, dict[str, Any]]:
    """The name and arguments of the call a ``pi.tool`` task runs (``("tool", {})`` if unknown)."""
    data = record.input if isinstance(record.input, dict) else {}
    stored = await session.storage.entry(int(data.get("assistant") or 0))
    message = stored.entry.model[0] if stored is not None and stored.entry.model else {}
    content = message.get("content") if isinstance(message, dict) else None
    for block in content or []:
        if isinstance(block, dict) and block.get("id") == data.get("call_id"):
            arguments = block.get("arguments")
            return str(block.get("name")), arguments if isinstance(arguments, dict) else {}
    return "tool", {}


def describe_call(name: str, arguments: Mapping[str, Any], width: int = 48) -> tuple[str, str]:
    """``(name, the argument that says what the call does, shortened)``; the second may be empty."""
    for key in ("command", "path", "task", "topic"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            short = " ".join(value.split())
            return name, short[:width] + ("…" if len(short) > width else "")
    return name, ""


class TaskTree:
    """The live task tree of one session, kept current by ``schedule()``.

    Args:
        session: The open session.
        root_id: The main conversation (its turns are just ``turn``).
        changed: Called after each refresh (the view model emits ``tasks``).
    """

    def __init__(self, session: Session, root_id: int, changed: Callable[[], None]) -> None:
        self._session = session
        self._root_id = root_id
        self._changed = changed
        self._labels: dict[int, str] = {}
        self._started: dict[int, float] = {}
        self._dirty = False
        self._refresh: asyncio.Task[None] | None = None
        self.nodes: tuple[TaskNode, ...] = ()
        """The roots of the tree, in task ID order."""

    def schedule(self) -> None:
        """Refresh soon (after the commits of this burst); call after a commit touched tasks."""
        self._dirty = True
        if self._refresh is None or self._refresh.done():
            self._refresh = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        # REMINDER: a commit can land while a refresh awaits reads; the dirty flag makes
        # the loop go again, so the tree never stays behind the newest commit.
        while self._dirty:
            self._dirty = False
            await asyncio.sleep(0)  # coalesce the commits of one burst
            await self._rebuild()
            self._changed()

    async def _rebuild(self) -> None:
        session = self._session
        graph = session.task_graph()
        live = {int(key) for key in graph.get("tasks") or {}}
        for task_id in live:
            if task_id in self._labels and task_id in self._started:
                continue
            record = await session.read_task(task_id)
            if record is None:
                continue
            if task_id not in self._labels:
                self._labels[task_id] = await self._label(record)
            if record.started_at is not None:
                self._started[task_id] = record.started_at
        self._labels = {k: v for k, v in self._labels.items() if k in live}
        self._started = {k: v for k, v in self._started.items() if k in live}
        self.nodes = build_tree(
            graph,
            lambda node: self._labels.get(int(node["id"]), str(node.get("kind"))),
            self._started.get,
            session.clock.now(),
        )

    async def _label(self, record: TaskRecord) -> str:
        data = record.input if isinstance(record.input, dict) else {}
        if record.kind == "pi.generation":
            if record.conversation_id == self._root_id:
                return "turn"
            conversation = await self._session.storage.conversation(record.conversation_id)
            if conversation is None or conversation.owner is not None:
                return "turn"  # the main conversation's, or shown under its subagent
            title = await conversation_title(self._session.storage, record.conversation_id)
            return "turn in " + conversation_label(conversation.id, False, self._root_id, title)
        if record.kind == "pi.compaction":
            return f"compaction ({data.get('reason', 'manual')})"
        if record.kind == "pi.subagent":
            return conversation_label(-1, True, self._root_id, str(data.get("prompt", "")))
        if record.kind == "pi.job":  # issue 13: a background job, by its command
            return "job: " + describe_call("job", data)[1]
        if record.kind == "pi.tool":
            name, what = describe_call(*await tool_call_of(self._session, record))
            return f"{name}: {what}" if what else name
        return record.kind

    async def close(self) -> None:
        """Stop refreshing."""
        if self._refresh is not None:
            self._refresh.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._refresh
