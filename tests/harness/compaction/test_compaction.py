"""The compaction task ``pi.compaction`` run end to end with the faux provider (R108-R114)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from pi_durable_tui.ai import (
    FauxMatch,
    FauxProvider,
    FauxResponse,
    ModelRef,
    faux_error,
    faux_model,
    faux_response,
    faux_tool_call,
)
from pi_durable_tui.harness import (
    ASSISTANT,
    COMPACTION,
    INBOX_DOC,
    SYSTEM,
    TOOL_RESULT,
    USAGE_DOC,
    USER,
    AgentChange,
    CompactionSettings,
    EntryDraft,
    Input,
    RetrySettings,
    Settings,
    ToolApi,
    ToolResult,
    Write,
    define_extension,
    define_tool,
    hook,
)
from pi_durable_tui.kernel import ManualClock
from pi_durable_tui.storage.records import TaskRecord
from tests.harness.run_support import Rig, RigFactory, texts, within


class NoArgs(BaseModel):
    pass


SUMMARIZER = FauxMatch(system="You write context checkpoints")
KEEP_SMALL = Settings(compaction=CompactionSettings(keep_recent_tokens=100))
LONG = "A" * 800  # 200 tokens


def summary(text: str = "THE SUMMARY") -> FauxResponse:
    return faux_response(text, match=SUMMARIZER)


class GatedSleep:
    """The faux provider's pacing sleep: it waits while the gate is closed."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.gate.set()
        self.waiting = asyncio.Event()

    async def __call__(self, _seconds: float) -> None:
        if not self.gate.is_set():
            self.waiting.set()
            await self.gate.wait()


async def history(open_rig: RigFactory, *responses: FauxResponse, **options: Any) -> Rig:
    """A rig whose conversation holds ``first`` and a 200-token answer."""
    options.setdefault("settings", KEEP_SMALL)
    rig = await open_rig(faux_response(LONG), *responses, **options)
    await rig.ask("first")
    return rig


async def past_threshold(
    open_rig: RigFactory, *responses: FauxResponse, window: int, background: int = 0, **options: Any
) -> Rig:
    """A history whose next request is past a threshold of a ``window``-token model (R108).

    The history holds about 205 tokens; 1,000 are reserved for the answer.
    """
    settings = Settings(
        compaction=CompactionSettings(
            keep_recent_tokens=100, reserve_tokens=1000, background_tokens=background
        )
    )
    return await history(
        open_rig,
        *responses,
        models=[faux_model("sized", context_window=window)],
        settings=settings,
        agent=AgentChange(model=ModelRef("faux", "sized")),
        **options,
    )


async def finished(rig: Rig, task_id: int) -> TaskRecord:
    return await within(rig.harness.wait_for_task(task_id))


SUMMARY_TEXT = (
    "The conversation history before this point was compacted into the following summary:"
    "\n\n<summary>\nTHE SUMMARY\n</summary>"
)


# -- manual compaction (R110-R112) --


async def test_a_manual_compaction_places_its_summary_as_a_write_and_removes_its_status_r112(
    open_rig: RigFactory,
) -> None:
    rig = await history(open_rig, summary())

    task_id = await within(rig.root.compact("focus on tests"))
    task = await finished(rig, task_id)

    entries = await rig.transcript()
    assert [e.kind for e in entries] == [USER, ASSISTANT, COMPACTION]
    placed = entries[2]
    assert placed.head == entries[1].id
    assert placed.data == {"reason": "manual"}  # R112: its reason only
    assert texts(placed) == SUMMARY_TEXT
    submission_id = task.state["outcome"]["result"]["submission_id"]
    record = await (await rig.harness.submission(submission_id)).status()  # type: ignore[union-attr]
    assert (record.type, record.status, record.entry) == ("write", "done", placed.id)
    assert record.request_id == f"compaction:{task_id}"
    assert "compactions" not in await rig.live()
    assert any(v.get("compactions") for _, v, _ in rig.live_changes())
    context = await rig.root.context()
    assert [texts_of(m) for m in context.messages] == [SUMMARY_TEXT, LONG]


def texts_of(stored: dict[str, Any]) -> str:
    content = stored["content"]
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if b["type"] == "text")


async def test_the_summarizer_gets_the_serialized_history_without_tools_r110_r111(
    open_rig: RigFactory,
) -> None:
    rig = await history(open_rig, summary(), models=[faux_model("small-out", max_tokens=1000)])
    await within(rig.root.configure(AgentChange(model=ModelRef("faux", "small-out"))))

    await finished(rig, await within(rig.root.compact("focus on tests")))

    request = rig.faux.requests[-1]
    assert request.context.tools in (None, [])
    [prompt] = request.context.messages
    text = texts_of(prompt.model_dump(mode="json"))
    assert text.startswith("<conversation>\n[User]: first\n</conversation>")
    assert text.endswith("Additional focus: focus on tests")
    assert request.options.max_tokens == 1000  # min(0.8 x 16384, the model's 1000)
    assert request.options.cache_retention == "none"


async def test_nothing_to_compact_completes_without_an_entry_or_a_request_r109_r110(
    open_rig: RigFactory,
) -> None:
    rig = await open_rig(faux_response("short"))
    await rig.ask("hi")

    task = await finished(rig, await within(rig.root.compact()))

    assert task.state["outcome"] == {"status": "completed", "result": {}}
    assert await rig.kinds() == [USER, ASSISTANT]
    assert rig.faux.call_count == 1


async def test_a_compaction_without_a_model_fails_no_model_r110(open_rig: RigFactory) -> None:
    rig = await open_rig(agent=AgentChange(cwd="."))

    task = await finished(rig, await within(rig.root.compact()))

    assert task.state["outcome"]["error"] == {
        "message": "No model is configured",
        "detail": {"reason": "no_model"},
    }
    assert await rig.live() == {}


@pytest.mark.parametrize(
    ("decision", "expected_kinds"),
    [
        ({"decline": True}, [USER, ASSISTANT]),
        ({"summary": "FROM THE HOOK"}, [USER, ASSISTANT, COMPACTION]),
    ],
    ids=["decline", "summary"],
)
async def test_before_compact_decides_without_asking_the_model_r110(
    open_rig: RigFactory, decision: dict[str, Any], expected_kinds: list[str]
) -> None:
    seen: list[dict[str, Any]] = []

    def before_compact(info: dict[str, Any], _runtime: Any) -> dict[str, Any]:
        seen.append(info)
        return decision

    extension = define_extension(
        "decider", hooks=[hook("pi.compaction", before_compact=before_compact)]
    )
    rig = await history(open_rig, extensions=[extension])

    await finished(rig, await within(rig.root.compact("why")))

    assert await rig.kinds() == expected_kinds
    assert rig.faux.call_count == 1
    entries = await rig.transcript()
    assert seen[0]["reason"] == "manual"
    assert seen[0]["first_kept"] == entries[1].id
    assert seen[0]["entries"] == [entries[0].id]
    assert seen[0]["instructions"] == "why"
    if "summary" in decision:
        assert "FROM THE HOOK" in texts(entries[-1])


@pytest.mark.parametrize(
    ("response", "error"),
    [
        (
            faux_response("cut off", stop_reason="length", match=SUMMARIZER),
            "Summarization hit the token limit; the summary is incomplete",
        ),
        (
            faux_response(faux_tool_call("read", {"path": "x"}), match=SUMMARIZER),
            "Summarization attempted to call a tool",
        ),
        (faux_response("   ", match=SUMMARIZER), "Summarization produced no text"),
        (
            faux_error("Invalid request", status=400, match=SUMMARIZER),
            "Summarization failed: Invalid request",
        ),
    ],
    ids=["length", "tool-call", "no-text", "error"],
)
async def test_a_failed_summarization_fails_the_task_and_counts_its_usage_r111_r115(
    open_rig: RigFactory, response: FauxResponse, error: str
) -> None:
    rig = await history(open_rig, response)
    before = (await rig.root.snapshot(USAGE_DOC))["models"]["faux/faux-1"]["input"]  # type: ignore[index]

    task = await finished(rig, await within(rig.root.compact()))

    assert task.state["outcome"]["error"] == {"message": error, "detail": {"reason": "model_error"}}
    assert await rig.kinds() == [USER, ASSISTANT]
    assert "compactions" not in await rig.live()
    after = (await rig.root.snapshot(USAGE_DOC))["models"]["faux/faux-1"]["input"]  # type: ignore[index]
    assert after > before


async def test_a_retryable_summarization_error_retries_after_the_backoff_r111(
    open_rig: RigFactory,
) -> None:
    clock = ManualClock()
    rig = await history(
        open_rig,
        faux_error("Service unavailable", status=503, match=SUMMARIZER),
        summary(),
        clock=clock,
        settings=Settings(
            compaction=CompactionSettings(keep_recent_tokens=100),
            retry=RetrySettings(base_delay_ms=500),
        ),
    )
    task_id = await within(rig.root.compact())

    await within(rig.wait_until(lambda: clock.next_deadline() is not None))
    [status] = (await rig.live())["compactions"]
    assert status == {
        "task_id": task_id,
        "reason": "manual",
        "blocking": False,
        "attempt": 1,
        "retry": {"at": clock.now() + 500, "error": "Service unavailable"},
    }
    clock.advance(500)
    await finished(rig, task_id)

    assert await rig.kinds() == [USER, ASSISTANT, COMPACTION]
    assert "compactions" not in await rig.live()


async def test_aborting_the_conversation_aborts_a_manual_compaction_without_counting_it_r114(
    open_rig: RigFactory,
) -> None:
    pacing = GatedSleep()
    faux = FauxProvider([faux_response(LONG), summary()], tokens_per_second=1_000_000, sleep=pacing)
    rig = await open_rig(faux=faux, settings=KEEP_SMALL)
    await rig.ask("first")
    usage_before = await rig.root.snapshot(USAGE_DOC)
    pacing.gate.clear()
    task_id = await within(rig.root.compact())
    await within(pacing.waiting.wait())

    await within(rig.root.abort())

    task = await finished(rig, task_id)
    assert task.state["outcome"]["status"] == "aborted"
    assert await rig.kinds() == [USER, ASSISTANT]
    assert await rig.live() == {}
    assert await rig.root.snapshot(USAGE_DOC) == usage_before


async def test_a_summary_whose_cut_is_older_than_the_active_range_settles_stale_r113(
    open_rig: RigFactory,
) -> None:
    pacing = GatedSleep()
    calls: list[int] = []

    def second_uses_a_hook(_info: dict[str, Any], _runtime: Any) -> dict[str, Any] | None:
        calls.append(1)
        return {"summary": "NEWER"} if len(calls) == 2 else None

    extension = define_extension(
        "second", hooks=[hook("pi.compaction", before_compact=second_uses_a_hook)]
    )
    faux = FauxProvider(
        [faux_response(LONG), summary("OLDER")], tokens_per_second=1_000_000, sleep=pacing
    )
    rig = await open_rig(faux=faux, settings=KEEP_SMALL, extensions=[extension])
    await rig.ask("first")
    pacing.gate.clear()
    older = await within(rig.root.compact())
    await within(pacing.waiting.wait())
    note = [{"role": "user", "content": "B" * 800, "timestamp": 0}]
    await within(rig.root.submit(Write(EntryDraft("app.note", model=note))))
    newer = await within(rig.root.compact())
    await finished(rig, newer)

    pacing.gate.set()
    task = await finished(rig, older)

    submission = await rig.harness.submission(task.state["outcome"]["result"]["submission_id"])
    record = await submission.status()  # type: ignore[union-attr]
    assert (record.status, record.reason) == ("unanswered", "stale")
    entries = await rig.transcript()
    assert [e.kind for e in entries] == [USER, ASSISTANT, "app.note", COMPACTION]
    assert "NEWER" in texts(entries[-1])
    assert "compactions" not in await rig.live()


async def queued_summary(open_rig: RigFactory) -> tuple[Rig, int, Any, asyncio.Event]:
    """A manual compaction whose summary finished while a gate tool holds the run."""
    pacing, tool_gate = GatedSleep(), asyncio.Event()

    async def wait_for_gate(_args: Any, _api: ToolApi) -> ToolResult:
        await tool_gate.wait()
        return ToolResult(content="opened")

    gate_tool = define_tool("gate", description="Waits.", parameters=NoArgs, execute=wait_for_gate)
    faux = FauxProvider(
        [
            faux_response(LONG),
            summary(),
            faux_response(faux_tool_call("gate")),
            faux_response("answered"),
        ],
        tokens_per_second=1_000_000,
        sleep=pacing,
    )
    rig = await open_rig(
        faux=faux, settings=KEEP_SMALL, extensions=[define_extension("g", tools=[gate_tool])]
    )
    await rig.ask("first")
    pacing.gate.clear()
    task_id = await within(rig.root.compact())
    await within(pacing.waiting.wait())
    handle = await within(rig.root.submit(Input("second")))
    await within(rig.wait_until(lambda: rig.faux.call_count == 3))
    pacing.gate.set()  # the summary finishes while the gate tool holds the run
    task = await finished(rig, task_id)
    submission = await rig.harness.submission(task.state["outcome"]["result"]["submission_id"])
    assert submission is not None
    assert (await submission.status()).status == "queued"
    return rig, task_id, (handle, submission), tool_gate


async def test_a_summary_finished_while_the_conversation_is_busy_waits_for_a_boundary_r112(
    open_rig: RigFactory,
) -> None:
    rig, _task_id, (handle, _submission), tool_gate = await queued_summary(open_rig)
    assert [i["mode"] for i in (await rig.root.snapshot(INBOX_DOC))["items"]] == ["write"]  # type: ignore[index]

    tool_gate.set()
    record = await within(handle.wait())

    kinds = await rig.kinds()
    assert record.status == "done"
    # placed at the post-tools boundary, after the tool result; the next preparation
    # rebaselines the prompt after the new head marker (R81)
    assert kinds[-4:] == [TOOL_RESULT, COMPACTION, SYSTEM, ASSISTANT]
    assert "compactions" not in await rig.live()


async def test_withdrawing_a_queued_summary_removes_its_status_r114(
    open_rig: RigFactory,
) -> None:
    rig, _task_id, (handle, submission), tool_gate = await queued_summary(open_rig)

    assert await within(submission.abort()) == "aborted"

    assert "compactions" not in await rig.live()
    tool_gate.set()
    await within(handle.wait())
    assert COMPACTION not in await rig.kinds()


# -- thresholds (R108) --


async def test_above_the_blocking_threshold_a_generation_waits_for_a_compaction_it_owns_r108(
    open_rig: RigFactory,
) -> None:
    rig = await past_threshold(open_rig, summary(), faux_response("after compaction"), window=1100)

    record = await rig.ask("second")

    assert record.status == "done"
    entries = await rig.transcript()
    assert [e.kind for e in entries] == [USER, ASSISTANT, USER, COMPACTION, ASSISTANT]
    [compaction] = await rig.tasks("pi.compaction")
    generation = (await rig.tasks("pi.generation"))[1]
    assert compaction.owner == generation.id
    assert compaction.input == {"reason": "threshold"}
    assert compaction.state["outcome"]["result"] == {"entry_id": entries[3].id}
    sent = rig.faux.requests[-1].context.messages
    assert "THE SUMMARY" in str(sent[0].content)
    blocking = [v["compactions"] for _, v, _ in rig.live_changes() if v.get("compactions")]
    assert blocking[0][0]["blocking"] is True


async def test_a_generation_sends_anyway_when_its_threshold_compaction_fails_r108_r114(
    open_rig: RigFactory,
) -> None:
    rig = await past_threshold(
        open_rig, faux_response("   ", match=SUMMARIZER), faux_response("sent anyway"), window=1100
    )

    record = await rig.ask("second")

    assert record.status == "done"
    assert texts((await rig.transcript())[-1]) == "sent anyway"
    assert COMPACTION not in await rig.kinds()


async def test_above_the_background_threshold_a_background_compaction_runs_beside_the_request_r108(
    open_rig: RigFactory,
) -> None:
    rig = await past_threshold(
        open_rig, summary(), faux_response("answer"), window=4000, background=2900
    )

    record = await rig.ask("second")
    await within(rig.harness.wait_for_idle())
    [compaction] = await rig.tasks("pi.compaction")
    await finished(rig, compaction.id)

    assert record.status == "done"
    assert (compaction.owner, compaction.background) == (None, True)
    assert compaction.input == {"reason": "threshold"}
    assert (await rig.kinds()).count(COMPACTION) == 1
    assert "compactions" not in await rig.live()


async def test_an_overflow_whose_compaction_places_nothing_fails_model_error_r114(
    open_rig: RigFactory,
) -> None:
    extension = define_extension(
        "decline", hooks=[hook("pi.compaction", before_compact=lambda _i, _r: {"decline": True})]
    )
    overflow = "prompt is too long: 200000 tokens > 128000 maximum"
    rig = await history(open_rig, faux_error(overflow), extensions=[extension])

    record = await rig.ask("second")

    assert (record.status, record.reason, record.detail) == ("unanswered", "model_error", overflow)
    assert await rig.live() == {}


async def test_a_background_compaction_survives_aborting_the_conversation_r114(
    open_rig: RigFactory,
) -> None:
    held, release = asyncio.Event(), asyncio.Event()

    async def hold(_info: dict[str, Any], _runtime: Any) -> None:
        held.set()
        await release.wait()

    rig = await past_threshold(
        open_rig,
        summary(),
        faux_response("answer"),
        window=4000,
        background=2900,
        extensions=[define_extension("hold", hooks=[hook("pi.compaction", before_compact=hold)])],
    )
    assert (await rig.ask("second")).status == "done"
    await within(held.wait())

    await within(rig.root.abort())

    [stored] = await rig.tasks("pi.compaction")
    # The session's record: a reservation to ``running`` is not stored (issue 14).
    compaction = await rig.harness.session.read_task(stored.id)
    assert compaction is not None
    assert compaction.state["status"] == "running"
    assert compaction.abort_requested is False
    release.set()
    task = await finished(rig, compaction.id)
    assert task.state["outcome"]["status"] == "completed"
    assert COMPACTION in await rig.kinds()


async def test_aborting_a_run_aborts_its_blocking_compaction_first_r114(
    open_rig: RigFactory,
) -> None:
    pacing = GatedSleep()
    overflow = "prompt is too long: 200000 tokens > 128000 maximum"
    faux = FauxProvider(
        [faux_response(LONG), faux_error(overflow), summary()],
        tokens_per_second=1_000_000,
        sleep=pacing,
    )
    rig = await open_rig(faux=faux, settings=KEEP_SMALL)
    await rig.ask("first")
    pacing.gate.clear()  # the overflow error streams nothing; the summary waits
    handle = await within(rig.root.submit(Input("second")))
    await within(pacing.waiting.wait())
    assert rig.faux.requests[-1].context.system_prompt.startswith("You write context")  # type: ignore[union-attr]

    await within(rig.root.abort())

    record = await within(handle.wait())
    assert (record.status, record.reason) == ("unanswered", "aborted")
    [compaction] = await rig.tasks("pi.compaction")
    generation = (await rig.tasks("pi.generation"))[1]
    assert compaction.state["outcome"]["status"] == "aborted"
    assert generation.state["outcome"]["status"] == "aborted"
    assert compaction.ended_at is not None
    assert generation.ended_at is not None
    assert compaction.ended_at <= generation.ended_at
    assert COMPACTION not in await rig.kinds()
    assert await rig.live() == {}
