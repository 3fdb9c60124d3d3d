"""Reading an ``AssistantStream`` in tests, and the event-order rule every stream keeps."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pi_durable_tui.ai import (
    AssistantEvent,
    AssistantMessage,
    AssistantStream,
    DoneEvent,
    ErrorEvent,
)


async def collect(
    stream: AssistantStream, on_event: Callable[[AssistantEvent], None] | None = None
) -> list[AssistantEvent]:
    """Read a whole stream, calling ``on_event`` after each event."""
    events: list[AssistantEvent] = []
    async for event in stream:
        events.append(event)
        if on_event is not None:
            on_event(event)
    return events


def summary(events: Sequence[AssistantEvent]) -> list[tuple[str, int | None]]:
    """Event types with their content indexes (None for start and terminal events)."""
    return [(event.type, getattr(event, "content_index", None)) for event in events]


def sequence(*steps: str) -> list[tuple[str, int | None]]:
    """Expand ``"text_delta 0 x3"`` steps into what ``summary`` returns.

    A step is an event type, then the content index for block events, then
    ``xN`` to repeat it: ``sequence("start", "text_start 0", "text_delta 0 x2",
    "text_end 0", "done")``.
    """
    expanded: list[tuple[str, int | None]] = []
    for step in steps:
        kind, *rest = step.split()
        times = int(rest.pop()[1:]) if rest and rest[-1].startswith("x") else 1
        index = int(rest[0]) if rest else None
        expanded += [(kind, index)] * times
    return expanded


def final(events: Sequence[AssistantEvent]) -> AssistantMessage:
    """The message of the terminal event."""
    last = events[-1]
    if isinstance(last, DoneEvent):
        return last.message
    assert isinstance(last, ErrorEvent)
    return last.error


def check_stream_order(events: Sequence[AssistantEvent]) -> None:
    """Fail unless ``events`` keep the event contract of model-layer.md 1.3.

    One ``start`` first; then block events where each block is opened once, in
    content-index order, gets only deltas of its own kind while open and is
    closed at most once; exactly one terminal event, last. ``done`` comes after
    every block was closed; an ``error`` may leave blocks open. The final message
    holds one content block per opened block.
    """
    assert [e.type for e in events[:1]] == ["start"], summary(events)
    terminals = [i for i, e in enumerate(events) if isinstance(e, (DoneEvent, ErrorEvent))]
    assert terminals == [len(events) - 1], summary(events)
    open_blocks: dict[int, str] = {}
    opened = 0
    for event in events[1:-1]:
        kind, _, phase = event.type.rpartition("_")
        index = getattr(event, "content_index", None)
        assert index is not None, event.type
        if phase == "start":
            assert index == opened, f"block {index} opened out of order: {summary(events)}"
            open_blocks[index] = kind
            opened += 1
        else:
            where = f"{event.type} on block {index}: {summary(events)}"
            assert open_blocks.get(index) == kind, where
            if phase == "end":
                del open_blocks[index]
    if isinstance(events[-1], DoneEvent):
        assert not open_blocks, f"done with blocks still open: {summary(events)}"
    assert len(final(events).content) == opened, summary(events)
