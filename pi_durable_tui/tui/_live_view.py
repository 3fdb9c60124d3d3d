"""The streaming assistant message: frozen finished blocks plus one live tail.

Each update of the ``live`` block only stores its values and arms a timer; the
render happens at most ``MAX_RENDERS_PER_S`` times a second, and further apart
when a render is slow (twice its cost), so a burst of tokens costs one render.
A render moves every settled top-level Markdown block (``finished_prefix``)
into its own ``Static``, rendered once and never again, and re-renders only the
last block. DESIGN.md section 5 measured this shape: 115 ms p99 lag at 200
tokens/s where one ``Markdown`` widget fed per token lagged 360-440 ms.
"""

from __future__ import annotations

import time

from rich.console import RenderableType
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.timer import Timer
from textual.widgets import Static

from pi_durable_tui.app import Block
from pi_durable_tui.tui._markdown_blocks import finished_prefix
from pi_durable_tui.tui._render_blocks import render_mark, render_markdown, render_thinking
from pi_durable_tui.tui._render_context import RenderContext

MAX_RENDERS_PER_S = 30
TAIL_SLACK_LINES = 2
"""Blank lines the live tail keeps below its text, so it grows without a layout per line."""


def _show(widget: Static, content: RenderableType | None, *, slack: int = 0) -> None:
    """Show ``content`` in a ``Static`` (hide it for ``None``), laying out only if needed.

    A layout reflows and repaints the whole screen (20-30 ms here with a full
    transcript), and setting ``display`` or updating a ``Static`` asks for one even
    when nothing moves. Most tokens add no line: then repainting the one widget is
    enough. With ``slack``, a growing widget reserves that many lines more than it
    needs (``min-height``), so a stream lays the screen out once per few lines.
    """
    if content is None:
        if widget.display:
            widget.display = False
        return
    if not widget.display:
        widget.display = True
    size = widget.size
    widget.update(content, layout=False)
    if not size.width:
        widget.refresh(layout=True)
        return
    needed = widget.get_content_height(size, size, size.width)
    reserved = size.height
    if needed > reserved or needed < reserved - slack or (not slack and needed != reserved):
        widget.styles.min_height = needed + slack if slack else None
        widget.refresh(layout=True)


class FrozenMarkdown(Static):
    """Settled Markdown of a streaming message, rendered once."""

    def __init__(self, source: str, ctx: RenderContext) -> None:
        super().__init__(render_markdown(source, ctx))
        self.source = source


class LiveTail(Static):
    """The last, still-growing Markdown block of a streaming message."""

    source: str = ""


class LiveAssistantView(Vertical):
    """A streaming assistant message, patched at most ~30 times a second.

    Args:
        block: The ``live`` block.
        ctx: The screen-wide render context.
    """

    DEFAULT_CSS = """
    LiveAssistantView {
        height: auto;
        padding: 0 1;
        margin: 1 0 0 0;
    }
    LiveAssistantView > Static {
        height: auto;
    }
    LiveAssistantView > FrozenMarkdown {
        margin-bottom: 1;  /* the blank line Rich puts between blocks of one Markdown */
    }
    """

    def __init__(self, block: Block, ctx: RenderContext) -> None:
        super().__init__(classes="block-assistant -streaming")
        self.block = block
        self._ctx = ctx
        self._frozen: list[FrozenMarkdown] = []
        self._frozen_text = ""
        self._timer: Timer | None = None
        self._next_render = 0.0
        self._thinking = Static(classes="thinking")
        self._tail = LiveTail()
        self._mark = Static(classes="mark")

    @property
    def shown_length(self) -> int:
        """How many characters of the message are rendered (frozen blocks plus the tail)."""
        return len(self._frozen_text) + len(self._tail.source)

    def compose(self) -> ComposeResult:
        """Thinking, then the frozen blocks (mounted later), then the tail and the mark."""
        yield self._thinking
        yield self._tail
        yield self._mark

    def on_mount(self) -> None:
        """Render the first values at once."""
        self._render_now()

    def update_block(self, block: Block, ctx: RenderContext) -> None:
        """Store new values; render them within the frame budget (at once when final).

        Args:
            block: The block (same key, new values).
            ctx: The render context.
        """
        self.block = block
        self._ctx = ctx
        if not block.streaming:
            self._render_now()
        elif self._timer is None:
            # REMINDER: Textual timers divide by their delay; zero raises.
            delay = max(0.001, self._next_render - time.monotonic())
            self._timer = self.set_timer(delay, self._render_now, name="live-render")

    def rerender(self, ctx: RenderContext) -> None:
        """Render everything again with a new context (theme or toggles)."""
        self._ctx = ctx
        for frozen in self._frozen:
            frozen.update(render_markdown(frozen.source, ctx))
        self._render_now()

    def _unfreeze(self) -> None:
        for widget in self._frozen:
            widget.remove()
        self._frozen.clear()
        self._frozen_text = ""

    def _render_now(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        started = time.monotonic()
        block, ctx = self.block, self._ctx
        text = block.text
        if not text.startswith(self._frozen_text):
            # The text was replaced (a retry dropped the partial): start over.
            self._unfreeze()
        tail = text[len(self._frozen_text) :]
        cut = finished_prefix(tail) if block.streaming else 0
        if cut:
            frozen = FrozenMarkdown(tail[:cut], ctx)
            self._frozen.append(frozen)
            self.mount(frozen, before=self._tail)
            self._frozen_text += tail[:cut]
            tail = tail[cut:]
        _show(self._thinking, render_thinking(block.thinking, ctx))
        self._tail.source = tail
        slack = TAIL_SLACK_LINES if block.streaming else 0
        _show(self._tail, render_markdown(tail, ctx) if tail.strip() else None, slack=slack)
        _show(self._mark, render_mark(block, ctx))
        cost = time.monotonic() - started
        self._next_render = started + max(1.0 / MAX_RENDERS_PER_S, 2 * cost)
