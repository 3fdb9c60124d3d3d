"""The widget of one finished transcript block: a ``Static`` patched in place by key.

A ``BlockView`` re-renders only when its own block changes (a tool card's
output grew, a mark appeared) or when a screen-wide toggle changes (theme,
Ctrl+O, Alt+T). Clicking a card that runs a child conversation asks to open it.
"""

from __future__ import annotations

from textual.events import Click
from textual.message import Message
from textual.widgets import Static

from pi_durable_tui.app import Block
from pi_durable_tui.tui._render_blocks import render_block
from pi_durable_tui.tui._render_context import RenderContext


class OpenConversation(Message):
    """Ask the app to show another conversation (a subagent's)."""

    def __init__(self, conversation_id: int) -> None:
        super().__init__()
        self.conversation_id = conversation_id


class BlockView(Static):
    """One block of the transcript, rendered once per change.

    Args:
        block: The block's current values.
        ctx: The screen-wide render context.
    """

    DEFAULT_CSS = """
    BlockView {
        padding: 0 1;
        margin: 1 0 0 0;
    }
    BlockView.block-user {
        background: $user-message-background;
        padding: 0 1;
    }
    BlockView.block-tool {
        background: $tool-card-background;
        border-left: wide $border;
        padding: 0 1;
    }
    BlockView.block-tool.-live {
        border-left: wide $accent;
    }
    BlockView.block-tool.-failed {
        border-left: wide $error;
    }
    BlockView.block-shell {
        background: $user-message-background;
        border-left: wide $border;
        padding: 0 1;
    }
    BlockView.block-shell.-live {
        border-left: wide $accent;
    }
    BlockView.block-shell.-failed {
        border-left: wide $error;
    }
    BlockView.block-system {
        display: none;
    }
    BlockView.block-system.-verbose {
        display: block;
    }
    """

    def __init__(self, block: Block, ctx: RenderContext) -> None:
        super().__init__(render_block(block, ctx), classes=f"block-{block.kind}")
        self.block = block
        self._apply_classes(ctx)

    def update_block(self, block: Block, ctx: RenderContext) -> None:
        """Show the block's new values.

        Args:
            block: The block (same key, new values).
            ctx: The render context.
        """
        self.block = block
        self.rerender(ctx)

    def rerender(self, ctx: RenderContext) -> None:
        """Render again with a new context (theme, expand or thinking toggles)."""
        self._apply_classes(ctx)
        self.update(render_block(self.block, ctx))

    def _apply_classes(self, ctx: RenderContext) -> None:
        card = self.block.tool
        self.set_class(ctx.verbose, "-verbose")
        self.set_class(card is not None and card.status in ("running", "streaming"), "-live")
        failed = card is not None and card.status in ("error", "interrupted", "aborted")
        self.set_class(failed, "-failed")

    def on_click(self, event: Click) -> None:
        """Open the child conversation a subagent card runs."""
        card = self.block.tool
        if card is not None and card.conversation_id is not None:
            event.stop()
            self.post_message(OpenConversation(card.conversation_id))
