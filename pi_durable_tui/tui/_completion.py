"""Completion of ``/`` commands and ``@`` file paths, and the list that shows it.

``completion_at`` is a pure function of the editor's line and cursor: ``/pre``
alone at the start of the first line completes command names from the command
table and the custom commands (``Controller.custom_commands``); ``@pre`` (at the
start of the line or after a space) completes paths the controller offers
(``Controller.complete_path``). The ``CompletionMenu`` shows
the candidates above the editor; the editor moves, accepts or closes it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from textual.widgets import OptionList
from textual.widgets.option_list import Option

from pi_durable_tui.app import CommandInfo
from pi_durable_tui.tui._commands import matching_commands
from pi_durable_tui.tui._terminal_text import Content, plain

_AT_TOKEN = re.compile(r"(?:^|(?<=\s))@(\S*)$")
_SLASH_TOKEN = re.compile(r"/([A-Za-z0-9_.:-]*)")


@dataclass(frozen=True, slots=True)
class Candidate:
    """One completion: what the list shows and what replaces the token."""

    label: str | Content
    replacement: str


@dataclass(frozen=True, slots=True)
class Completion:
    """The token under the cursor and what it can become.

    Attributes:
        row: The line of the token.
        start: The column where the token (``/`` or ``@``) starts.
        end: The cursor column (the token's end).
        token: The token's current text.
        candidates: The choices, best first.
    """

    row: int
    start: int
    end: int
    token: str
    candidates: tuple[Candidate, ...]


def completion_at(
    line: str,
    row: int,
    column: int,
    complete_path: Callable[[str], list[str]],
    custom_commands: Callable[[], Sequence[CommandInfo]] = tuple,
) -> Completion | None:
    """Return the completion for the cursor at ``(row, column)`` of ``line``, if any.

    Args:
        line: The text of the cursor's line.
        row: The cursor's line number.
        column: The cursor's column.
        complete_path: The controller's path completion.
        custom_commands: The controller's custom commands (read when ``/`` is typed).

    Returns:
        The completion, or ``None`` when the cursor is not on a ``/`` or ``@`` token.
    """
    before = line[:column]
    if row == 0 and (slash := _SLASH_TOKEN.fullmatch(before)) and line == before:
        commands = matching_commands(slash.group(1), custom_commands())
        candidates = tuple(
            Candidate(
                Content.assemble(
                    (f"/{c.name:<9}", "bold"), (f"{c.args:<30}{c.summary}", "$text-muted")
                ),
                f"/{c.name} ",
            )
            for c in commands
        )
        return Completion(row, 0, column, before, candidates) if candidates else None
    at = _AT_TOKEN.search(before)
    if at is None:
        return None
    paths = complete_path(at.group(1))
    candidates = tuple(
        Candidate(path, f"@{path}" + ("" if path.endswith("/") else " ")) for path in paths
    )
    if not candidates:
        return None
    return Completion(row, at.start(), column, at.group(0), candidates)


class CompletionMenu(OptionList, can_focus=False):
    """The candidates above the editor; hidden when there are none."""

    DEFAULT_CSS = """
    CompletionMenu {
        height: auto;
        max-height: 8;
        border: none;
        border-top: solid $accent;
        padding: 0 1;
        background: $surface;
        display: none;
    }
    """

    completion: Completion | None = None

    def show_completion(self, completion: Completion | None) -> None:
        """Show a completion's candidates, or hide the menu for ``None``."""
        self.completion = completion
        if completion is None:
            self.display = False
            return
        self.set_options(Option(plain(candidate.label)) for candidate in completion.candidates)
        self.highlighted = 0
        self.display = True

    @property
    def chosen(self) -> Candidate | None:
        """The highlighted candidate while the menu is shown."""
        if self.completion is None or not self.display or self.highlighted is None:
            return None
        return self.completion.candidates[self.highlighted]
