"""Agent events from commits (R125): one batch per commit, in order, from a snapshot."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pytest

from pi_durable_tui.ai import ToolCall, faux_error, faux_response, faux_tool_call
from pi_durable_tui.harness import (
    USER,
    CompactionSettings,
    EventStream,
    HarnessRuntime,
    Input,
    Settings,
    define_extension,
    define_task,
    watch_events,
)
from pi_durable_tui.kernel import ConversationOwned, ManualClock, Tx
from pi_durable_tui.storage import JsonObject
from pi_durable_tui.storage.records import TaskRecord
from tests.harness.view_support import RigFactory, ViewRig, collect, text_of, until, within

UPDATES = ("message_update", "tool_execution_update")


@dataclass(eq=False)
class EventLog:
    """Every batch a stream delivered, collected by a background consumer."""

    stream: EventStream
    batches: list[list[JsonObject]] = field(default_factory=list)

    def events(self) -> list[JsonObject]:
        return [event for batch in self.batches for event in batch]

    def types(self, *, updates: bool = False) -> list[str]:
        return [e["type"] for e in self.events() if updates or e["type"] not in UPDATES]

    def of(self, kind: str) -> list[JsonObject]:
        return [event for event in self.events() if event["type"] == kind]

    def batch_with(self, kind: str, **fields: Any) -> list[str]:
        """The types of the first batch holding an event of ``kind`` with ``fields``."""
        for batch in self.batches:
            for event in batch:
                if event["type"] == kind and all(event.get(k) == v for k, v in fields.items()):
                    return [e["type"] for e in batch]
        raise AssertionError(f"no {kind} {fields} in {self.types()}")

    async def until(self, kind: str, count: int = 1) -> None:
        await until(lambda: len(self.of(kind)) >= count)


@pytest.fixture
async def follow() -> AsyncIterator[Any]:
    """``await follow(rig, conversation_id=1, tail=None)``: an ``EventLog`` being filled."""
    consumers: list[tuple[EventStream, asyncio.Future[None]]] = []

    async def attach(rig: ViewRig, conversation_id: int = 1, tail: int | None = None) -> EventLog:
        log = EventLog(await within(watch_events(rig.harness, conversation_id, tail=tail)))

        async def consume() -> None:
            async for batch in log.stream:
                log.batches.append(batch)

        consumers.append((log.stream, asyncio.ensure_future(consume())))
        return log

    yield attach
    for stream, consumer in consumers:
        await within(stream.stop())
        await within(consumer)


def bash(command: str) -> ToolCall:
    return faux_tool_call("bash", {"command": command})


async def ask(rig: ViewRig, text: str) -> None:
    await within((await within(rig.root.submit(Input(text)))).wait())


async def test_a_run_with_a_tool_round_yields_its_events_in_R125_order(
    view_rig: RigFactory, follow: Any
) -> None:
    rig = await view_rig(
        faux_response("let me look", bash("echo one; sleep 0.2; echo two")),
        faux_response("all done " * 10),
        tokens_per_second=200,
    )
    log = await follow(rig)
    await ask(rig, "run echo")
    await log.until("run_end")
    assert log.types() == [
        "snapshot",
        # the admission: the input and the planned system prompt entry (issue 14)
        *("message_start", "message_end", "message_start", "message_end"),
        *("submission", "run_start", "turn_start"),
        *("message_start", "message_end", "usage_changed"),  # the tool-calling answer
        "tool_execution_start",
        *("tool_execution_end", "message_start", "message_end"),  # its result
        *("turn_end", "turn_start"),
        *("message_start", "message_end", "turn_end", "run_end", "submission", "usage_changed"),
    ]
    assert log.batches[0] == [log.stream.snapshot]
    assert log.batch_with("run_start") == [
        *("message_start", "message_end", "message_start", "message_end"),
        *("submission", "run_start", "turn_start"),
    ]
    assert log.batch_with("tool_execution_end") == [  # the result settles the round (issue 14)
        *("tool_execution_end", "message_start", "message_end", "turn_end", "turn_start")
    ]
    assert log.batch_with("run_end") == [
        *("message_end", "turn_end", "run_end", "submission", "usage_changed")
    ]
    starts = [event["task_id"] for event in log.of("turn_start")]
    assert [event["task_id"] for event in log.of("turn_end")] == starts
    assert [event["inputs"] for event in log.of("run_start") + log.of("run_end")] == [[8], [8]]
    assert log.of("tool_execution_start")[0]["args"] == {"command": "echo one; sleep 0.2; echo two"}
    assert [event["record"]["status"] for event in log.of("submission")] == ["placed", "done"]


async def test_message_updates_and_tool_updates_rebuild_what_was_committed_R125_R85_R103(
    view_rig: RigFactory, follow: Any
) -> None:
    rig = await view_rig(
        faux_response(bash("for i in 1 2 3; do echo line $i; sleep 0.12; done")),
        faux_response("streamed words " * 30),
        tokens_per_second=400,
    )
    log = await follow(rig)
    await ask(rig, "go")
    await log.until("run_end")
    output = ""
    for event in log.of("tool_execution_update"):
        change = event.get("output", {})
        output = change["set"] if "set" in change else output + change.get("append", "")
    assert output == "line 1\nline 2\nline 3\n"
    assert len(log.of("tool_execution_update")) >= 2

    events = log.events()
    first = max(i for i, e in enumerate(events) if e["type"] == "turn_start")
    text = ""
    for event in events[first:]:
        if event["type"] == "message_start" and event["message"]["role"] == "assistant":
            text = text_of(event["message"])
        for change in event.get("changes", []):
            text += change["delta"] if change["type"] == "text_delta" else ""
    # Partials are committed at most every 100 ms: the stream shows a prefix of the
    # answer, and its message_end carries the whole of it.
    final = text_of(log.of("message_end")[-1]["entry"]["model"][0])
    assert final == "streamed words " * 30
    assert final.startswith(text)
    assert len(log.of("message_update")) >= 2


async def test_a_retry_says_its_attempt_error_and_delay_then_ends_R125_R86_R87(
    view_rig: RigFactory, follow: Any
) -> None:
    clock = ManualClock(1_000_000.0)
    rig = await view_rig(
        faux_error("overloaded", status=529, retry_after_ms=5000),
        faux_response("recovered"),
        clock=clock,
    )
    log = await follow(rig)
    submission = await within(rig.root.submit(Input("hi")))
    await log.until("auto_retry_start")
    assert log.of("auto_retry_start") == [
        {
            "type": "auto_retry_start",
            "attempt": 1,
            "at": 1_005_000.0,
            "delay_ms": 5000,
            "error_message": "overloaded",
        }
    ]
    assert log.batch_with("auto_retry_start") == [
        "auto_retry_start",
        "message_start",
        "message_end",
        "usage_changed",
    ]
    await until(lambda: clock.sleepers > 0)
    clock.advance(5000)
    assert (await within(submission.wait())).status == "done"
    await log.until("run_end")
    assert log.of("auto_retry_end") == [{"type": "auto_retry_end", "attempt": 1}]


async def test_a_steer_queues_as_a_submission_and_is_placed_after_the_tool_round_R125_R61(
    view_rig: RigFactory, follow: Any
) -> None:
    rig = await view_rig(
        faux_response(bash("sleep 0.3")), faux_response("steered"), tokens_per_second=200
    )
    log = await follow(rig)
    first = await within(rig.root.submit(Input("go")))
    await log.until("tool_execution_start")
    steer = await within(rig.root.submit(Input("and this", when_busy="steer")))
    await within(first.wait())
    await log.until("run_end")
    queued = log.batch_with("inbox_update", items=[{"id": steer.id, "mode": "steer"}])
    assert queued == ["submission", "inbox_update"]
    assert log.batch_with("inbox_update", items=[]) == [  # with the result (issue 14)
        *("tool_execution_end", "message_start", "message_end", "message_start", "message_end"),
        *("turn_end", "submission", "inbox_update", "turn_start"),
    ]
    assert log.of("run_end")[0]["inputs"] == [first.id, steer.id]


async def test_a_manual_compaction_starts_ends_and_appends_its_summary_R125_R112(
    view_rig: RigFactory, follow: Any
) -> None:
    rig = await view_rig(
        faux_response("first answer " * 20),
        faux_response("the summary"),
        settings=Settings(compaction=CompactionSettings(keep_recent_tokens=5)),
    )
    await ask(rig, "some work")
    log = await follow(rig, tail=0)
    task_id = await within(rig.root.compact())
    await within(rig.root.wait_for_idle())
    await log.until("compaction_end")
    start = {"type": "compaction_start", "task_id": task_id, "reason": "manual", "blocking": False}
    assert log.of("compaction_start") == [start]
    assert log.of("compaction_end") == [
        {"type": "compaction_end", "task_id": task_id, "reason": "manual"}
    ]
    assert log.batch_with("compaction_end") == [
        *("message_start", "message_end", "compaction_end", "submission", "usage_changed")
    ]
    assert log.of("message_end")[-1]["entry"]["kind"] == "pi.compaction"
    assert [entry["kind"] for entry in log.stream.snapshot["entries"]] == []


async def _crash(task: TaskRecord, runtime: HarnessRuntime) -> None:
    raise RuntimeError("the phase broke")


async def _never(task: TaskRecord, runtime: HarnessRuntime) -> None:
    raise AssertionError("not aborted in this test")


CRASHING = define_task(
    "test.crash", initial=lambda _input: {"phase": "go"}, phases={"go": _crash}, abort=_never
)


async def test_a_faulted_task_is_reported_as_task_failed_R125_R37(
    view_rig: RigFactory, follow: Any
) -> None:
    rig = await view_rig(extensions=[define_extension("crashing", tasks=[CRASHING])])
    log = await follow(rig)
    definition = rig.harness.session.registry.get("test.crash")
    assert definition is not None

    def create(tx: Tx) -> int:
        return tx.create_task(definition, {}, ownership=ConversationOwned(), conversation_id=1).id

    task_id = await within(rig.harness.session.commit(create))
    rig.harness.resume()
    await log.until("task_failed")
    assert log.of("task_failed") == [
        {
            "type": "task_failed",
            "task_id": task_id,
            "kind": "test.crash",
            "message": "the phase broke",
        }
    ]


async def test_a_late_joiner_starts_from_a_snapshot_of_the_running_turn_R125(
    view_rig: RigFactory, follow: Any
) -> None:
    rig = await view_rig(
        faux_response(bash("echo early; sleep 0.3")), faux_response("end"), tokens_per_second=200
    )
    submission = await within(rig.root.submit(Input("go")))
    early = await follow(rig)
    await early.until("tool_execution_start")
    late = await follow(rig)
    await within(submission.wait())
    await late.until("run_end")
    snapshot = late.stream.snapshot
    assert snapshot["run"] == {"inputs": [submission.id]}
    assert [slot["status"] for slot in snapshot["tools"]] == ["running"]
    assert snapshot["agent"]["model"] == {"provider": "faux", "model_id": "faux-1"}
    assert "run_start" not in late.types()
    assert late.types().count("turn_end") == late.types().count("turn_start") + 1
    assert late.types()[-6:] == early.types()[-6:]


async def test_more_than_100_undelivered_batches_collapse_into_one_snapshot_R125(
    view_rig: RigFactory,
) -> None:
    rig = await view_rig()
    stream = await within(watch_events(rig.harness, 1))
    for index in range(130):
        entry = {"role": "user", "content": f"m{index}"}
        await within(rig.harness.session.commit(partial(_append, entry)))
    assert stream.pending == 31  # the snapshot and 99 batches collapsed at the 100th commit
    batches: list[list[JsonObject]] = []

    async def consume() -> None:
        async for batch in stream:
            batches.append(batch)
            if stream.pending == 0:
                return

    await within(consume())
    (snapshot,) = batches[0]
    assert snapshot["type"] == "snapshot"
    assert len(snapshot["entries"]) == 100
    assert [event["type"] for event in batches[1]] == ["message_start", "message_end"]
    assert await within(stream.stop()) == "stopped"


async def test_an_event_stream_ends_when_the_harness_closes_after_what_was_queued_R125_R27(
    view_rig: RigFactory,
) -> None:
    rig = await view_rig()
    stream = await within(watch_events(rig.harness, 1))
    await within(rig.harness.session.commit(lambda tx: tx.append(1, "note")))
    await within(rig.harness.close())
    batches = await collect(stream)
    assert [[event["type"] for event in batch] for batch in batches] == [
        ["snapshot"],
        ["entry_appended"],
    ]
    assert stream.reason == "session_closed"


def _append(entry: JsonObject, tx: Tx) -> None:
    tx.append(1, USER, model=[entry])
