"""The help screen: every key and command, generated so it cannot drift.

The key rows come from the ``BINDINGS`` of the classes that own them (the app,
the editor, the queue) and the command rows from the command table, so a new
binding or command appears here by being defined.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from pi_durable_tui.tui._commands import Command
from pi_durable_tui.tui._notices import NoticeBar
from pi_durable_tui.tui._overlay import OverlayScreen

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
        keys = Table(title="Keys", title_justify="left", show_header=False, box=None, expand=True)
        keys.add_column(style="bold", no_wrap=True)
        keys.add_column()
        for key, description in self._keys:
            keys.add_row(key, description)
        commands = Table(
            title="Commands", title_justify="left", show_header=False, box=None, expand=True
        )
        commands.add_column(style="bold", no_wrap=True)
        commands.add_column()
        for command in self._commands:
            commands.add_row(f"/{command.name} {command.args}".rstrip(), command.summary)
        with VerticalScroll(id="help"):
            yield Static(keys, id="help-keys")
            yield Static(commands, id="help-commands")
            yield Static("Esc, F1 or q closes this help.", id="help-close")

    def action_close(self) -> None:
        """Close the help."""
        self.dismiss(None)
