"""What every block renderer needs besides the block: theme colours and view toggles."""

from __future__ import annotations

from dataclasses import dataclass

from pi_durable_tui.tui._themes import Palette


@dataclass(frozen=True, slots=True)
class RenderContext:
    """The screen-wide settings a block is rendered with.

    A change of any field re-renders the mounted blocks (there are few: the
    transcript is windowed), never the whole history.

    Attributes:
        palette: The theme's colours for Rich renderables.
        syntax_theme: The Pygments style for code and previews.
        expanded: Tool output and compaction summaries shown in full (Ctrl+O).
        show_thinking: Thinking shown in full rather than as one line (Alt+T).
        verbose: System-prompt changes shown.
    """

    palette: Palette
    syntax_theme: str
    expanded: bool = False
    show_thinking: bool = True
    verbose: bool = False


EXPAND_KEY = "ctrl+o"
"""The key that expands tool output and summaries; bound by the app, named by renderers."""
THINKING_KEY = "alt+t"
"""The key that shows or folds thinking."""


def count_of(count: int, noun: str) -> str:
    """``1 line``, ``2 lines``: a count with its noun in the right number (issue 12)."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
