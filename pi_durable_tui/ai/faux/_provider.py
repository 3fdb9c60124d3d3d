"""The faux provider: scripted responses streamed exactly like a real provider.

Owns ``FauxProvider`` (api ``faux``): streaming the step chosen for a request
as events, with chunking, pacing, abort, usage and cost. The steps and their
builders live in ``_steps``, the choice of a step in ``_selection``. It is how
the product runs offline and how every layer above is tested. Implements
model-layer.md 1.6, with the event protocol of 1.3, the abort rules of 1.4 and
the usage and cost of 1.5.

Where it departs from pi-ai's faux provider, and why:

- Steps are chosen by queue (``choose_by="queue"``, the default: the first
  queued step that fits is used up) or by position (``choose_by="position"``,
  what script files use: the step at the request's position in its
  conversation, so a restarted process gives the same next response for the
  same context; see ``_selection``).
- Everything a response shows is derived from its position ``k`` (the assistant
  messages in the request's context), never from a per-process counter: tool
  calls without an id get ``call_<k>_<block>``, the response id is
  ``faux-<k>`` and seeded chunk sizes are drawn per position.
- Chunks are deterministic (3, 4, 5, 3, ... tokens of 4 characters) unless a
  ``seed`` is given, so event sequences can be asserted exactly.
- Responses may carry a ``match`` rule, so several conversations can share one
  provider and still get their own answers.
- Cost is computed from the model's prices (zero for the default faux models),
  so cost displays can be tested with a priced faux model.
- A scripted error with no content ends with the error event alone, like an HTTP
  error before any byte of the stream; with content it streams that content first,
  like a failure in mid-stream.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import math
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from typing import Any, Literal

from pi_durable_tui.ai._events import (
    AssistantEvent,
    AssistantStream,
    DoneEvent,
    ErrorEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from pi_durable_tui.ai._partial_json import PartialJson
from pi_durable_tui.ai._pricing import calculate_cost
from pi_durable_tui.ai._types import (
    AssistantContent,
    AssistantMessage,
    Context,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)
from pi_durable_tui.ai.faux._prompt_size import PromptSizes
from pi_durable_tui.ai.faux._selection import (
    WHEN_EXHAUSTED,
    Request,
    StepQueue,
    Steps,
    StepsByPosition,
    WhenExhausted,
    conversation_position,
)
from pi_durable_tui.ai.faux._steps import (
    CHARS_PER_TOKEN,
    FAUX_API,
    FAUX_PROVIDER,
    FauxError,
    FauxFactory,
    FauxRequest,
    FauxResponse,
    FauxStep,
    FauxUsage,
    arguments_json,
    block_text,
    estimate_tokens,
    faux_model,
    serialize_context,
)

ABORTED_MESSAGE = "Request was aborted"

ChooseBy = Literal["queue", "position"]
"""How a request's step is chosen (see ``_selection``)."""

Sleep = Callable[[float], Awaitable[None]]


class _Aborted(Exception):
    """Raised inside the event generator when the abort event is seen."""


class FauxProvider:
    """A provider that replays scripted responses as real stream events.

    Args:
        responses: The steps (see ``enqueue``).
        models: The models it serves; ``faux-1`` when omitted. Their ``api`` and
            ``provider`` are set to this provider's.
        factory: Builds a response for any request no step answers.
        choose_by: ``queue`` (the first step that fits a request is used up) or
            ``position`` (the step at the request's position in its conversation,
            nothing used up: what script files do, so a restart changes nothing).
        tokens_per_second: Pacing of the deltas; ``0`` streams without waiting.
        when_exhausted: What a request gets when no step answers (``WhenExhausted``).
        chunk_tokens: The smallest and largest chunk, in tokens.
        seed: Draw chunk sizes at random from this seed instead of cycling.
        sleep: Waits between chunks when pacing; inject a fake one in tests.
        clock: Seconds since the epoch, for message timestamps.
        simulate_prompt_cache: With a ``session_id`` and cache retention, count
            the prefix shared with the session's previous prompt as cache reads
            and the rest as cache writes (model-layer.md 1.6).
        api: The api name it registers under.
        provider: The provider name of its models.
    """

    def __init__(
        self,
        responses: Iterable[FauxStep] = (),
        *,
        models: Iterable[Model] | None = None,
        factory: FauxFactory | None = None,
        choose_by: ChooseBy = "queue",
        tokens_per_second: float = 0.0,
        when_exhausted: WhenExhausted = "error",
        chunk_tokens: tuple[int, int] = (3, 5),
        seed: int | None = None,
        sleep: Sleep = asyncio.sleep,
        clock: Callable[[], float] = time.time,
        simulate_prompt_cache: bool = False,
        api: str = FAUX_API,
        provider: str = FAUX_PROVIDER,
    ) -> None:
        if tokens_per_second < 0 or not math.isfinite(tokens_per_second):
            raise ValueError(f"tokens_per_second must be >= 0, got {tokens_per_second}")
        if when_exhausted not in WHEN_EXHAUSTED:
            raise ValueError(f"when_exhausted must be one of {', '.join(WHEN_EXHAUSTED)}")
        if choose_by not in ("queue", "position"):
            raise ValueError(f"choose_by must be queue or position, got {choose_by!r}")
        low, high = chunk_tokens
        if not 1 <= low <= high:
            raise ValueError(f"chunk_tokens must be (low, high) with 1 <= low <= high: {low, high}")
        self._api = api
        self._provider = provider
        chooser = StepQueue if choose_by == "queue" else StepsByPosition
        self._steps: Steps = chooser(responses, when_exhausted, factory)
        self._tokens_per_second = tokens_per_second
        self._chunk_tokens = (low, high)
        self._seed = seed
        self._sleep = sleep
        self._clock = clock
        self._simulate_prompt_cache = simulate_prompt_cache
        self._prompt_sizes = PromptSizes()
        self._models: dict[str, Model] = {}
        self._previous_prompts: dict[str, str] = {}
        self.requests: list[FauxRequest] = []
        """Every request received, in start order."""
        for model in models if models is not None else [faux_model()]:
            self.add_model(model)

    @property
    def api(self) -> str:
        """The api name models of this provider carry (``faux`` by default)."""
        return self._api

    @property
    def provider(self) -> str:
        """The provider name of this provider's models."""
        return self._provider

    @property
    def models(self) -> list[Model]:
        """The models it serves, in registration order."""
        return list(self._models.values())

    @property
    def call_count(self) -> int:
        """How many requests have started."""
        return len(self.requests)

    @property
    def pending_count(self) -> int:
        """How many steps are still unused (by position: all of them)."""
        return self._steps.pending

    def add_model(self, model: Model | str) -> Model:
        """Serve one more model (for model-switch tests).

        Args:
            model: A model row, or just an id for a default faux model.

        Returns:
            The registered model, with this provider's ``api`` and ``provider``.
        """
        row = faux_model(model) if isinstance(model, str) else model
        row = row.model_copy(update={"api": self._api, "provider": self._provider})
        self._models[row.id] = row
        return row

    def get_model(self, model_id: str | None = None) -> Model:
        """Return a served model.

        Args:
            model_id: The id; the first registered model when omitted.

        Returns:
            The model.

        Raises:
            LookupError: When no served model has this id.
        """
        if model_id is None:
            return next(iter(self._models.values()))
        try:
            return self._models[model_id]
        except KeyError:
            known = ", ".join(self._models) or "none"
            message = f"faux provider serves no model {model_id!r} (known: {known})"
            raise LookupError(message) from None

    def enqueue(self, *steps: FauxStep) -> None:
        """Queue steps after those already queued.

        Args:
            *steps: Responses, finished messages or factories. By queue, a request
                takes the first step that fits it (a step without ``match`` fits
                any); by position, see ``_selection``.
        """
        self._steps.steps.extend(steps)

    def set_responses(self, steps: Iterable[FauxStep]) -> None:
        """Replace the queued steps.

        Args:
            steps: The new steps.
        """
        self._steps.steps = list(steps)

    def stream(
        self,
        model: Model,
        context: Context,
        options: StreamOptions,
        *,
        abort: asyncio.Event | None = None,
    ) -> AssistantStream:
        """Start one request; nothing is chosen until the stream is first iterated.

        Args:
            model: One of this provider's models.
            context: System prompt, messages and tools.
            options: Per-request options (``session_id`` feeds the cache simulation).
            abort: When set, the stream ends with an ``aborted`` error event
                keeping the content streamed so far.

        Returns:
            The stream of events.
        """
        return AssistantStream(self._events(model, context, options, abort))

    async def _events(
        self,
        model: Model,
        context: Context,
        options: StreamOptions,
        abort: asyncio.Event | None,
    ) -> AsyncIterator[AssistantEvent]:
        call_index = len(self.requests)
        self.requests.append(FauxRequest(call_index, model, context, options))
        position = conversation_position(context)
        message = AssistantMessage(
            api=self._api,
            provider=model.provider,
            model=model.id,
            timestamp=int(self._clock() * 1000),
        )
        if model.api != self._api:
            yield _failure(message, f"faux provider {self._api!r} cannot serve api {model.api!r}")
            return
        if abort is not None and abort.is_set():
            yield _aborted(message)
            return
        response = self._choose(Request(context, options, position, call_index))
        if isinstance(response, str):
            yield _failure(message, response)
            return
        message.response_id = response.response_id or f"faux-{position}"
        message.usage = self._input_usage(context, options)
        blocks = [_with_id(block, position, i) for i, block in enumerate(response.content)]
        if response.error is not None and not blocks:
            yield _failure(message, response.error.message, response.error)
            return
        streamed: list[AssistantContent] = []
        try:
            async for event in self._stream_blocks(message, blocks, streamed, position, abort):
                yield event
        except _Aborted:
            message.content = streamed
            message.usage = self._finish_usage(model, message.usage, streamed, None)
            yield _aborted(message)
            return
        message.content = blocks
        message.usage = self._finish_usage(model, message.usage, blocks, response.usage)
        if response.error is not None or response.stop_reason == "error":
            error = response.error or FauxError("faux response stopped with an error")
            yield _failure(message, error.message, error)
        elif response.stop_reason == "aborted":
            yield _aborted(message)
        else:
            has_calls = any(isinstance(block, ToolCall) for block in blocks)
            message.stop_reason = response.stop_reason or ("toolUse" if has_calls else "stop")
            yield DoneEvent(message.stop_reason, message)

    def _choose(self, request: Request) -> FauxResponse | str:
        """Return the response for a request, or the error message when there is none."""
        step = self._steps.choose(request)
        if callable(step):
            step = step(request.context, request.options, request.call_index)
        if isinstance(step, AssistantMessage):
            step = _response_from_message(step)
        return step

    async def _stream_blocks(
        self,
        message: AssistantMessage,
        blocks: list[AssistantContent],
        streamed: list[AssistantContent],
        position: int,
        abort: asyncio.Event | None,
    ) -> AsyncIterator[AssistantEvent]:
        # REMINDER: blocks in ``streamed`` are replaced, never mutated, so every
        # event's ``partial`` stays a consistent snapshot after later deltas. A
        # delta's snapshot is built only when read (``source``): the block is cut
        # from the scripted one at the delta's end, so streaming costs the deltas,
        # not one copy of the growing text per delta.
        base = message.model_copy()

        def snapshot() -> AssistantMessage:
            return base.model_copy(update={"content": list(streamed)})

        def snapshot_with(
            index: int, block: Callable[[], AssistantContent]
        ) -> Callable[[], AssistantMessage]:
            before = streamed[:index]
            return lambda: base.model_copy(update={"content": [*before, block()]})

        sizes = self._chunk_sizes(position)
        yield StartEvent(snapshot())
        grown: Callable[[], AssistantContent] | None = None
        """The block being streamed, as of its last delta (built when read)."""
        try:
            for index, block in enumerate(blocks):
                await self._pause(0, abort)
                streamed.append(_emptied(block))
                yield _start_event(block, index, snapshot())
                live = PartialJson()  # live arguments, as real providers give them
                end = 0
                for piece in _chunks(_streamed_text(block), sizes):
                    await self._pause(len(piece), abort)
                    end += len(piece)
                    if isinstance(block, ToolCall):
                        grown = functools.partial(_with_arguments, block, dict(live.feed(piece)))
                        yield ToolCallDeltaEvent(index, piece, snapshot_with(index, grown))
                    elif isinstance(block, ThinkingContent):
                        grown = functools.partial(_cut, block, end)
                        yield ThinkingDeltaEvent(index, piece, snapshot_with(index, grown))
                    else:
                        grown = functools.partial(_cut, block, end)
                        yield TextDeltaEvent(index, piece, snapshot_with(index, grown))
                grown = None
                streamed[index] = block
                yield _end_event(block, index, snapshot())
        except _Aborted:
            if grown is not None:
                streamed[-1] = grown()
            raise

    def _chunk_sizes(self, position: int) -> Iterator[int]:
        """Chunk sizes in characters for one response: cycled, or drawn per position."""
        low, high = self._chunk_tokens
        if self._seed is None:
            return (tokens * CHARS_PER_TOKEN for tokens in itertools.cycle(range(low, high + 1)))
        draw = random.Random(f"{self._seed}:{position}")
        return (draw.randint(low, high) * CHARS_PER_TOKEN for _ in itertools.count())

    async def _pause(self, chars: int, abort: asyncio.Event | None) -> None:
        """Wait for ``chars`` characters' worth of tokens, then check the abort event."""
        if chars and self._tokens_per_second > 0:
            seconds = chars / CHARS_PER_TOKEN / self._tokens_per_second
            await _sleep_unless_aborted(self._sleep(seconds), abort)
        else:
            # Yield to the loop even when instant, so aborts and cancellations
            # land between chunks as they would with a real server.
            await asyncio.sleep(0)
        if abort is not None and abort.is_set():
            raise _Aborted

    def _input_usage(self, context: Context, options: StreamOptions) -> Usage:
        """Estimate the input side of the usage, simulating prompt caching if asked."""
        session = options.session_id
        if not (self._simulate_prompt_cache and session and options.cache_retention != "none"):
            # Counted per message, never serialised whole (issue 14).
            return Usage(input=estimate_tokens(self._prompt_sizes.chars(context)))
        prompt = serialize_context(context)
        previous = self._previous_prompts.get(session, "")
        self._previous_prompts[session] = prompt
        shared = len(_common_prefix(previous, prompt))
        return Usage(
            cache_read=estimate_tokens(shared),
            cache_write=estimate_tokens(len(prompt) - shared),
        )

    def _finish_usage(
        self,
        model: Model,
        usage: Usage,
        content: list[AssistantContent],
        scripted: FauxUsage | None,
    ) -> Usage:
        """Complete the usage with the output estimate, the script's counts and the cost."""
        output = estimate_tokens(sum(len(block_text(block)) for block in content))
        final = usage.model_copy(update={"output": output})
        if scripted is not None:
            for name in ("input", "output", "cache_read", "cache_write"):
                value = getattr(scripted, name)
                if value is not None:
                    setattr(final, name, value)
        final.total_tokens = final.input + final.output + final.cache_read + final.cache_write
        final.cost = calculate_cost(model, final)
        return final


def _with_id(block: AssistantContent, position: int, index: int) -> AssistantContent:
    if isinstance(block, ToolCall) and not block.id:
        return block.model_copy(update={"id": f"call_{position}_{index}"})
    return block


def _streamed_text(block: AssistantContent) -> str:
    """The text a block streams as deltas: its text, reasoning or arguments JSON."""
    if isinstance(block, ToolCall):
        return arguments_json(block)
    if isinstance(block, ThinkingContent):
        return block.thinking
    return block.text


def _emptied(block: AssistantContent) -> AssistantContent:
    """The block as its start event shows it: no text, reasoning or arguments yet."""
    if isinstance(block, ToolCall):
        return block.model_copy(update={"arguments": {}})
    if isinstance(block, ThinkingContent):
        return block.model_copy(update={"thinking": ""})
    return block.model_copy(update={"text": ""})


def _cut(block: TextContent | ThinkingContent, end: int) -> AssistantContent:
    """The block with its first ``end`` characters of text or reasoning."""
    if isinstance(block, ThinkingContent):
        return block.model_copy(update={"thinking": block.thinking[:end]})
    return block.model_copy(update={"text": block.text[:end]})


def _with_arguments(block: ToolCall, arguments: dict[str, Any]) -> AssistantContent:
    return block.model_copy(update={"arguments": arguments})


def _start_event(block: AssistantContent, index: int, partial: AssistantMessage) -> AssistantEvent:
    if isinstance(block, ToolCall):
        return ToolCallStartEvent(index, partial)
    if isinstance(block, ThinkingContent):
        return ThinkingStartEvent(index, partial)
    return TextStartEvent(index, partial)


def _end_event(block: AssistantContent, index: int, partial: AssistantMessage) -> AssistantEvent:
    if isinstance(block, ToolCall):
        return ToolCallEndEvent(index, block, partial)
    if isinstance(block, ThinkingContent):
        return ThinkingEndEvent(index, block.thinking, partial)
    return TextEndEvent(index, block.text, partial)


def _chunks(text: str, sizes: Iterator[int]) -> Iterator[str]:
    start = 0
    while start < len(text):
        size = next(sizes)
        yield text[start : start + size]
        start += size


def _common_prefix(first: str, second: str) -> str:
    size = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        size += 1
    return first[:size]


async def _sleep_unless_aborted(sleeping: Awaitable[None], abort: asyncio.Event | None) -> None:
    """Await ``sleeping``, returning early when ``abort`` is set."""
    if abort is None:
        await sleeping
        return
    sleeper = asyncio.ensure_future(sleeping)
    waiter = asyncio.ensure_future(abort.wait())
    try:
        done, _ = await asyncio.wait({sleeper, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if sleeper in done:
            sleeper.result()
    finally:
        sleeper.cancel()
        waiter.cancel()


def _response_from_message(message: AssistantMessage) -> FauxResponse:
    error = None
    if message.stop_reason == "error" or message.error_message is not None:
        error = FauxError(
            message.error_message or "faux response stopped with an error",
            message.error_status,
            message.retryable,
            message.retry_after_ms,
        )
    usage = message.usage
    counted = (usage.input, usage.output, usage.cache_read, usage.cache_write)
    scripted = FauxUsage(*counted) if any(counted) else None
    stop = message.stop_reason if message.stop_reason != "error" else None
    return FauxResponse(tuple(message.content), stop, scripted, error, None, message.response_id)


def _failure(message: AssistantMessage, text: str, error: FauxError | None = None) -> ErrorEvent:
    message.stop_reason = "error"
    message.error_message = text
    if error is not None:
        message.error_status = error.status
        message.retryable = error.retryable
        message.retry_after_ms = error.retry_after_ms
    else:
        message.retryable = False
    return ErrorEvent("error", message)


def _aborted(message: AssistantMessage) -> ErrorEvent:
    message.stop_reason = "aborted"
    message.error_message = ABORTED_MESSAGE
    return ErrorEvent("aborted", message)
