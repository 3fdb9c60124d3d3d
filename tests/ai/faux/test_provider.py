"""The faux provider streams scripted responses exactly like a real provider."""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from pi_durable_tui.ai import (
    AssistantMessage,
    Context,
    DoneEvent,
    ErrorEvent,
    FauxMatch,
    FauxProvider,
    FauxUsage,
    ModelCost,
    StartEvent,
    StreamOptions,
    TextContent,
    TextDeltaEvent,
    ThinkingContent,
    ThinkingDeltaEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    Usage,
    faux_error,
    faux_model,
    faux_response,
    faux_thinking,
    faux_tool_call,
)
from pi_durable_tui.ai.faux._steps import serialize_context
from tests.ai.contexts import continue_with_tool_result, user_context
from tests.ai.faux.sleeps import RecordingSleep
from tests.ai.streams import check_stream_order, collect, sequence, summary
from tests.deadlines import WAIT

OPTIONS = StreamOptions()
THINKING = "abcdefghijklmnopqrstuvwxyz"  # 26 characters
TEXT = "Hello, world! This is faux."  # 27 characters
ARGS = {"path": "README.md"}  # '{"path": "README.md"}': 21 characters


def tool_turn() -> FauxProvider:
    return FauxProvider(
        [faux_response(faux_thinking(THINKING), TEXT, faux_tool_call("read", ARGS))]
    )


async def test_a_scripted_response_streams_the_exact_event_sequence_and_final_message() -> None:
    faux = tool_turn()
    events = await collect(faux.stream(faux.get_model(), user_context("hi"), OPTIONS))

    assert summary(events) == sequence(
        "start",
        "thinking_start 0",
        "thinking_delta 0 x2",
        "thinking_end 0",
        "text_start 1",
        "text_delta 1 x2",
        "text_end 1",
        "toolcall_start 2",
        "toolcall_delta 2 x2",
        "toolcall_end 2",
        "done",
    )
    check_stream_order(events)
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert done.reason == "toolUse"
    final = done.message
    assert final.stop_reason == "toolUse"
    assert (final.api, final.provider, final.model) == ("faux", "faux", "faux-1")
    assert final.content == [
        ThinkingContent(thinking=THINKING),
        TextContent(text=TEXT),
        ToolCall(id="call_0_2", name="read", arguments=ARGS),
    ]
    deltas = [e for e in events if isinstance(e, ToolCallDeltaEvent)]
    assert "".join(e.delta for e in deltas) == json.dumps(ARGS)
    end = next(e for e in events if isinstance(e, ToolCallEndEvent))
    assert end.tool_call == ToolCall(id="call_0_2", name="read", arguments=ARGS)


async def test_deltas_come_in_chunks_of_three_to_five_four_character_tokens() -> None:
    faux = tool_turn()
    events = await collect(faux.stream(faux.get_model(), user_context("hi"), OPTIONS))

    sizes = {
        kind.__name__: [len(e.delta) for e in events if isinstance(e, kind)]
        for kind in (ThinkingDeltaEvent, TextDeltaEvent, ToolCallDeltaEvent)
    }
    # One cycle of 3, 4, 5 tokens runs across the blocks of a response.
    assert sizes == {
        "ThinkingDeltaEvent": [12, 14],
        "TextDeltaEvent": [20, 7],
        "ToolCallDeltaEvent": [16, 5],
    }


async def test_every_event_partial_is_a_snapshot_that_later_deltas_do_not_change() -> None:
    faux = tool_turn()
    events = await collect(faux.stream(faux.get_model(), user_context("hi"), OPTIONS))

    text_deltas = [e for e in events if isinstance(e, TextDeltaEvent)]
    first = text_deltas[0].partial.content[1]
    assert isinstance(first, TextContent)
    assert first.text == TEXT[:20]
    tool_deltas = [e for e in events if isinstance(e, ToolCallDeltaEvent)]
    live = tool_deltas[0].partial.content[2]
    assert isinstance(live, ToolCall)
    assert live.arguments == {"path": "README"}  # the live parse of '{"path": "README'
    assert isinstance(events[0], StartEvent)
    assert events[0].partial.content == []


async def test_seeded_chunking_is_reproducible_and_stays_within_bounds() -> None:
    text = "x" * 400

    async def sizes(seed: int) -> list[int]:
        faux = FauxProvider([faux_response(text)], seed=seed)
        events = await collect(faux.stream(faux.get_model(), user_context("hi"), OPTIONS))
        return [len(e.delta) for e in events if isinstance(e, TextDeltaEvent)]

    first, again = await sizes(7), await sizes(7)
    assert first == again
    assert all(size in (12, 16, 20) for size in first[:-1])
    assert sum(first) == 400


async def test_responses_with_match_rules_serve_their_own_conversation_on_a_shared_provider() -> (
    None
):
    faux = FauxProvider(
        [
            faux_response(faux_tool_call("weather", {"city": "Oslo"}), match="weather"),
            faux_response("Roses are red.", match=FauxMatch(user="poem")),
            faux_response("It is sunny in Oslo.", match=FauxMatch(tool_result="sunny")),
        ]
    )
    model = faux.get_model()
    poem = user_context("write a poem")
    weather = user_context("what is the weather?")

    # The poem conversation asks first, yet skips the weather response queued before it.
    poem_answer = await faux.stream(model, poem, OPTIONS).result()
    weather_call = await faux.stream(model, weather, OPTIONS).result()
    follow_up = continue_with_tool_result(weather, weather_call, "sunny, 21 C")
    weather_answer = await faux.stream(model, follow_up, OPTIONS).result()

    assert poem_answer.text() == "Roses are red."
    assert weather_call.tool_calls()[0].name == "weather"
    # The id comes from the position in its own conversation, not from the request count.
    assert weather_call.tool_calls()[0].id == "call_0_0"
    assert weather_answer.text() == "It is sunny in Oslo."
    assert faux.pending_count == 0


async def test_a_response_without_match_is_taken_in_queue_order_by_any_request() -> None:
    faux = FauxProvider(
        [faux_response("only for admins", match=FauxMatch(system="admin")), faux_response("any")]
    )
    model = faux.get_model()

    first = await faux.stream(model, user_context("hi", system="guest"), OPTIONS).result()
    second = await faux.stream(model, user_context("hi", system="admin mode"), OPTIONS).result()

    assert [first.text(), second.text()] == ["any", "only for admins"]


async def test_a_factory_builds_each_response_from_the_request() -> None:
    seen: list[tuple[str, int]] = []

    def reply(context: Context, options: StreamOptions, call_index: int) -> AssistantMessage:
        seen.append((options.session_id or "", call_index))
        last = context.messages[-1]
        return AssistantMessage(
            api="faux",
            provider="faux",
            model="faux-1",
            content=[TextContent(text=f"#{call_index}: {last.content}")],
        )

    faux = FauxProvider([faux_response("queued first")], factory=reply)
    model = faux.get_model()
    options = StreamOptions(session_id="s1")

    answers = [
        (await faux.stream(model, user_context(text), options).result()).text()
        for text in ("a", "b")
    ]

    assert answers == ["queued first", "#1: b"]
    assert seen == [("s1", 1)]
    assert [request.call_index for request in faux.requests] == [0, 1]


async def test_pacing_requests_sleeps_adding_up_to_tokens_over_tokens_per_second(
    recording_sleep: RecordingSleep,
) -> None:
    sleep = recording_sleep
    faux = FauxProvider(
        [faux_response(faux_thinking(THINKING), TEXT, faux_tool_call("read", ARGS))],
        tokens_per_second=50,
        sleep=sleep,
    )
    loop = asyncio.get_running_loop()
    started = loop.time()

    await faux.stream(faux.get_model(), user_context("hi"), OPTIONS).result()

    streamed_chars = len(THINKING) + len(TEXT) + len(json.dumps(ARGS))
    assert sleep.total == pytest.approx(streamed_chars / 4 / 50)
    assert len(sleep.calls) == 6  # one per delta
    assert loop.time() - started < 0.5  # the fake sleep never waited for real


async def test_zero_tokens_per_second_never_calls_the_sleep(
    recording_sleep: RecordingSleep,
) -> None:
    sleep = recording_sleep
    faux = FauxProvider([faux_response(TEXT)], sleep=sleep)

    await faux.stream(faux.get_model(), user_context("hi"), OPTIONS).result()

    assert sleep.calls == []


async def test_abort_mid_stream_ends_with_an_aborted_error_keeping_partial_content() -> None:
    faux = tool_turn()
    abort = asyncio.Event()
    events = []
    async for event in faux.stream(faux.get_model(), user_context("hi"), OPTIONS, abort=abort):
        events.append(event)
        if isinstance(event, TextDeltaEvent):
            abort.set()

    last = events[-1]
    assert isinstance(last, ErrorEvent)
    assert last.reason == "aborted"
    message = last.error
    assert message.stop_reason == "aborted"
    assert message.error_message == "Request was aborted"
    assert message.content == [ThinkingContent(thinking=THINKING), TextContent(text=TEXT[:20])]
    assert message.usage.output == math.ceil((len(THINKING) + 20) / 4)
    assert not any(e.type == "toolcall_start" for e in events)


async def test_abort_during_a_paced_wait_stops_without_waiting_for_the_sleep() -> None:
    abort = asyncio.Event()
    never = asyncio.Event()

    async def stuck_sleep(seconds: float) -> None:
        abort.set()  # the user presses Esc while the provider waits
        await never.wait()

    faux = FauxProvider([faux_response(TEXT)], tokens_per_second=1, sleep=stuck_sleep)
    stream = faux.stream(faux.get_model(), user_context("hi"), OPTIONS, abort=abort)

    final = await asyncio.wait_for(stream.result(), timeout=WAIT)

    assert final.stop_reason == "aborted"
    assert final.content == [TextContent(text="")]


async def test_abort_before_start_ends_with_the_aborted_error_alone() -> None:
    faux = tool_turn()
    abort = asyncio.Event()
    abort.set()

    events = await collect(faux.stream(faux.get_model(), user_context("hi"), OPTIONS, abort=abort))

    assert summary(events) == [("error", None)]
    assert isinstance(events[0], ErrorEvent)
    assert events[0].reason == "aborted"
    assert faux.pending_count == 1  # the scripted response was not consumed


async def test_cancelling_the_consuming_task_propagates_cancelled_error() -> None:
    never = asyncio.Event()

    async def slow_sleep(seconds: float) -> None:
        await never.wait()

    faux = FauxProvider([faux_response(TEXT)], tokens_per_second=1, sleep=slow_sleep)
    started = asyncio.Event()

    async def consume() -> None:
        async for _event in faux.stream(faux.get_model(), user_context("hi"), OPTIONS):
            started.set()

    task = asyncio.create_task(consume())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_an_exhausted_queue_ends_with_a_clear_non_retryable_error() -> None:
    faux = FauxProvider([faux_response("one")])
    model = faux.get_model()
    await faux.stream(model, user_context("hi"), OPTIONS).result()

    events = await collect(faux.stream(model, user_context("again"), OPTIONS))

    assert summary(events) == [("error", None)]
    error = events[0]
    assert isinstance(error, ErrorEvent)
    assert error.reason == "error"
    assert error.error.error_message is not None
    assert error.error.error_message.startswith("No more faux responses queued")
    assert error.error.retryable is False


async def test_a_request_no_queued_response_fits_gets_an_error_naming_the_mismatch() -> None:
    faux = FauxProvider([faux_response("sunny", match="weather")])

    final = await faux.stream(faux.get_model(), user_context("write a poem"), OPTIONS).result()

    assert final.stop_reason == "error"
    assert "none fits" in (final.error_message or "")
    assert "write a poem" in (final.error_message or "")
    assert faux.pending_count == 1


async def test_repeat_last_replays_the_last_response_when_the_queue_runs_out() -> None:
    faux = FauxProvider([faux_response("same again")], when_exhausted="repeat_last")
    model = faux.get_model()

    texts = [(await faux.stream(model, user_context("hi"), OPTIONS).result()).text() for _ in "ab"]

    assert texts == ["same again", "same again"]


async def test_echo_answers_with_the_newest_user_text_when_the_queue_runs_out() -> None:
    faux = FauxProvider(when_exhausted="echo")

    final = await faux.stream(faux.get_model(), user_context("ping", "pong"), OPTIONS).result()

    assert final.text() == "pong"
    assert final.stop_reason == "stop"


async def test_a_scripted_error_without_content_carries_message_status_and_retryable() -> None:
    faux = FauxProvider([faux_error("Overloaded", status=529, retryable=True, retry_after_ms=500)])

    events = await collect(faux.stream(faux.get_model(), user_context("hi"), OPTIONS))

    assert summary(events) == [("error", None)]
    message = events[0].error  # type: ignore[union-attr]
    assert (message.stop_reason, message.error_message) == ("error", "Overloaded")
    assert (message.error_status, message.retryable, message.retry_after_ms) == (529, True, 500)


async def test_a_scripted_error_with_content_streams_the_content_first() -> None:
    faux = FauxProvider([faux_error("connection reset", "partial answer", status=500)])

    events = await collect(faux.stream(faux.get_model(), user_context("hi"), OPTIONS))

    assert [e.type for e in events][:2] == ["start", "text_start"]
    last = events[-1]
    assert isinstance(last, ErrorEvent)
    assert last.error.content == [TextContent(text="partial answer")]
    assert last.error.error_status == 500


async def test_custom_stop_reason_and_scripted_usage_are_kept_and_priced() -> None:
    priced = faux_model("priced", cost=ModelCost(input=3, output=15, cache_read=0.3))
    faux = FauxProvider(
        [
            faux_response(
                "cut off",
                stop_reason="length",
                usage=FauxUsage(input=1000, output=2000, cache_read=10_000),
            )
        ],
        models=[priced],
    )

    final = await faux.stream(faux.get_model("priced"), user_context("hi"), OPTIONS).result()

    assert final.stop_reason == "length"
    usage = final.usage
    counts = (usage.input, usage.output, usage.cache_read, usage.cache_write)
    assert counts == (1000, 2000, 10_000, 0)
    assert usage.total_tokens == 13_000
    assert usage.cost.input == pytest.approx(0.003)
    assert usage.cost.output == pytest.approx(0.03)
    assert usage.cost.cache_read == pytest.approx(0.003)
    assert usage.cost.total == pytest.approx(0.036)


async def test_usage_is_estimated_at_four_characters_per_token() -> None:
    faux = FauxProvider([faux_response(TEXT)])
    context = user_context("count me", system="be brief")

    final = await faux.stream(faux.get_model(), context, OPTIONS).result()

    assert final.usage.input == math.ceil(len(serialize_context(context)) / 4)
    assert final.usage.output == math.ceil(len(TEXT) / 4)
    assert final.usage.total_tokens == final.usage.input + final.usage.output
    assert final.usage.cost.total == 0


async def test_a_finished_assistant_message_can_be_queued_as_a_step() -> None:
    scripted = AssistantMessage(
        api="faux",
        provider="faux",
        model="faux-1",
        content=[TextContent(text="done")],
        usage=Usage(input=1, output=2),
        response_id="r-1",
    )
    faux = FauxProvider([scripted])

    final = await faux.stream(faux.get_model(), user_context("hi"), OPTIONS).result()

    assert final.text() == "done"
    assert (final.usage.input, final.usage.output, final.response_id) == (1, 2, "r-1")


async def test_the_prompt_cache_simulation_counts_the_shared_prefix_as_cache_reads() -> None:
    faux = FauxProvider([faux_response("one"), faux_response("two")], simulate_prompt_cache=True)
    model = faux.get_model()
    options = StreamOptions(session_id="s")
    first_context = user_context("a long enough question to share " * 4)

    first = await faux.stream(model, first_context, options).result()
    second_context = Context(messages=[*first_context.messages, first])
    second = await faux.stream(model, second_context, options).result()

    assert first.usage.cache_read == 0
    assert first.usage.cache_write > 0
    assert second.usage.cache_read >= first.usage.cache_write - 1
    assert second.usage.input == 0


async def test_faux_models_default_to_faux_1_and_more_can_be_registered() -> None:
    faux = FauxProvider()
    faux.add_model("faux-2")

    default = faux.get_model()
    assert (default.id, default.context_window, default.max_tokens) == ("faux-1", 128_000, 16_384)
    assert [m.id for m in faux.models] == ["faux-1", "faux-2"]
    assert all(m.api == "faux" and m.provider == "faux" for m in faux.models)
    with pytest.raises(LookupError, match="faux-9"):
        faux.get_model("faux-9")


async def test_a_model_of_another_api_gets_an_error_event_not_an_exception() -> None:
    faux = FauxProvider([faux_response("x")])
    foreign = faux.get_model().model_copy(update={"api": "openai-completions"})

    final = await faux.stream(foreign, user_context("hi"), OPTIONS).result()

    assert final.stop_reason == "error"
    assert "openai-completions" in (final.error_message or "")


async def test_chosen_by_position_a_provider_built_in_code_uses_nothing_up() -> None:
    faux = FauxProvider(
        [faux_response(faux_tool_call("read", ARGS)), faux_response("done")],
        choose_by="position",
    )
    model = faux.get_model()
    context = user_context("hi")

    first = await faux.stream(model, context, OPTIONS).result()
    again = await faux.stream(model, context, OPTIONS).result()
    second = await faux.stream(
        model, continue_with_tool_result(context, first, "ok"), OPTIONS
    ).result()

    assert (
        first.tool_calls()
        == again.tool_calls()
        == [ToolCall(id="call_0_0", name="read", arguments=ARGS)]
    )
    assert second.text() == "done"
    assert faux.pending_count == 2


def test_an_unknown_way_of_choosing_is_refused_naming_both() -> None:
    with pytest.raises(ValueError, match="choose_by must be queue or position, got 'random'"):
        FauxProvider(choose_by="random")  # type: ignore[arg-type]
