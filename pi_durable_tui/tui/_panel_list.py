"""The cursor of a list panel of the main screen (the queue, the task tree).

A panel's keys act on the item under its cursor: Delete withdraws a queued item,
Enter opens a subagent's conversation. Textual's ``OptionList`` highlights nothing
until an arrow key is pressed, and ``set_options`` drops the highlight, so a
panel entered with Alt+Down (the documented way in) had no item under its cursor
and those keys did nothing, without a word. ``PanelList`` puts the cursor on the
first item when the panel gets the focus with none highlighted, and keeps the
highlighted item (by its option id) when the panel shows a new list of items, so
an update from the agent (a steer placed, a task started) never moves it away.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Self

from textual.widgets import OptionList
from textual.widgets.option_list import Option, OptionDoesNotExist


class PanelList(OptionList):
    """An ``OptionList`` whose focused cursor is always on an item, kept across updates."""

    # The cursor shows only while the panel has the focus: the app's first focus can
    # pass through a panel on its way to the editor, and a kept highlight must not
    # look like a selection in a panel the keys do not reach.
    DEFAULT_CSS = """
    PanelList > .option-list--option-highlighted {
        color: $foreground;
        background: transparent;
        text-style: none;
    }
    PanelList:focus > .option-list--option-highlighted {
        color: $block-cursor-foreground;
        background: $block-cursor-background;
        text-style: $block-cursor-text-style;
    }
    """

    def show_options(self, options: Iterable[Option]) -> None:
        """Replace the items, keeping the highlighted one if it is still there.

        Args:
            options: The new items; each needs an ``id`` (how the highlight is kept).
        """
        highlighted = self.highlighted_option
        keep = highlighted.id if highlighted is not None else None
        self.set_options(options)
        if keep is not None:
            with contextlib.suppress(OptionDoesNotExist):  # that item left the list
                self.highlighted = self.get_option_index(keep)
        self._cursor_on_an_item()

    def focus(self, scroll_visible: bool = True) -> Self:
        """Take the focus with the cursor on an item (the first, when none was).

        REMINDER: here, not only in ``on_focus``: a key typed right after Alt+Down
        has its binding run by the app before this widget handles its ``Focus``
        event, so Delete or Enter would find no item yet.
        """
        self._cursor_on_an_item(focusing=True)
        return super().focus(scroll_visible)

    def on_focus(self) -> None:
        """Focused another way (the mouse): the cursor goes on an item too."""
        self._cursor_on_an_item()

    def _cursor_on_an_item(self, focusing: bool = False) -> None:
        # Only a focused panel: an unfocused one shows no cursor until it is entered.
        if (focusing or self.has_focus) and self.highlighted is None and self.option_count:
            self.highlighted = 0
