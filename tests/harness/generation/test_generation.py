"""The generation task ``pi.generation`` run end to end with the faux provider (R77-R92)."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from pydantic import BaseModel

from pi_durable_tui.ai import (
    FauxProvider,
    ModelRef,
    faux_error,
    faux_model,
    faux_response,
    faux_tool_call,
)
from pi_durable_tui.harness import (
    ASSISTANT,
    COMPACTION,
    SYSTEM,
    USER,
    AgentChange,
    CompactionSettings,
    Continue,
    Input,
    ProgressSettings,
    RetrySettings,
    Settings,
    ToolApi,
    ToolResult,
    define_extension,
    define_tool,
    hook,
    section,
)
from pi_durable_tui.kernel import ManualClock
from tests.harness.run_support import Rig, RigFactory, message, texts, within

# -- R83: no model --


async def test_a_run_without_a_model_fails_no_model_and_leaves_the_conversation_idle_r83(
    open_rig: RigFactory,
) -> None:
    rig = await open_rig(agent=AgentChange(cwd="."))

    record = await rig.ask("hello")

    assert (record.status, record.reason) == ("unanswered", "no_model")
    assert record.detail == "No model is configured"
    [generation] = await rig.tasks("pi.generation")
    assert generation.state["outcome"]["status"] == "failed"
    assert generation.state["outcome"]["error"] == {
        "message": "No model is configured",
        "detail": {"reason": "no_model"},
    }
    assert await rig.live() == {}
    assert await rig.kinds() == [USER]


async def test_a_model_the_registry_does_not_know_fails_no_model_naming_it_r83(
    open_rig: RigFactory,
) -> None:
    rig = await open_rig(agent=AgentChange(model=ModelRef("faux", "gone")))

    record = await rig.ask("hello")

    assert (record.status, record.reason) == ("unanswered", "no_model")
    assert record.detail == "Model faux/gone is not available"


# -- R77: planned system entries --


async def test_the_first_request_plans_a_system_entry_and_an_unchanged_prompt_plans_none_r77(
    open_rig: RigFactory,
) -> None:
    role = ["You code."]
    extension = define_extension("role", sections=[section("role", lambda _input: role[0])])
    rig = await open_rig(
        faux_response("one"), faux_response("two"), faux_response("three"), extensions=[extension]
    )

    await rig.ask("first")
    await rig.ask("second")
    assert await rig.kinds() == [USER, SYSTEM, ASSISTANT, USER, ASSISTANT]

    role[0] = "You review."
    await rig.ask("third")
    entries = await rig.transcript()
    assert [e.kind for e in entries[5:]] == [USER, SYSTEM, ASSISTANT]
    assert message(entries[6])["sections"] == {"role": "<role>\nYou review.\n</role>"}
    assert rig.faux.requests[0].context.system_prompt == "<role>\nYou code.\n</role>"


async def test_a_conversation_without_sections_or_tools_appends_no_system_entry_r77(
    open_rig: RigFactory,
) -> None:
    rig = await open_rig(faux_response("hi"))

    await rig.ask("hello")

    assert await rig.kinds() == [USER, ASSISTANT]


# -- R85: streamed partials --


async def test_streamed_partials_are_committed_as_appends_at_most_every_partial_interval_r85(
    open_rig: RigFactory,
) -> None:
    text = "word " * 240  # 300 tokens of 4 characters: about 0.3 s at 1000 tokens/s
    faux = FauxProvider([faux_response(text)], tokens_per_second=1000)
    interval = 40
    rig = await open_rig(
        faux=faux, settings=Settings(progress=ProgressSettings(partial_interval_ms=interval))
    )

    record = await rig.ask("talk")

    partials = [
        (published, ops)
        for published, value, ops in rig.live_changes()
        if "message" in value.get("generation", {})
    ]
    assert len(partials) >= 3
    gaps = [b.at - a.at for (a, _), (b, _) in itertools.pairwise(partials)]
    assert min(gaps) >= interval / 1000
    for _published, ops in partials[1:]:
        assert [op["op"] for op in ops] == ["append"]
        assert ops[0]["path"][-1] == "text"
    streamed = [
        value["generation"]["message"]
        for _, value, _ in rig.live_changes()
        if "message" in value.get("generation", {})
    ]
    assert all(text.startswith(texts_of(m)) for m in streamed)
    answer = (await rig.transcript())[-1]
    assert record.answer == answer.id
    assert texts(answer) == text
    assert await rig.live() == {}


def partials_of(rig: Rig) -> list[dict[str, Any]]:
    """Every committed partial, in commit order."""
    return [
        value["generation"]["message"]
        for _, value, _ in rig.live_changes()
        if "message" in value.get("generation", {})
    ]


def texts_of(stored: dict[str, Any]) -> str:
    return "".join(b.get("text", "") for b in stored["content"] if b["type"] == "text")


# -- R86, R87: retries --


async def test_retryable_errors_back_off_from_the_policy_and_honour_retry_after_r86_r87(
    open_rig: RigFactory,
) -> None:
    clock = ManualClock()
    start = clock.now()
    rig = await open_rig(
        faux_error("Server overloaded", status=529),
        faux_error("Rate limited", status=429, retry_after_ms=5000),
        faux_response("finally"),
        clock=clock,
        settings=Settings(retry=RetrySettings(base_delay_ms=1000)),
    )
    handle = await within(rig.root.submit(Input("go")))

    await within(rig.wait_until(lambda: clock.next_deadline() is not None))
    assert clock.next_deadline() == start + 1000
    live = await rig.live()
    assert live["generation"] == {
        "attempt": 1,
        "retry": {"at": start + 1000, "error": "Server overloaded"},
    }
    clock.advance(999)
    await asyncio.sleep(0.05)
    assert rig.faux.call_count == 1

    clock.advance(1)
    # attempt 2 waits 2000 ms by the policy, but the provider asked for 5000 ms
    await within(rig.wait_until(lambda: clock.next_deadline() == start + 1000 + 5000))
    assert (await rig.live())["generation"]["retry"]["error"] == "Rate limited"
    clock.advance(5000)
    record = await within(handle.wait())

    assert record.status == "done"
    entries = await rig.transcript()
    assert [message(e)["stop_reason"] for e in entries if e.kind == ASSISTANT] == [
        "error",
        "error",
        "stop",
    ]
    assert record.answer == entries[-1].id
    assert await rig.live() == {}


async def test_retries_give_up_after_max_retries_with_model_error_r86(
    open_rig: RigFactory,
) -> None:
    clock = ManualClock()
    rig = await open_rig(
        *[faux_error("Service unavailable", status=503) for _ in range(3)],
        clock=clock,
        settings=Settings(retry=RetrySettings(max_retries=2, base_delay_ms=10)),
    )
    handle = await within(rig.root.submit(Input("go")))
    for _ in range(2):
        await within(rig.wait_until(lambda: clock.next_deadline() is not None))
        clock.advance(1000)

    record = await within(handle.wait())

    assert (record.status, record.reason, record.detail) == (
        "unanswered",
        "model_error",
        "Service unavailable",
    )
    assert rig.faux.call_count == 3
    [generation] = await rig.tasks("pi.generation")
    assert generation.state["outcome"]["error"]["detail"] == {"reason": "model_error"}
    assert await rig.live() == {}


async def test_a_provider_wait_longer_than_max_agent_delay_is_not_retried_r86(
    open_rig: RigFactory,
) -> None:
    rig = await open_rig(
        faux_error("Rate limited", status=429, retry_after_ms=120_000),
        clock=ManualClock(),
    )

    record = await rig.ask("go")

    assert (record.status, record.reason) == ("unanswered", "model_error")
    assert rig.faux.call_count == 1


async def test_a_non_retryable_error_fails_at_once_and_keeps_the_error_entry_r86(
    open_rig: RigFactory,
) -> None:
    rig = await open_rig(faux_error("Invalid request: bad schema", status=400))

    record = await rig.ask("go")

    assert (record.status, record.reason) == ("unanswered", "model_error")
    assert record.detail == "Invalid request: bad schema"
    last = (await rig.transcript())[-1]
    assert message(last)["stop_reason"] == "error"


# -- R86, R108: overflow --

OVERFLOW = "prompt is too long: 200000 tokens > 128000 maximum"


async def test_an_overflow_runs_one_blocking_compaction_then_sends_again_r86(
    open_rig: RigFactory,
) -> None:
    rig = await open_rig(
        faux_response("A" * 400),
        faux_error(OVERFLOW),
        faux_response("SUMMARY OF THE PAST"),
        faux_response("done"),
        settings=Settings(compaction=CompactionSettings(keep_recent_tokens=20)),
    )
    await rig.ask("first")

    record = await rig.ask("second")

    assert record.status == "done"
    entries = await rig.transcript()
    assert [e.kind for e in entries] == [USER, ASSISTANT, USER, ASSISTANT, COMPACTION, ASSISTANT]
    summary = entries[4]
    assert summary.head == entries[1].id
    assert "SUMMARY OF THE PAST" in texts(summary)
    assert message(entries[3])["stop_reason"] == "error"
    # the failed response and the compaction it starts land in one commit (R86)
    filed = next(p for p in rig.commits if entries[3].id in [e.id for e in p.info.entries])
    assert [t.kind for t in filed.info.tasks] == ["pi.compaction", "pi.generation"]
    resent = rig.faux.requests[3].context.messages
    assert "SUMMARY OF THE PAST" in str(resent[0].content)
    assert record.answer == entries[-1].id
    compaction = (await rig.tasks("pi.compaction"))[0]
    assert compaction.owner is not None
    assert compaction.state["outcome"]["result"] == {"entry_id": summary.id}
    assert await rig.live() == {}


async def test_a_second_overflow_after_compacting_fails_model_error_r86(
    open_rig: RigFactory,
) -> None:
    rig = await open_rig(
        faux_response("A" * 400),
        faux_error(OVERFLOW),
        faux_response("SUMMARY"),
        faux_error(OVERFLOW),
        settings=Settings(compaction=CompactionSettings(keep_recent_tokens=20)),
    )
    await rig.ask("first")

    record = await rig.ask("second")

    assert (record.status, record.reason, record.detail) == ("unanswered", "model_error", OVERFLOW)
    assert rig.faux.call_count == 4


async def test_an_overflow_without_anything_to_compact_fails_model_error_r86(
    open_rig: RigFactory,
) -> None:
    rig = await open_rig(faux_error(OVERFLOW))

    record = await rig.ask("first")

    assert (record.status, record.reason) == ("unanswered", "model_error")
    assert await rig.tasks("pi.compaction") == []


# -- R92: abort while streaming --


async def test_abort_while_streaming_keeps_the_committed_partial_as_an_aborted_entry_r92(
    open_rig: RigFactory,
) -> None:
    text = "slow " * 2000
    faux = FauxProvider([faux_response(text)], tokens_per_second=400)
    rig = await open_rig(
        faux=faux, settings=Settings(progress=ProgressSettings(partial_interval_ms=20))
    )
    handle = await within(rig.root.submit(Input("talk")))
    await within(rig.wait_until(lambda: any(texts_of(m) for m in partials_of(rig))))

    await within(rig.root.abort())

    record = await within(handle.wait())
    assert (record.status, record.reason) == ("unanswered", "aborted")
    entries = await rig.transcript()
    assert [e.kind for e in entries] == [USER, ASSISTANT]
    aborted = message(entries[1])
    assert aborted["stop_reason"] == "aborted"
    assert texts(entries[1])
    assert text.startswith(texts(entries[1]))
    last_partial = [
        v["generation"]["message"]
        for _, v, _ in rig.live_changes()
        if "message" in v.get("generation", {})
    ][-1]
    assert texts(entries[1]) == texts_of(last_partial)
    assert await rig.live() == {}


# -- R65: on_yield --


async def test_an_on_yield_continuation_appends_a_user_entry_and_keeps_the_run_open_r65(
    open_rig: RigFactory,
) -> None:
    asked: list[str] = []

    def on_yield(answer: Any, _runtime: Any) -> Continue | None:
        asked.append(answer.text())
        return Continue("keep going") if len(asked) == 1 else None

    extension = define_extension("yield", hooks=[hook("pi.generation", on_yield=on_yield)])
    rig = await open_rig(faux_response("first"), faux_response("second"), extensions=[extension])

    record = await rig.ask("go")

    entries = await rig.transcript()
    assert [(e.kind, texts(e)) for e in entries] == [
        (USER, "go"),
        (ASSISTANT, "first"),
        (USER, "keep going"),
        (ASSISTANT, "second"),
    ]
    assert record.status == "done"
    assert record.answer == entries[-1].id
    assert asked == ["first", "second"]


class _Empty(BaseModel):
    pass


def gate_extension(gate: asyncio.Event) -> Any:
    async def execute(_args: _Empty, _api: ToolApi) -> ToolResult:
        await gate.wait()
        return ToolResult(content="opened")

    return define_tool("gate", description="Waits.", parameters=_Empty, execute=execute)


def continue_unless_done(answer: Any, _runtime: Any) -> Continue | None:
    return None if answer.text() == "after keep going" else Continue("keep going")


async def test_an_on_yield_continuation_is_dropped_when_the_final_boundary_placed_input_r65(
    open_rig: RigFactory,
) -> None:
    gate = asyncio.Event()
    extension = define_extension(
        "yield",
        tools=[gate_extension(gate)],
        hooks=[hook("pi.generation", on_yield=continue_unless_done)],
    )
    rig = await open_rig(
        faux_response(faux_tool_call("gate")),
        faux_response("first"),
        faux_response("for the follow-up"),
        faux_response("after keep going"),
        extensions=[extension],
    )
    first = await within(rig.root.submit(Input("go")))
    await within(rig.wait_until(lambda: rig.faux.call_count == 1))
    follow_up = await within(rig.root.submit(Input("later")))

    gate.set()
    first_record = await within(first.wait())
    await within(rig.root.wait_for_idle())

    users = [texts(e) for e in await rig.transcript() if e.kind == USER]
    assert users == ["go", "later", "keep going"]
    assert first_record.status == "done"
    assert first_record.answer == next(e.id for e in await rig.transcript() if texts(e) == "first")
    # the follow-up's own answer yields again, and that continuation applies
    assert (await within(follow_up.wait())).status == "done"


# -- R84: before_request --


async def test_before_request_replaces_the_messages_of_that_request_only_r84(
    open_rig: RigFactory,
) -> None:
    def before_request(messages: list[Any], _runtime: Any) -> list[Any]:
        return [*messages, {"role": "user", "content": "injected", "timestamp": 0}]

    extension = define_extension(
        "inject", hooks=[hook("pi.generation", before_request=before_request)]
    )
    rig = await open_rig(faux_response("one"), faux_response("two"), extensions=[extension])

    await rig.ask("first")
    await rig.ask("second")

    for request in rig.faux.requests:
        assert request.context.messages[-1].content == "injected"
    assert [m.content for m in rig.faux.requests[1].context.messages].count("injected") == 1
    assert all("injected" not in texts(e) for e in await rig.transcript())


async def test_a_before_request_hook_that_raises_is_reported_and_the_request_still_goes_r84(
    open_rig: RigFactory,
) -> None:
    def before_request(_messages: list[Any], _runtime: Any) -> list[Any]:
        raise RuntimeError("hook broke")

    extension = define_extension(
        "broken", hooks=[hook("pi.generation", before_request=before_request)]
    )
    rig = await open_rig(faux_response("fine"), extensions=[extension])

    record = await rig.ask("go")

    assert record.status == "done"
    assert any("hook broke" in report.message for report in rig.reports)


async def test_the_model_and_thinking_level_are_pinned_at_prepare_and_sent_r83_r84(
    open_rig: RigFactory,
) -> None:
    rig = await open_rig(
        faux_response("ok"),
        models=[faux_model("thinker", reasoning=True)],
        agent=AgentChange(model=ModelRef("faux", "thinker"), thinking_level="high"),
    )

    await rig.ask("go")

    [request] = rig.faux.requests
    assert request.model.id == "thinker"
    assert request.options.reasoning == "high"
    assert request.options.session_id
