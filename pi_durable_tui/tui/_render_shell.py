"""The card of a shell command the user ran from the editor (``!cmd``, ``!!cmd``).

A bash card (``_render_tools``: the bounded output tail, the exit code and
duration, ``[aborted]`` or ``[interrupted]``) whose header says it is the user's:
``! command  (you)``, and ``(you, not sent to the model)`` for ``!!cmd``. Every
string in it comes from a ``Block`` (terminal-safe when built) and goes through
the sanitising ``Text`` of ``_terminal_text``, as tool output does.
"""

from __future__ import annotations

from rich.console import RenderableType

from pi_durable_tui.app import Block
from pi_durable_tui.tui._render_context import RenderContext
from pi_durable_tui.tui._render_tools import render_tool_card, status_word
from pi_durable_tui.tui._terminal_text import Text


def render_shell(block: Block, ctx: RenderContext) -> RenderableType:
    """Render a ``shell`` block: the user's command as a bash card marked as theirs."""
    card = block.tool
    if card is None:
        return Text(block.text)
    palette = ctx.palette
    first, _, rest = card.command.partition("\n")
    header = Text()
    header.append("! ", style=palette.style("accent", bold=True))
    header.append(first + (" …" if rest else ""), style="bold")
    whose = "you, not sent to the model" if block.detail else "you"
    header.append(f"  ({whose})  ", style=palette.style("muted"))
    header.append_text(status_word(card, ctx))
    return render_tool_card(card, ctx, header=header)
