"""Tool rounds of the generation: parallel and sequential calls, controls, abort (R89-R91).

A parallel round runs every call at once, a sequential one (by settings or a
tool's ``execution_mode``) starts each after the previous (R89, R90); aborting a
sequential round answers the calls still pending, aborting one tool task leaves
its siblings running (R91); ``terminate``, ``handoff`` and ``add_tools`` controls
end the run or extend the tool filter (R90); a steer queued during a round is
placed after its results (R64, R90). Run end to end with the faux provider
through ``open_rig``.
"""

from __future__ import annotations

from typing import Any

import pytest

from pi_durable_tui.ai import ModelRef, faux_response, faux_tool_call
from pi_durable_tui.harness import (
    AGENT_DOC,
    RESET,
    TOOL_RESULT,
    AgentChange,
    Input,
    Settings,
    Tool,
    ToolApi,
    ToolControl,
    ToolResult,
    define_extension,
)
from tests.harness.run_support import (
    Rig,
    RigFactory,
    ToolBodyGate,
    make_tool,
    message,
    returns,
    start_gate,
    texts,
    within,
)

# -- R89, R90, R91: rounds --


async def start_two_gates(
    open_rig: RigFactory, settings: Settings | None = None, mode: str = "parallel"
) -> tuple[Rig, ToolBodyGate, ToolBodyGate, Any]:
    first, second = ToolBodyGate(), ToolBodyGate()
    extension = define_extension(
        "probe",
        tools=[make_tool("one", first, execution_mode=mode), make_tool("two", second)],
    )
    rig = await open_rig(
        faux_response(faux_tool_call("one"), faux_tool_call("two")),
        faux_response("done"),
        extensions=[extension],
        settings=settings,
    )
    handle = await within(rig.root.submit(Input("go")))
    await within(first.started.wait())
    return rig, first, second, handle


async def test_a_parallel_round_runs_every_call_at_once_r89(open_rig: RigFactory) -> None:
    rig, first, second, handle = await start_two_gates(open_rig)

    await within(second.started.wait())
    slots = (await rig.live())["tools"]
    assert [s["status"] for s in slots] == ["running", "running"]
    first.opened.set()
    second.opened.set()
    assert (await within(handle.wait())).status == "done"
    results = [message(e)["tool_call_id"] for e in await rig.transcript() if e.kind == TOOL_RESULT]
    assert sorted(results) == ["call_0_0", "call_0_1"]


@pytest.mark.parametrize(
    ("settings", "mode"),
    [(Settings(tool_execution="sequential"), "parallel"), (None, "sequential")],
    ids=["settings", "execution-mode"],
)
async def test_a_sequential_round_starts_each_call_after_the_previous_one_r89_r90(
    open_rig: RigFactory, settings: Settings | None, mode: str
) -> None:
    rig, first, second, handle = await start_two_gates(open_rig, settings, mode)

    slots = (await rig.live())["tools"]
    assert slots[1] == {"call_id": "call_0_1", "name": "two", "status": "pending"}
    assert len(await rig.tasks("pi.tool")) == 1
    first.opened.set()
    await within(second.started.wait())
    slots = (await rig.live())["tools"]
    assert slots[0]["status"] == "done"
    assert slots[1]["status"] == "running"
    assert slots[1]["task_id"] == (await rig.tasks("pi.tool"))[1].id
    second.opened.set()
    assert (await within(handle.wait())).status == "done"


async def test_aborting_a_sequential_round_answers_the_calls_still_pending_r91(
    open_rig: RigFactory,
) -> None:
    rig, _first, _second, handle = await start_two_gates(
        open_rig, Settings(tool_execution="sequential")
    )

    await within(rig.root.abort())

    record = await within(handle.wait())
    assert (record.status, record.reason) == ("unanswered", "aborted")
    results = [message(e) for e in await rig.transcript() if e.kind == TOOL_RESULT]
    assert [(r["tool_name"], r["content"][-1]["text"]) for r in results] == [
        ("one", "<harness>\n[error] Tool one was aborted\n</harness>"),
        ("two", "<harness>\n[error] Tool two was aborted\n</harness>"),
    ]
    assert len(await rig.tasks("pi.tool")) == 1
    assert await rig.live() == {}


def controlled(control: ToolControl) -> Tool[Any]:
    async def execute(_args: Any, _api: ToolApi) -> ToolResult:
        return ToolResult(content="controlled", control=control)

    return make_tool("ctl", execute)


async def test_a_round_where_every_call_terminates_ends_the_run_with_the_calling_answer_r90(
    open_rig: RigFactory,
) -> None:
    extension = define_extension("probe", tools=[controlled(ToolControl(terminate=True))])
    rig = await open_rig(
        faux_response(faux_tool_call("ctl"), faux_tool_call("ctl")), extensions=[extension]
    )

    record = await rig.ask("go")

    calling = next(e for e in await rig.transcript() if e.kind == "pi.assistant")
    assert (record.status, record.answer) == ("done", calling.id)
    assert rig.faux.call_count == 1
    assert await rig.live() == {}


async def test_a_round_where_one_call_does_not_terminate_goes_on_r90(
    open_rig: RigFactory,
) -> None:
    extension = define_extension(
        "probe",
        tools=[
            controlled(ToolControl(terminate=True)),
            make_tool("plain", lambda a, p: returns("x")),
        ],
    )
    rig = await open_rig(
        faux_response(faux_tool_call("ctl"), faux_tool_call("plain")),
        faux_response("done"),
        extensions=[extension],
    )

    record = await rig.ask("go")

    assert record.status == "done"
    assert rig.faux.call_count == 2


async def test_a_handoff_appends_a_reset_with_its_text_and_ends_the_run_r90(
    open_rig: RigFactory,
) -> None:
    extension = define_extension("probe", tools=[controlled(ToolControl(handoff="fresh start"))])
    rig = await open_rig(faux_response(faux_tool_call("ctl")), extensions=[extension])

    record = await rig.ask("go")

    entries = await rig.transcript()
    reset = entries[-1]
    assert reset.kind == RESET
    assert reset.head == reset.id
    assert texts(reset) == "fresh start"
    calling = next(e for e in entries if e.kind == "pi.assistant")
    assert (record.status, record.answer) == ("done", calling.id)
    context = await rig.root.context()
    assert [m["content"] for m in context.messages] == ["fresh start"]


async def test_add_tools_extends_an_array_tool_filter_from_the_next_request_r90(
    open_rig: RigFactory,
) -> None:
    extension = define_extension(
        "probe",
        tools=[
            controlled(ToolControl(add_tools=("extra",))),
            make_tool("extra", lambda a, p: returns("x")),
        ],
    )
    rig = await open_rig(
        faux_response(faux_tool_call("ctl")),
        faux_response("done"),
        extensions=[extension],
        agent=AgentChange(model=ModelRef("faux", "faux-1"), tools=["ctl"]),
    )

    await rig.ask("go")

    agent = await rig.root.snapshot(AGENT_DOC)
    assert agent is not None
    assert agent["tools"] == ["ctl", "extra"]
    offered = [[t.name for t in r.context.tools or []] for r in rig.faux.requests]
    assert offered == [["ctl"], ["ctl", "extra"]]


async def test_aborting_one_tool_task_leaves_its_siblings_running_r91(
    open_rig: RigFactory,
) -> None:
    rig, _first, second, handle = await start_two_gates(open_rig)
    await within(second.started.wait())
    one, _two = await rig.tasks("pi.tool")

    await within(rig.harness.abort_task(one.id))
    await within(rig.harness.wait_for_task(one.id))

    slots = (await rig.live())["tools"]
    assert [s["status"] for s in slots] == ["done", "running"]
    second.opened.set()
    record = await within(handle.wait())
    assert record.status == "done"
    results = {
        message(e)["tool_name"]: message(e) for e in await rig.transcript() if e.kind == TOOL_RESULT
    }
    assert results["one"]["is_error"] is True
    assert results["two"]["content"] == [{"type": "text", "text": "opened"}]
    assert texts((await rig.transcript())[-1]) == "done"


async def test_a_steer_queued_during_a_round_is_placed_after_its_results_r64_r90(
    open_rig: RigFactory,
) -> None:
    rig, gate, first = await start_gate(open_rig, "both done")
    steer = await within(rig.root.submit(Input("also this", when_busy="steer")))

    gate.opened.set()
    records = [await within(first.wait()), await within(steer.wait())]

    entries = await rig.transcript()
    assert [e.kind for e in entries][-3:] == [TOOL_RESULT, "pi.user", "pi.assistant"]
    assert texts(entries[-2]) == "also this"
    assert [(r.status, r.answer) for r in records] == [("done", entries[-1].id)] * 2


async def test_a_round_reads_its_assistant_entry_from_what_the_session_committed_r127(
    open_rig: RigFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    extension = define_extension(
        "probe", tools=[make_tool("probe", lambda _args, _api: returns("ok"))]
    )
    rig = await open_rig(
        faux_response(faux_tool_call("probe", {"text": "a"})),
        faux_response("done"),
        extensions=[extension],
    )
    storage = rig.harness.session.storage
    read = storage.entry
    reads: list[int] = []

    async def counting(entry_id: int, conversation_id: int | None = None) -> Any:
        reads.append(entry_id)
        return await read(entry_id, conversation_id)

    monkeypatch.setattr(storage, "entry", counting)

    record = await rig.ask("go")

    assert record.status == "done"
    assistant = next(e for e in await rig.transcript() if e.kind == "pi.assistant")
    assert reads.count(assistant.id) == 0  # its own commit published it (issue 14)
