"""A filterable picker: a modal list with a filter line, returning the chosen value.

``/model``, ``/agents``, ``/resume``, ``/theme`` and the fork picker (``/fork``,
Esc Esc) are all this screen with different items. Typing filters (every word
must appear, case-insensitive); Up/Down move; Enter picks; Esc closes with
``None``. Disabled items stay visible and dimmed; a filter that matches
nothing says so (issue 12: never typing into a filter with nothing to show).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from pi_durable_tui.tui._notices import NoticeBar
from pi_durable_tui.tui._overlay import OverlayScreen
from pi_durable_tui.tui._terminal_text import Content, plain

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class PickerItem(Generic[T]):
    """One choice of a picker.

    Attributes:
        label: What the line shows.
        value: What picking it returns.
        search: The text the filter matches (the label's text when empty).
        disabled: Shown dimmed and not selectable.
    """

    label: str | Content
    value: T
    search: str = ""
    disabled: bool = False

    def matches(self, words: Sequence[str]) -> bool:
        """Whether every filter word appears in the item's search text."""
        haystack = (self.search or str(self.label)).lower()
        return all(word in haystack for word in words)


class PickerScreen(OverlayScreen[T | None]):
    """A modal, filterable list of ``PickerItem``.

    Args:
        title: The heading (``Model``, ``Conversations``, ...).
        items: The choices, in the order shown.
        notices: The main screen's notice bar (``OverlayScreen``).
    """

    CSS_PATH = Path(__file__).with_name("picker.tcss")
    BINDINGS = [
        Binding("escape", "close", "Close the picker"),
        Binding("down", "move(1)", "Next item", show=False, priority=True),
        Binding("up", "move(-1)", "Previous item", show=False, priority=True),
    ]

    def __init__(self, title: str, items: Sequence[PickerItem[T]], notices: NoticeBar) -> None:
        super().__init__(notices)
        self._title = title
        self._items = list(items)
        self._shown: list[PickerItem[T]] = []

    def compose(self) -> ComposeResult:
        """The heading, the filter line and the list."""
        with Vertical(id="picker"):
            yield Static(plain(self._title), id="picker-title")
            yield Input(placeholder="type to filter, enter to pick, esc to close")
            yield OptionList(id="picker-list")

    def on_mount(self) -> None:
        """Show every item and focus the filter."""
        self._refilter("")
        self.query_one(Input).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        """Filter as the user types."""
        self._refilter(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter picks the highlighted item."""
        event.stop()
        self._pick(self.query_one(OptionList).highlighted)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """A click (or Enter in the list) picks that item."""
        event.stop()
        self._pick(event.option_index)

    def action_move(self, step: int) -> None:
        """Move the highlight while the filter keeps the focus."""
        options = self.query_one(OptionList)
        if step > 0:
            options.action_cursor_down()
        else:
            options.action_cursor_up()

    def action_close(self) -> None:
        """Close without a choice."""
        self.dismiss(None)

    def _refilter(self, text: str) -> None:
        words = text.lower().split()
        self._shown = [item for item in self._items if item.matches(words)]
        options = self.query_one(OptionList)
        options.set_options(
            Option(plain(item.label), disabled=item.disabled) for item in self._shown
        )
        if not self._shown:
            # Never a blank list under a filter the user may not see they typed.
            note = f"nothing matches {text.strip()!r}: backspace edits the filter, esc closes"
            options.add_option(Option(Content.styled(note, "$text-muted"), disabled=True))
        first = next((i for i, item in enumerate(self._shown) if not item.disabled), None)
        options.highlighted = first

    def _pick(self, index: int | None) -> None:
        if index is None or index >= len(self._shown) or self._shown[index].disabled:
            return
        self.dismiss(self._shown[index].value)
