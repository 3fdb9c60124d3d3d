"""The task tree panel: every live durable task, nested by owner, with a ticking clock.

One line per ``TaskNode`` (R126 nests them by owner): its label, status and
phase, the time since it first ran, and ``[background]``, ``[aborting]`` or
``[enter opens]`` (a subagent's conversation) flags. No internal ids or kinds: those
are in ``/tasks`` (issue 12). The elapsed time ticks once a second from the value the
model gave, so the panel needs no model update to move. Selecting a node that
owns a child conversation asks the app to show that conversation (as ``/agents``
does); once the panel is entered the cursor is on a task (``PanelList``). Hidden
when there is no task or when toggled off (Ctrl+T, ``/tasks``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from textual.binding import Binding
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from pi_durable_tui.app import TaskNode
from pi_durable_tui.tui._block_views import OpenConversation
from pi_durable_tui.tui._panel_list import PanelList
from pi_durable_tui.tui._terminal_text import Content

_STATUS_STYLE = {
    "pending": "$text-muted",
    "running": "$accent",
    "waiting": "$text-muted",
    "completing": "$success",
    "blocked": "$warning",
    "stopped": "$error",
}
_STILL = ("pending", "stopped")
"""Statuses whose elapsed time does not move."""


def format_elapsed(seconds: float) -> str:
    """Format a duration as ``12s``, ``3m05s`` or ``1h02m``."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def _walk(nodes: Sequence[TaskNode], depth: int = 0) -> Iterator[tuple[int, TaskNode]]:
    for node in nodes:
        yield depth, node
        yield from _walk(node.children, depth + 1)


class TaskPanel(PanelList):
    """The live task tree.

    Args:
        clock: Monotonic seconds (injectable so screenshots are stable).
        id: The widget id.
    """

    BINDINGS = [Binding("escape", "app.focus_editor", "", show=False)]

    def __init__(self, clock: Callable[[], float], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._clock = clock
        self._rows: list[tuple[int, TaskNode]] = []
        self._received = 0.0
        self.hidden_by_user = False

    def on_mount(self) -> None:
        """Tick the elapsed times once a second."""
        self.set_interval(1.0, self.tick, name="task-clock")

    def show_tasks(self, tasks: Sequence[TaskNode]) -> None:
        """Show a new task tree, keeping the highlighted task if it still lives.

        Args:
            tasks: The roots of the tree.
        """
        self._rows = list(_walk(tasks))
        self._received = self._clock()
        self.show_options(
            Option(self._line(depth, node), id=str(node.task_id)) for depth, node in self._rows
        )
        self._set_title()
        self._set_display()

    def _set_title(self, focused: bool | None = None) -> None:
        focused = self.has_focus if focused is None else focused
        where = " · focused: enter opens, esc back to the editor" if focused else ""
        self.border_title = f"Tasks ({len(self._rows)} live, ctrl+t to hide{where})"

    def _set_display(self) -> None:
        self.display = bool(self._rows) and not self.hidden_by_user
        if not self.display and self.has_focus:
            self.app.action_focus_editor()  # type: ignore[attr-defined]

    def on_focus(self) -> None:
        """Say in the title that the task tree has the focus."""
        self._set_title(focused=True)

    def on_blur(self) -> None:
        """The title says the editor's keys apply again."""
        self._set_title(focused=False)

    def toggle(self) -> None:
        """Hide or show the panel (it stays hidden while there is no task)."""
        self.hidden_by_user = not self.hidden_by_user
        self._set_display()

    def tick(self) -> None:
        """Redraw the lines whose elapsed time moves."""
        if not self.display:
            return
        for index, (depth, node) in enumerate(self._rows):
            if node.elapsed_s is not None and node.status not in _STILL:
                self.replace_option_prompt_at_index(index, self._line(depth, node))

    def _line(self, depth: int, node: TaskNode) -> Content:
        parts: list[str | tuple[str, str]] = ["  " * depth + ("└ " if depth else "")]
        parts.append((node.label or node.kind, "bold"))
        status = node.status + (f" {node.phase}" if node.phase else "")
        parts.append((f"  {status}", _STATUS_STYLE.get(node.status, "")))
        if node.elapsed_s is not None:
            moving = node.status not in _STILL
            elapsed = node.elapsed_s + (self._clock() - self._received if moving else 0.0)
            parts.append((f"  {format_elapsed(elapsed)}", "$text-muted"))
        if node.background:
            parts.append(("  [background]", "$secondary"))
        if node.aborting:
            parts.append(("  [aborting]", "$warning"))
        if node.subagent_conversation_id is not None:
            parts.append(("  [enter opens]", "$accent"))
        return Content.assemble(*parts)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """Open the child conversation of the selected node, if it has one."""
        event.stop()
        _, node = self._rows[event.option_index]
        if node.subagent_conversation_id is not None:
            self.post_message(OpenConversation(node.subagent_conversation_id))
