"""The queue: pending steers, follow-ups and writes of the shown conversation.

One line per ``QueueItem`` with its mode. Delete (or Backspace) on the highlighted
item (the first one once the panel is entered, ``PanelList``) asks the app to
withdraw it; the app puts the withdrawn text back into the editor, so nothing
typed is lost (tui-anchors 4.2). Hidden while empty. Alt+Down (``PANEL_KEY``)
moves the focus here, Esc back to the editor; while it has the
focus its title says so (issue 12: focus is always visible).
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.binding import Binding
from textual.message import Message
from textual.widgets.option_list import Option

from pi_durable_tui.app import QueueItem
from pi_durable_tui.tui._panel_list import PanelList
from pi_durable_tui.tui._terminal_text import Content

_MODE_LABEL = {"steer": "[steer]", "follow_up": "[follow-up]", "write": "[write]"}


class Withdraw(Message):
    """Ask the app to withdraw one queued item and put its text in the editor."""

    def __init__(self, submission_id: int) -> None:
        super().__init__()
        self.submission_id = submission_id


class QueuePanel(PanelList):
    """The list of queued inputs."""

    BINDINGS = [
        Binding("delete,backspace", "withdraw", "Withdraw the queued item into the editor"),
        Binding("escape", "app.focus_editor", "Back to the editor (from the queue or tasks)"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._items: list[QueueItem] = []

    def show_queue(self, items: Sequence[QueueItem]) -> None:
        """Show the queue.

        Args:
            items: The queued items, in order.
        """
        self._items = list(items)
        self.show_options(
            Option(self._line(item), id=str(item.submission_id)) for item in self._items
        )
        self._set_title()
        if not self._items and self.has_focus:
            # REMINDER: before hiding: a hidden focused panel hands the focus on by
            # Textual's order, and keys typed meanwhile went there, not the editor.
            self.app.action_focus_editor()  # type: ignore[attr-defined]
        self.display = bool(self._items)

    def _set_title(self, focused: bool | None = None) -> None:
        focused = self.has_focus if focused is None else focused
        where = " · focused: esc back to the editor" if focused else ""
        self.border_title = f"Queued ({len(self._items)}, delete withdraws{where})"

    def on_focus(self) -> None:
        """Say in the title that the queue has the focus."""
        self._set_title(focused=True)

    def on_blur(self) -> None:
        """The title says the editor's keys apply again."""
        self._set_title(focused=False)

    @staticmethod
    def _line(item: QueueItem) -> Content:
        first, _, rest = item.text.strip().partition("\n")
        return Content.assemble(
            (_MODE_LABEL.get(item.mode, item.mode), "$accent"),
            " ",
            first + (" …" if rest else ""),
        )

    def action_withdraw(self) -> None:
        """Withdraw the highlighted item."""
        index = self.highlighted
        if index is not None and index < len(self._items):
            self.post_message(Withdraw(self._items[index].submission_id))
