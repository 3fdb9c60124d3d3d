"""The transcript: a windowed, anchored scroll of block widgets patched by key.

Only a window of consecutive blocks is mounted (at most ``WINDOW``, the last
``INITIAL`` at first), so a 10,000-block session opens as fast as a 10-block
one (DESIGN.md section 5: one widget per block for 1,000 blocks took seconds and
hundreds of MB; the last 30 took 0.9 s whatever the history). Reaching the top
mounts the previous ``PAGE`` loaded blocks, or asks the app for older ones
(``NeedOlder`` -> ``Controller.load_older``) when none are left; reaching the
bottom of a window that is not at the end mounts the next page. The view stays
pinned to the end (``anchor()``) until the user scrolls up, and paging keeps
the block the user was reading where it was.

Changes arrive as keys (``ViewChange``): an added block is mounted only when the
window is at the end, a changed block re-renders only its own widget.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence

from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import AwaitMount, Widget

from pi_durable_tui.app import Block, ScreenModel
from pi_durable_tui.tui._block_views import BlockView
from pi_durable_tui.tui._live_view import LiveAssistantView
from pi_durable_tui.tui._render_context import RenderContext

WINDOW = 60
"""Most blocks mounted at once while paging."""
INITIAL = 30
"""Blocks mounted when the transcript is (re)built: the newest ones."""
PAGE = 20
"""Blocks mounted (or requested from the controller) per page."""

BlockWidget = BlockView | LiveAssistantView


class NeedOlder(Message):
    """The user reached the oldest loaded block and older ones exist."""

    def __init__(self, count: int) -> None:
        super().__init__()
        self.count = count


def make_view(block: Block, ctx: RenderContext) -> BlockWidget:
    """Return the widget for a block: live for a streaming answer, a ``Static`` otherwise."""
    if block.kind == "assistant" and block.streaming:
        return LiveAssistantView(block, ctx)
    return BlockView(block, ctx)


class Transcript(VerticalScroll, can_focus=False):
    """The scrolling transcript of the shown conversation.

    Args:
        model: The view model whose ``blocks`` it shows.
        ctx: The render context for new widgets.
    """

    DEFAULT_CSS = """
    Transcript {
        height: 1fr;
        scrollbar-size-vertical: 1;
    }
    """

    def __init__(self, model: ScreenModel, ctx: RenderContext, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.model = model
        self.ctx = ctx
        self._views: dict[str, BlockWidget] = {}
        self._order: list[str] = []
        self._at_end = True
        self._awaiting_older = False
        self._restoring = False

    @property
    def mounted_keys(self) -> list[str]:
        """Keys of the mounted blocks, oldest first."""
        return list(self._order)

    def view(self, key: str) -> BlockWidget | None:
        """Return the mounted widget of a block, if it is mounted."""
        return self._views.get(key)

    def set_context(self, ctx: RenderContext) -> None:
        """Re-render the mounted blocks with a new context (theme, Ctrl+O, Alt+T).

        A view that followed the end follows it still (issue 12: after Ctrl+O grew
        the cards, the view stayed where the end used to be).
        """
        following = self._at_end and self.is_anchored
        self.ctx = ctx
        for view in self._views.values():
            view.rerender(ctx)
        if following:
            self.call_after_refresh(self._to_end)

    def _to_end(self) -> None:
        self.scroll_end(animate=False, immediate=True)
        self.anchor()

    def jump_to_start(self) -> None:
        """Show the oldest loaded blocks from their top (older ones page in above)."""
        blocks = self.model.blocks
        if self._order and self._index(self._order[0]) > 0:
            self.remove_children()
            self._views.clear()
            self._order.clear()
            self._mount_blocks(blocks[:INITIAL])
        self._leave_end()
        self._at_end = self._index(self._order[-1]) == len(blocks) - 1 if self._order else True
        self.call_after_refresh(self._to_start)

    def _to_start(self) -> None:
        self._restoring = True
        self.scroll_home(animate=False, immediate=True)
        self._restoring = False
        if self.model.has_older and not self._awaiting_older:
            self._awaiting_older = True
            self.post_message(NeedOlder(PAGE))

    def rebuild(self) -> None:
        """Drop every widget and mount the newest blocks, following the end."""
        self.remove_children()
        self._views.clear()
        self._order.clear()
        self._awaiting_older = False
        blocks = self.model.blocks
        self._mount_blocks(blocks[max(0, len(blocks) - INITIAL) :])
        self._at_end = True
        self.anchor()
        self.call_after_refresh(self._fill_viewport)

    def follow(self) -> None:
        """Show the end again and follow it (after the user sends something)."""
        if not self._at_end:
            self.rebuild()
        else:
            self._to_end()

    def blocks_added(self, keys: Sequence[str]) -> None:
        """Mount appended blocks if the window is at the end."""
        if not self._at_end:
            return
        following = self.is_anchored and self.scroll_y >= self.max_scroll_y - 1
        # A block the window already shows was mounted by a build that saw it: the
        # change that added it was queued before that build (the app subscribes first).
        fresh = [key for key in keys if key not in self._views]
        blocks = [block for block in map(self.model.block, fresh) if block is not None]
        self._mount_blocks(blocks)
        excess = len(self._order) - WINDOW
        if following and excess > 0:
            self._unmount(self._order[:excess])
        elif len(self._order) > 2 * WINDOW:
            # The user reads far above while a lot arrives: stop mounting at the end.
            self._unmount(self._order[-(len(self._order) - 2 * WINDOW) :])
            self._leave_end()

    def blocks_changed(self, keys: Sequence[str]) -> None:
        """Re-render the mounted widgets of changed blocks."""
        for key in keys:
            view = self._views.get(key)
            block = self.model.block(key)
            if view is None or block is None:
                continue
            if isinstance(view, BlockView) and block.kind == "assistant" and block.streaming:
                replacement = LiveAssistantView(block, self.ctx)
                self.mount(replacement, after=view)
                view.remove()
                self._views[key] = replacement
            else:
                view.update_block(block, self.ctx)

    def blocks_removed(self, keys: Sequence[str]) -> None:
        """Unmount removed blocks."""
        self._unmount([key for key in keys if key in self._views])

    def older_loaded(self, count: int) -> None:
        """Mount the page the controller just loaded, if this transcript asked for it."""
        if self._awaiting_older:
            self._awaiting_older = False
            if count:
                self._page_up()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        """Page in at the top and the bottom; follow the end again at the real end."""
        super().watch_scroll_y(old_value, new_value)
        if self._restoring:
            return
        # REMINDER: compare exactly: animated scrolls creep up to the edge in fractions.
        # And defer the work: this runs inside a scroll animation's step, which breaks
        # if a scroll (anchor, keep-in-place) stops that animation under it.
        if new_value <= 0 < old_value:
            self.call_later(self._page_up)
        elif old_value < self.max_scroll_y <= new_value:
            if not self._at_end:
                self.call_later(self._page_down)
            elif not self.is_anchored:
                self.call_later(self.anchor)

    def _fill_viewport(self) -> None:
        if self.max_scroll_y == 0 and self._order:
            self._page_up()

    def _page_up(self) -> None:
        blocks = self.model.blocks
        first = self._index(self._order[0]) if self._order else len(blocks)
        if first <= 0:
            if self.model.has_older and not self._awaiting_older:
                self._awaiting_older = True
                self.post_message(NeedOlder(PAGE))
            return
        keep = self._views[self._order[0]] if self._order else None
        mounted = self._mount_blocks(blocks[max(0, first - PAGE) : first], before=keep)
        excess = len(self._order) - WINDOW
        if excess > 0:
            self._unmount(self._order[-excess:])
            self._leave_end()
        if keep is not None:
            self._keep_in_place(keep, mounted, at_top=True)

    def _page_down(self) -> None:
        blocks = self.model.blocks
        last = self._index(self._order[-1]) if self._order else -1
        end = min(len(blocks), last + 1 + PAGE)
        keep = self._views[self._order[-1]] if self._order else None
        mounted = self._mount_blocks(blocks[last + 1 : end])
        self._at_end = end == len(blocks)
        excess = len(self._order) - WINDOW
        if excess > 0:
            self._unmount(self._order[:excess])
        if keep is not None:
            self._keep_in_place(keep, mounted, at_top=False)

    def _keep_in_place(
        self, widget: Widget, mounted: Awaitable[None] | None, *, at_top: bool
    ) -> None:
        """Once the new widgets are laid out, scroll so ``widget`` is where it was.

        Paging happens only at an edge, so "where it was" is known without reading
        positions now (they are stale until the pending layout): the old first block
        stays at the top after a page above, the old last block at the bottom after a
        page below.
        """
        self._restoring = True

        def restore() -> None:
            region = widget.virtual_region_with_margin
            if at_top:
                target = region.y
            else:
                target = region.bottom - self.scrollable_content_region.height
            self.scroll_to(y=target, animate=False, immediate=True)
            self._restoring = False

        async def after_mount() -> None:
            # REMINDER: mounting takes a few message cycles, and positions are only
            # right after the refresh that follows; ask for one so it comes.
            if mounted is not None:
                await mounted
            self.refresh(layout=True)
            self.call_after_refresh(restore)

        self.call_later(after_mount)

    def _leave_end(self) -> None:
        self._at_end = False
        self.anchor(False)

    def _index(self, key: str) -> int:
        for index, block in enumerate(self.model.blocks):
            if block.key == key:
                return index
        return 0

    def _mount_blocks(
        self, blocks: Sequence[Block], *, before: Widget | None = None
    ) -> AwaitMount | None:
        if not blocks:
            return None
        views = [make_view(block, self.ctx) for block in blocks]
        keys = [block.key for block in blocks]
        for key, view in zip(keys, views, strict=True):
            self._views[key] = view
        if before is None:
            self._order.extend(keys)
            return self.mount_all(views)
        else:
            # REMINDER: ``before`` is always the first mounted widget: pages are
            # prepended only at the top, so ``_order`` gains the keys at its start.
            self._order[0:0] = keys
            return self.mount_all(views, before=before)

    def _unmount(self, keys: Sequence[str]) -> None:
        drop = set(keys)
        for key in keys:
            view = self._views.pop(key, None)
            if view is not None:
                view.remove()
        self._order = [key for key in self._order if key not in drop]
