"""Where streamed Markdown stops changing: the finished prefix of top-level blocks.

A streaming answer only grows at its end, and in CommonMark a top-level block is
settled once the next one has begun. The live message freezes that prefix into
its own rendered widget and keeps re-rendering only the last block (DESIGN.md
section 5: re-rendering a whole message per token falls seconds behind). The
blocks are found with the parse Rich's ``Markdown`` itself makes, so they are the
blocks it would draw from the whole text.
"""

from __future__ import annotations


def finished_prefix(source: str) -> int:
    """Return how many leading characters of ``source`` form settled top-level blocks.

    Args:
        source: Markdown that may still grow at its end.

    Returns:
        The length of the prefix up to the start of the last top-level block
        (0 when there is at most one block).
    """
    from pi_durable_tui.tui._terminal_text import markdown

    starts = [
        token.map[0]
        for token in markdown(source).parsed
        if token.level == 0 and token.nesting >= 0 and token.map is not None
    ]
    if len(starts) < 2 or starts[-1] == 0:
        return 0
    lines = source.splitlines(keepends=True)
    return sum(len(line) for line in lines[: starts[-1]])
