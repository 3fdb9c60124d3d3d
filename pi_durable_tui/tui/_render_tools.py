"""Tool cards as Rich renderables: one look per built-in tool, one for the rest.

- ``read``: the path and line range; the content the model saw only when expanded.
- ``write``: the path, the size and a highlighted preview (first lines collapsed).
- ``edit``: the path and the unified diff, added lines green and removed red.
- ``bash``: ``$ command``, a bounded tail of the output (the committed retained
  window, R102), then the exit code (or the background job its process runs on
  as) and duration; ``N lines dropped`` when the retained window lost its head.
- anything else (``subagent``, extension tools): name, arguments, output tail; a
  subagent card says how to open its conversation.

Collapsed parts end with ``(N more lines, ctrl+o to expand)``. Nothing here is
mutable state: a card is a pure function of its ``ToolCard`` and the context.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from rich.console import Group, RenderableType

from pi_durable_tui.app import ToolCard
from pi_durable_tui.tui._render_context import EXPAND_KEY, RenderContext, count_of
from pi_durable_tui.tui._terminal_text import Text, syntax

COLLAPSED_TAIL = 5
"""Output lines a collapsed bash or generic card shows (the newest)."""
COLLAPSED_HEAD = 12
"""Preview or diff lines a collapsed write or edit card shows (the first)."""
EXPANDED_LINES = 400
"""Lines an expanded card shows at most; the retained window is bounded anyway."""

_STATUS = {
    "streaming": ("…", "muted"),
    "pending": ("pending", "muted"),
    "running": ("running", "accent"),
    "done": ("✓", "success"),
    "error": ("✗", "error"),
    "interrupted": ("[interrupted]", "warning"),
    "aborted": ("[aborted]", "warning"),
    "not_run": ("not run", "muted"),
}


def render_tool_card(
    card: ToolCard, ctx: RenderContext, header: Text | None = None
) -> RenderableType:
    """Render one tool card.

    Args:
        card: The card's values.
        ctx: Theme colours and the expanded flag.
        header: A header line of the caller's (a user's shell command), else the
            tool's own.

    Returns:
        A Rich renderable: a header line, the body and an outcome line.
    """
    body = _BODIES.get(card.name, _generic_body)(card, ctx)
    parts: list[RenderableType] = [header or _header(card, ctx), *body]
    outcome = _outcome(card, ctx)
    if outcome is not None:
        parts.append(outcome)
    return Group(*parts)


def status_word(card: ToolCard, ctx: RenderContext) -> Text:
    """The card's status as its header ends with it (``running``, a check mark...)."""
    word, token = _STATUS[card.status]
    return Text(word, style=ctx.palette.style(token))


def _header(card: ToolCard, ctx: RenderContext) -> Text:
    palette = ctx.palette
    word, token = _STATUS[card.status]
    header = Text()
    if card.name == "bash":
        first, _, rest = card.command.partition("\n")
        header.append("$ ", style=palette.style("accent", bold=True))
        header.append(first + (" …" if rest else ""), style="bold")
    else:
        header.append(card.name, style=palette.style("accent", bold=True))
        header.append("  ")
        header.append(_subject(card), style="bold")
    header.append("  ")
    header.append(word, style=palette.style(token))
    return header


def _subject(card: ToolCard) -> str:
    if card.name == "read":
        return f"{card.path}:{card.line_range}" if card.line_range else card.path
    if card.name == "write":
        size = "" if card.size_bytes is None else f"  ({_size(card.size_bytes)})"
        return card.path + size
    if card.name == "edit":
        return card.path
    if card.conversation_id is not None:
        task = " ".join(str(card.arguments.get("task") or "").split())
        return task if len(task) <= 60 else task[:59] + "…"
    text = json.dumps(card.arguments, ensure_ascii=False)
    return text if len(text) <= 80 else text[:79] + "…"


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / 1024 / 1024:.1f} MB"


def _read_body(card: ToolCard, ctx: RenderContext) -> list[RenderableType]:
    if not ctx.expanded or not card.result_text:
        return []
    lines = card.result_text.splitlines()
    return _lines(lines[:EXPANDED_LINES], ctx, "muted") + _more(len(lines) - EXPANDED_LINES, ctx)


def _write_body(card: ToolCard, ctx: RenderContext) -> list[RenderableType]:
    if not card.preview:
        return []
    lines = card.preview.splitlines()
    shown = EXPANDED_LINES if ctx.expanded else COLLAPSED_HEAD
    code = "\n".join(lines[:shown])
    highlighted = syntax(
        code, card.language or "text", theme=ctx.syntax_theme, line_numbers=True, word_wrap=True
    )
    return [highlighted, *_more(len(lines) - shown, ctx)]


def _edit_body(card: ToolCard, ctx: RenderContext) -> list[RenderableType]:
    lines = card.diff.splitlines()
    shown = EXPANDED_LINES if ctx.expanded else COLLAPSED_HEAD
    palette = ctx.palette
    text = Text()
    for line in lines[:shown]:
        if line.startswith(("+++", "---")):
            style = palette.style("muted", bold=True)
        elif line.startswith("+"):
            style = palette.style("diff_added")
        elif line.startswith("-"):
            style = palette.style("diff_removed")
        elif line.startswith("@@"):
            style = palette.style("accent")
        else:
            style = palette.style("muted")
        text.append(line + "\n", style=style)
    text.rstrip()
    return ([text] if lines else []) + _more(len(lines) - shown, ctx)


def _generic_body(card: ToolCard, ctx: RenderContext) -> list[RenderableType]:
    output = card.output or (card.result_text if card.status != "running" else "")
    if not output:
        if card.conversation_id is not None and card.status in ("running", "pending"):
            note = "The subagent is working. /agents switches to it."
            return [Text(note, style=ctx.palette.style("muted", italic=True))]
        return []
    parts: list[RenderableType] = []
    if card.dropped_lines or card.dropped_bytes:
        earlier = count_of(card.dropped_lines, "earlier line")
        dropped = f"… {earlier} ({_size(card.dropped_bytes)}) dropped"
        parts.append(Text(dropped, style=ctx.palette.style("muted", italic=True)))
    lines = output.splitlines()
    if ctx.expanded:
        tail = lines[-EXPANDED_LINES:]
        hidden = len(lines) - len(tail)
        if hidden:
            parts.append(
                Text(f"… {count_of(hidden, 'line')} not shown", style=ctx.palette.style("muted"))
            )
        return parts + _lines(tail, ctx, "foreground")
    tail = lines[-COLLAPSED_TAIL:]
    hidden = len(lines) - len(tail)
    if hidden:
        note = f"… {count_of(hidden, 'earlier line')} ({EXPAND_KEY} to expand)"
        parts.append(Text(note, style=ctx.palette.style("muted", italic=True)))
    return parts + _lines(tail, ctx, "foreground")


def _lines(lines: list[str], ctx: RenderContext, token: str) -> list[RenderableType]:
    if not lines:
        return []
    return [Text("\n".join(lines), style=ctx.palette.style(token), no_wrap=False)]


def _more(hidden: int, ctx: RenderContext) -> list[RenderableType]:
    if hidden <= 0:
        return []
    hint = "" if ctx.expanded else f", {EXPAND_KEY} to expand"
    return [
        Text(
            f"… ({count_of(hidden, 'more line')}{hint})",
            style=ctx.palette.style("muted", italic=True),
        )
    ]


def _outcome(card: ToolCard, ctx: RenderContext) -> Text | None:
    palette = ctx.palette
    if card.status == "not_run":
        return Text("Not run: the answer was interrupted.", style=palette.style("muted"))
    if card.status in ("error", "interrupted", "aborted") and card.error:
        token = "error" if card.status == "error" else "warning"
        return Text(card.error, style=palette.style(token))
    facts: list[tuple[str, str]] = []
    if card.exit_code is not None:
        facts.append((f"exit {card.exit_code}", "success" if card.exit_code == 0 else "error"))
    if card.job_id is not None:
        pid = "" if card.job_pid is None else f" (pid {card.job_pid})"
        facts.append((f"runs on as background job {card.job_id}{pid}: /tasks lists it", "accent"))
    if card.duration_ms is not None:
        facts.append((f"{card.duration_ms / 1000:.1f}s", "muted"))
    if not facts:
        return None
    line = Text()
    for index, (fact, token) in enumerate(facts):
        if index:
            line.append(" · ", style=palette.style("muted"))
        line.append(fact, style=palette.style(token))
    return line


_BODIES: dict[str, Callable[[ToolCard, RenderContext], list[RenderableType]]] = {
    "read": _read_body,
    "write": _write_body,
    "edit": _edit_body,
}
