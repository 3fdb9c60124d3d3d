"""The help screen: every key and command, generated so it cannot drift.

The key rows come from the ``BINDINGS`` of the classes that own them (the app,
the editor, the queue) and the command rows from the command table, so a new
binding or command appears here by being defined.

Each list is a two-column table where its widest key leaves the description
``MIN_DESCRIPTION`` columns; narrower (a 40-column terminal), each key stands on
its own line with its description wrapped under it, so no word is cut off with
``…``: everything is on some line the help scrolls to.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.padding import Padding
from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from pi_durable_tui.tui._commands import Command
from pi_durable_tui.tui._notices import NoticeBar
from pi_durable_tui.tui._overlay import OverlayScreen
from pi_durable_tui.tui._terminal_text import Text

_KEY_NAMES = {"pageup": "PageUp", "pagedown": "PageDown", "escape": "Esc", "underscore": "_"}


def format_key(key: str) -> str:
    """Format a Textual key name for people: ``alt+enter`` -> ``Alt+Enter``."""
    return "+".join(_KEY_NAMES.get(part, part.capitalize()) for part in key.split("+"))


def key_rows(binding_sets: Iterable[Sequence[BindingType]]) -> list[tuple[str, str]]:
    """Return ``(keys, description)`` for every described binding.

    Args:
        binding_sets: ``BINDINGS`` lists, in the order to show them.

    Returns:
        One row per binding that has a description.
    """
    rows: list[tuple[str, str]] = []
    for bindings in binding_sets:
        for binding in bindings:
            if isinstance(binding, Binding) and binding.description:
                keys = " / ".join(format_key(key) for key in binding.key.split(","))
                rows.append((keys, binding.description))
    return rows


MIN_DESCRIPTION = 24
"""The fewest columns a description gets beside its key; with fewer, it goes under it."""


class HelpRows:
    """A titled list of ``(key, description)`` rows laid out for the width it gets.

    A Rich renderable: a table when the widest key leaves ``MIN_DESCRIPTION``
    columns, else each key on a line of its own and its description indented under
    it (a word longer than the width folds onto the next line rather than vanish).
    Keys and descriptions are plain text either way (``/model [provider/model]``).

    Args:
        title: The heading.
        rows: ``(key, description)`` rows.
    """

    def __init__(self, title: str, rows: Sequence[tuple[str, str]]) -> None:
        self.title = title
        self.rows = rows

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widest = max((len(key) for key, _ in self.rows), default=0)
        if options.max_width >= widest + 1 + MIN_DESCRIPTION:
            table = Table(
                title=self.title, title_justify="left", show_header=False, box=None, expand=True
            )
            table.add_column(style="bold", no_wrap=True)
            table.add_column()
            for key, description in self.rows:
                # As text, never markup: Rich read ``[provider/model]`` as a style tag
                # and dropped every command's argument synopsis.
                table.add_row(Text(key), Text(description))
            yield table
            return
        lines: list[Text | Padding] = [Text(self.title, style="italic")]
        for key, description in self.rows:
            lines.append(Text(key, style="bold", overflow="fold"))
            lines.append(Padding(Text(description, overflow="fold"), (0, 0, 0, 2)))
        yield Group(*lines)


class HelpScreen(OverlayScreen[None]):
    """Keys and commands.

    Args:
        keys: ``(keys, description)`` rows.
        commands: The command table.
        notices: The main screen's notice bar (``OverlayScreen``).
    """

    CSS_PATH = Path(__file__).with_name("help.tcss")
    BINDINGS = [Binding("escape,f1,q", "close", "Close the help")]

    def __init__(
        self, keys: Sequence[tuple[str, str]], commands: Sequence[Command], notices: NoticeBar
    ) -> None:
        super().__init__(notices)
        self._keys = keys
        self._commands = commands

    def compose(self) -> ComposeResult:
        """The two tables in a scroll."""
        commands = [(f"/{c.name} {c.args}".rstrip(), c.summary) for c in self._commands]
        with VerticalScroll(id="help"):
            yield Static(HelpRows("Keys", self._keys), id="help-keys")
            yield Static(HelpRows("Commands", commands), id="help-commands")
            yield Static("Esc, F1 or q closes this help.", id="help-close")

    def action_close(self) -> None:
        """Close the help."""
        self.dismiss(None)
