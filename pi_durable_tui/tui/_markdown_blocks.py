"""Where streamed Markdown stops changing: the finished prefix of top-level blocks.

A streaming answer only grows at its end, and in CommonMark a top-level block is
settled once the next one has begun. The live message freezes that prefix into
its own rendered widget and keeps re-rendering only the last block (DESIGN.md
section 5: re-rendering a whole message per token falls seconds behind).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt


@cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    # REMINDER: the same rules Rich's Markdown renderer enables, so the blocks split
    # here are the blocks it would have drawn from the whole text.
    return MarkdownIt().enable("strikethrough").enable("table")


def finished_prefix(source: str) -> int:
    """Return how many leading characters of ``source`` form settled top-level blocks.

    Args:
        source: Markdown that may still grow at its end.

    Returns:
        The length of the prefix up to the start of the last top-level block
        (0 when there is at most one block).
    """
    tokens = _parser().parse(source)
    starts = [
        token.map[0]
        for token in tokens
        if token.level == 0 and token.nesting >= 0 and token.map is not None
    ]
    if len(starts) < 2 or starts[-1] == 0:
        return 0
    lines = source.splitlines(keepends=True)
    return sum(len(line) for line in lines[: starts[-1]])
