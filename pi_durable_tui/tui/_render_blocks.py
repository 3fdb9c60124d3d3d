"""Finished transcript blocks as Rich renderables (one ``Static`` each, never ``Markdown``).

DESIGN.md section 5 measured why: a ``Markdown`` widget per past message costs
seconds per hundred blocks, a ``Static`` holding Rich's Markdown renderable
costs a few milliseconds. This module maps each ``Block`` kind to what the
transcript shows (durable-behavior.md 5.3, issue 8):

- ``user``: the text (the widget's CSS gives it the user-message background);
- ``assistant``: thinking dimmed (one line when folded), then Markdown with
  highlighted code; a partial a crash cut (marked ``interrupted``), which the
  next attempt answers again below it, is one dim line until expanded, so the
  same paragraph never reads twice (issue 12);
- ``tool``: the card of ``_render_tools``;
- ``shell``: a command the user ran (``!cmd``), the bash card of ``_render_shell``;
- ``compaction``: ``Earlier context summarized (ctrl+o to expand)`` until expanded;
- ``reset``: ``[new context]``; ``error``: the message and detail in red;
- ``resumed``: a separator with the recovery report;
- ``system``: one muted line, only in verbose mode.

``[interrupted]`` / ``[aborted]`` marks follow the block.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Group, RenderableType
from rich.rule import Rule

from pi_durable_tui.app import Block, ThinkingPart
from pi_durable_tui.tui._render_context import EXPAND_KEY, THINKING_KEY, RenderContext, count_of
from pi_durable_tui.tui._render_shell import render_shell
from pi_durable_tui.tui._render_tools import render_tool_card
from pi_durable_tui.tui._terminal_text import Text, markdown


def render_block(block: Block, ctx: RenderContext) -> RenderableType:
    """Render a finished (or non-assistant) block.

    Args:
        block: The block's values.
        ctx: Theme colours and view toggles.

    Returns:
        What the block's ``Static`` shows.
    """
    if _folded(block, ctx):
        return _folded_partial(block, ctx)
    body = _RENDERERS[block.kind](block, ctx)
    mark = render_mark(block, ctx)
    return body if mark is None else Group(body, mark)


def _folded(block: Block, ctx: RenderContext) -> bool:
    """Whether a block shows as its one folded line: a partial a crash cut, not expanded."""
    return block.kind == "assistant" and block.mark == "interrupted" and not ctx.expanded


def _folded_partial(block: Block, ctx: RenderContext) -> Text:
    lines = len(block.text.splitlines()) + sum(len(p.text.splitlines()) for p in block.thinking)
    line = Text("[interrupted] ", style=ctx.palette.style("warning", bold=True))
    line.append(
        f"answer cut off when pidurable stopped ({count_of(lines, 'line')}, {EXPAND_KEY} to "
        "expand); the next attempt answers below",
        style=ctx.palette.style("muted", italic=True),
    )
    return line


def render_mark(block: Block, ctx: RenderContext) -> Text | None:
    """Return the ``[interrupted]`` / ``[aborted]`` / ``[error]`` line of a block, if any."""
    if not block.mark:
        return None
    token = "error" if block.mark == "error" else "warning"
    return Text(f"[{block.mark}]", style=ctx.palette.style(token, bold=True))


def render_markdown(source: str, ctx: RenderContext) -> RenderableType:
    """Render Markdown source with the theme's code style.

    Args:
        source: Markdown text.
        ctx: The render context (its ``syntax_theme`` colours code blocks).

    Returns:
        A Rich ``Markdown`` renderable.
    """
    return markdown(source, code_theme=ctx.syntax_theme, hyperlinks=False)


def render_thinking(parts: tuple[ThinkingPart, ...], ctx: RenderContext) -> Text | None:
    """Render thinking parts dimmed, or folded to one line when ``show_thinking`` is off.

    Args:
        parts: The thinking parts of an assistant message.
        ctx: The render context.

    Returns:
        The text, or ``None`` when there is no thinking.
    """
    if not parts:
        return None
    style = ctx.palette.style("thinking_text", italic=True)
    if not ctx.show_thinking:
        lines = sum(len(part.text.splitlines()) for part in parts)
        return Text(f"∴ thinking ({count_of(lines, 'line')}, {THINKING_KEY} to show)", style=style)
    texts = ["[thinking redacted]" if part.redacted else part.text.strip() for part in parts]
    return Text("\n\n".join(texts), style=style)


def _user(block: Block, ctx: RenderContext) -> RenderableType:
    return Text(block.text)


def _assistant(block: Block, ctx: RenderContext) -> RenderableType:
    thinking = render_thinking(block.thinking, ctx)
    parts: list[RenderableType] = [] if thinking is None else [thinking]
    if block.text:
        parts.append(render_markdown(block.text, ctx))
    return Group(*parts)


def _tool(block: Block, ctx: RenderContext) -> RenderableType:
    if block.tool is None:
        return Text(block.text, style=ctx.palette.style("muted"))
    return render_tool_card(block.tool, ctx)


def _compaction(block: Block, ctx: RenderContext) -> RenderableType:
    palette = ctx.palette
    title = Text("[compaction] ", style=palette.style("accent", bold=True))
    if not ctx.expanded:
        title.append(f"Earlier context summarized ({EXPAND_KEY} to expand)", style="italic")
        return title
    if block.detail:
        title.append(block.detail, style=palette.style("muted"))
    return Group(title, render_markdown(block.text, ctx))


def _reset(block: Block, ctx: RenderContext) -> RenderableType:
    return Text("[new context]", style=ctx.palette.style("muted", bold=True))


def _error(block: Block, ctx: RenderContext) -> RenderableType:
    text = Text(block.text, style=ctx.palette.style("error", bold=True))
    if block.detail:
        text.append("\n" + block.detail, style=ctx.palette.style("error"))
    return text


def _resumed(block: Block, ctx: RenderContext) -> RenderableType:
    rule = Rule("resumed", style=ctx.palette.style("warning"))
    report = block.text + ("\n" + block.detail if block.detail else "")
    if not report.strip():
        return rule
    return Group(rule, Text(report.strip(), style=ctx.palette.style("warning")))


def _system(block: Block, ctx: RenderContext) -> RenderableType:
    summary = block.detail or "system prompt changed"
    return Text(f"[system] {summary}", style=ctx.palette.style("muted", italic=True))


_RENDERERS: dict[str, Callable[[Block, RenderContext], RenderableType]] = {
    "user": _user,
    "assistant": _assistant,
    "tool": _tool,
    "shell": render_shell,
    "compaction": _compaction,
    "reset": _reset,
    "error": _error,
    "resumed": _resumed,
    "system": _system,
}
