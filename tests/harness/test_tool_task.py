"""The tool task ``pi.tool`` and tool rounds, run end to end with the faux provider (R89-R107)."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import BaseModel

from pi_durable_tui.ai import ModelRef, Usage, faux_response, faux_tool_call
from pi_durable_tui.harness import (
    AGENT_DOC,
    RESET,
    TOOL_RESULT,
    USAGE_DOC,
    AgentChange,
    Diagnostic,
    Input,
    OutputLimits,
    ProgressSettings,
    Settings,
    Tool,
    ToolApi,
    ToolBlock,
    ToolControl,
    ToolResult,
    define_extension,
    define_tool,
    hook,
)
from pi_durable_tui.storage import EntryRecord
from tests.harness.run_support import Rig, RigFactory, message, texts, within


class TextArgs(BaseModel):
    text: str = "x"


class Required(BaseModel):
    text: str


Execute = Callable[[Any, ToolApi], Awaitable[ToolResult | None]]


def make_tool(name: str, execute: Execute, **options: Any) -> Tool[Any]:
    options.setdefault("parameters", TextArgs)
    return define_tool(name, description=f"The {name} tool.", execute=execute, **options)


async def returns(text: str) -> ToolResult:
    return ToolResult(content=text)


@dataclass
class Gate:
    """A tool body that writes a line, then waits until the test opens it."""

    opened: asyncio.Event = field(default_factory=asyncio.Event)
    started: asyncio.Event = field(default_factory=asyncio.Event)
    apis: list[ToolApi] = field(default_factory=list)

    async def __call__(self, _args: Any, api: ToolApi) -> ToolResult:
        self.apis.append(api)
        api.output("working\n")
        self.started.set()
        await self.opened.wait()
        return ToolResult(content="opened")


def slot_outputs(rig: Rig) -> list[tuple[float, str]]:
    """``(publication time, output)`` of every commit that changed the first slot's output."""
    out: list[tuple[float, str]] = []
    last: str | None = None
    for published, value, _ops in rig.live_changes():
        slots = value.get("tools") or []
        output = slots[0].get("output") if slots else None
        if output is not None and output != last:
            out.append((published.at, output))
            last = output
    return out


async def start_gate(
    open_rig: RigFactory, answer: str = "done", hooks: list[Any] | None = None
) -> tuple[Rig, Gate, Any]:
    """Start a run whose one call (to ``gate``) has committed ``working`` and waits."""
    gate = Gate()
    extension = define_extension("probe", tools=[make_tool("gate", gate)], hooks=hooks or [])
    rig = await open_rig(
        faux_response(faux_tool_call("gate", {"text": "a"})),
        faux_response(answer),
        extensions=[extension],
    )
    handle = await within(rig.root.submit(Input("go")))
    await within(rig.wait_until(lambda: any(o == "working\n" for _, o in slot_outputs(rig))))
    return rig, gate, handle


async def one_call(
    open_rig: RigFactory,
    tools: list[Tool[Any]],
    arguments: dict[str, Any] | None = None,
    *,
    name: str | None = None,
    hooks: list[Any] | None = None,
    settings: Settings | None = None,
) -> tuple[Rig, EntryRecord]:
    """Run one round calling ``name`` (the first tool by default); return its result entry."""
    extension = define_extension("probe", tools=tools, hooks=hooks or [])
    rig = await open_rig(
        faux_response(faux_tool_call(name or tools[0].name, arguments or {})),
        faux_response("done"),
        extensions=[extension],
        settings=settings,
    )
    record = await rig.ask("go")
    assert record.status == "done", record
    [result] = [e for e in await rig.transcript() if e.kind == TOOL_RESULT]
    return rig, result


def harness_block(*lines: str) -> dict[str, str]:
    return {"type": "text", "text": "<harness>\n" + "\n".join(lines) + "\n</harness>"}


# -- R89, R93, R100: calls that never execute --


async def test_a_call_to_a_tool_that_was_not_offered_is_answered_without_a_task_r89_r100(
    open_rig: RigFactory,
) -> None:
    rig, result = await one_call(
        open_rig, [make_tool("real", lambda a, p: returns("ok"))], name="nope"
    )

    stored = message(result)
    assert stored["is_error"] is True
    assert stored["content"] == [harness_block("[error] Tool nope is not available")]
    assert result.data == {
        "diagnostics": [
            {
                "severity": "error",
                "message": "Tool nope is not available",
                "code": "tool_unavailable",
            }
        ]
    }
    assert "duration_ms" not in stored
    assert await rig.tasks("pi.tool") == []


async def test_a_tool_uninstalled_before_its_call_runs_ends_tool_unavailable_r93(
    open_rig: RigFactory,
) -> None:
    probe = define_extension("probe", tools=[make_tool("real", lambda a, p: returns("ok"))])

    def uninstall(_message: Any, runtime: Any) -> None:
        rig_holder[0].harness.registry.uninstall("probe")

    remover = define_extension("remover", hooks=[hook("pi.generation", after_response=uninstall)])
    rig_holder: list[Rig] = []
    rig = await open_rig(
        faux_response(faux_tool_call("real")),
        faux_response("done"),
        extensions=[probe, remover],
    )
    rig_holder.append(rig)

    await rig.ask("go")

    [result] = [e for e in await rig.transcript() if e.kind == TOOL_RESULT]
    assert result.data["diagnostics"][0]["code"] == "tool_unavailable"  # type: ignore[call-overload, index]
    [task] = await rig.tasks("pi.tool")
    assert task.state["outcome"]["status"] == "completed"


async def test_invalid_arguments_are_answered_with_the_validators_message_r93(
    open_rig: RigFactory,
) -> None:
    ran: list[Any] = []

    async def execute(args: Any, _api: ToolApi) -> ToolResult:
        ran.append(args)
        return ToolResult()

    rig, result = await one_call(open_rig, [make_tool("strict", execute, parameters=Required)], {})

    stored = message(result)
    assert stored["is_error"] is True
    assert stored["content"] == [
        harness_block("[error] Invalid arguments for strict: text: Field required")
    ]
    assert result.data["diagnostics"][0]["code"] == "invalid_arguments"  # type: ignore[call-overload, index]
    assert ran == []
    [task] = await rig.tasks("pi.tool")
    assert task.state["outcome"]["status"] == "completed"


async def test_prepare_arguments_repairs_a_copy_and_the_stored_call_keeps_the_original_r93_r94(
    open_rig: RigFactory,
) -> None:
    seen: list[str] = []
    checkpoints: list[Any] = []
    rigs: list[Rig] = []

    async def execute(args: Required, api: ToolApi) -> ToolResult:
        seen.append(args.text)
        task = await rigs[0].harness.session.storage.task(api.task_id)
        assert task is not None
        checkpoints.append(task.state["checkpoint"])
        return ToolResult(content="ok")

    def repair(arguments: dict[str, Any]) -> dict[str, Any]:
        return {"text": arguments.pop("t")} if "t" in arguments else arguments

    tool = make_tool("fixable", execute, parameters=Required, prepare_arguments=repair)
    extension = define_extension("probe", tools=[tool])
    rig = await open_rig(
        faux_response(faux_tool_call("fixable", {"t": "hello"})),
        faux_response("done"),
        extensions=[extension],
    )
    rigs.append(rig)

    await rig.ask("go")

    assert seen == ["hello"]
    assert checkpoints == [{"phase": "execute", "arguments": {"text": "hello"}, "replay": "unsafe"}]
    call = next(e for e in await rig.transcript() if e.kind == "pi.assistant")
    assert message(call)["content"][0]["arguments"] == {"t": "hello"}


async def test_a_repair_that_raises_answers_invalid_arguments_with_its_message_r93(
    open_rig: RigFactory,
) -> None:
    def repair(_arguments: dict[str, Any]) -> dict[str, Any]:
        raise ValueError("edits must be a list")

    tool = make_tool("fixable", lambda a, p: returns("ok"), prepare_arguments=repair)
    _rig, result = await one_call(open_rig, [tool])

    assert result.data["diagnostics"] == [  # type: ignore[call-overload, index]
        {"severity": "error", "message": "edits must be a list", "code": "invalid_arguments"}
    ]


# -- R93: before_tool --


@pytest.mark.parametrize(
    ("before_tool", "expected"),
    [
        (lambda call, _rt: ToolBlock("not in this repo"), "Tool call blocked: not in this repo"),
        (lambda call, _rt: 1 / 0, "Tool call blocked: division by zero"),
    ],
    ids=["block", "raise"],
)
async def test_before_tool_blocks_a_call_before_any_intent_is_recorded_r93(
    open_rig: RigFactory, before_tool: Any, expected: str
) -> None:
    ran: list[Any] = []

    async def execute(args: Any, _api: ToolApi) -> ToolResult:
        ran.append(args)
        return ToolResult()

    rig, result = await one_call(
        open_rig,
        [make_tool("guarded", execute)],
        hooks=[hook("pi.tool", before_tool=before_tool)],
    )

    assert message(result)["content"] == [harness_block(f"[error] {expected}")]
    assert result.data["diagnostics"][0]["code"] == "blocked"  # type: ignore[call-overload, index]
    assert ran == []
    running = [
        v
        for _, v, _ in rig.live_changes()
        if any(s.get("status") == "running" for s in v.get("tools", []))
    ]
    assert running == []


async def test_before_tool_rewrites_arguments_for_later_hooks_and_the_execution_r93(
    open_rig: RigFactory,
) -> None:
    seen_by_hooks: list[dict[str, Any]] = []
    executed: list[str] = []

    async def execute(args: TextArgs, _api: ToolApi) -> ToolResult:
        executed.append(args.text)
        return ToolResult(content="ok")

    def first(call: Any, _rt: Any) -> dict[str, Any]:
        seen_by_hooks.append(dict(call.arguments))
        return {"text": call.arguments["text"].upper()}

    def second(call: Any, _rt: Any) -> None:
        seen_by_hooks.append(dict(call.arguments))

    def after(call: Any, _result: Any, _rt: Any) -> None:
        seen_by_hooks.append(dict(call.arguments))

    rig, _result = await one_call(
        open_rig,
        [make_tool("shout", execute)],
        {"text": "quiet"},
        hooks=[
            hook("pi.tool", before_tool=first),
            hook("pi.tool", before_tool=second, after_tool=after),
        ],
    )

    assert seen_by_hooks == [{"text": "quiet"}, {"text": "QUIET"}, {"text": "QUIET"}]
    assert executed == ["QUIET"]
    call = next(e for e in await rig.transcript() if e.kind == "pi.assistant")
    assert message(call)["content"][0]["arguments"] == {"text": "quiet"}


async def test_arguments_a_before_tool_hook_breaks_are_invalid_r93(open_rig: RigFactory) -> None:
    tool = make_tool("strict", lambda a, p: returns("ok"), parameters=Required)
    _rig, result = await one_call(
        open_rig,
        [tool],
        {"text": "fine"},
        hooks=[hook("pi.tool", before_tool=lambda call, _rt: {"text": 3})],
    )

    assert result.data["diagnostics"][0]["code"] == "invalid_arguments"  # type: ignore[call-overload, index]


# -- R93, R39: the durable intent --


async def test_the_intent_is_committed_before_execution_with_the_slot_running_r93(
    open_rig: RigFactory,
) -> None:
    rig, gate, handle = await start_gate(open_rig)

    [task] = await rig.tasks("pi.tool")
    assert task.state["status"] == "running"
    assert task.state["checkpoint"] == {
        "phase": "execute",
        "arguments": {"text": "a"},
        "replay": "unsafe",
    }
    [slot] = (await rig.live())["tools"]
    assert (slot["status"], slot["task_id"], slot["name"]) == ("running", task.id, "gate")

    gate.opened.set()
    assert (await within(handle.wait())).status == "done"


# -- R96-R99, R102: result assembly --


async def test_the_retained_output_is_the_content_and_diagnostics_render_in_a_harness_block_r97_r98(
    open_rig: RigFactory,
) -> None:
    async def execute(_args: Any, api: ToolApi) -> None:
        api.output("a\u0007b\r\n")
        api.output(b"caf\xc3")  # a character split across chunks
        api.output(b"\xa9\n")
        api.diagnostic("info", "noted", "note")
        await api.details({"step": 1})
        return None

    _rig, result = await one_call(open_rig, [make_tool("out", execute)])

    stored = message(result)
    assert stored["content"] == [
        {"type": "text", "text": "ab\ncafé\n"},
        harness_block("[info] noted"),
    ]
    assert stored["details"] == {"step": 1}
    assert stored["is_error"] is False
    assert isinstance(stored["duration_ms"], int)
    assert result.data == {
        "diagnostics": [{"severity": "info", "message": "noted", "code": "note"}]
    }


async def test_truncated_output_gets_a_warn_diagnostic_that_does_not_make_it_an_error_r97_r98(
    open_rig: RigFactory,
) -> None:
    async def execute(_args: Any, api: ToolApi) -> None:
        for n in range(5):
            api.output(f"line {n}\n")

    tool = make_tool("long", execute, output=OutputLimits(max_lines=2))
    _rig, result = await one_call(open_rig, [tool])

    stored = message(result)
    assert stored["content"] == [
        {"type": "text", "text": "line 0\nline 1\n"},
        harness_block("[warn] Output truncated to its beginning: 3 lines, 21 bytes dropped"),
    ]
    assert stored["is_error"] is False


async def test_explicit_content_beyond_the_limits_collapses_into_one_bounded_item_r97(
    open_rig: RigFactory,
) -> None:
    async def execute(_args: Any, _api: ToolApi) -> ToolResult:
        return ToolResult(content="".join(f"row {n}\n" for n in range(6)))

    tool = make_tool("rows", execute, output=OutputLimits(max_lines=2, retain="tail"))
    _rig, result = await one_call(open_rig, [tool])

    assert message(result)["content"] == [
        {"type": "text", "text": "row 4\nrow 5\n"},
        harness_block("[warn] Output truncated to its end: 4 lines, 24 bytes dropped"),
    ]


async def test_a_tool_that_raises_answers_tool_error_with_its_output_and_fails_the_task_r96_r99(
    open_rig: RigFactory,
) -> None:
    async def execute(_args: Any, api: ToolApi) -> None:
        api.output("partial\n")
        raise ValueError("boom")

    rig, result = await one_call(open_rig, [make_tool("fragile", execute)])

    stored = message(result)
    assert stored["is_error"] is True
    assert stored["content"] == [
        {"type": "text", "text": "partial\n"},
        harness_block("[error] boom"),
    ]
    assert result.data["diagnostics"][-1]["code"] == "tool_error"  # type: ignore[call-overload, index]
    assert isinstance(stored["duration_ms"], int)
    [task] = await rig.tasks("pi.tool")
    assert task.state["outcome"]["status"] == "failed"
    assert task.state["outcome"]["error"]["message"] == "Tool fragile threw"
    assert texts((await rig.transcript())[-1]) == "done"


async def test_a_returned_error_result_completes_the_task_r96(open_rig: RigFactory) -> None:
    async def execute(_args: Any, _api: ToolApi) -> ToolResult:
        return ToolResult(content="no such thing", is_error=True)

    rig, result = await one_call(open_rig, [make_tool("soft", execute)])

    assert message(result)["is_error"] is True
    [task] = await rig.tasks("pi.tool")
    assert task.state["outcome"]["status"] == "completed"


async def test_a_tool_without_an_environment_fails_with_a_clear_message_r96_r118(
    open_rig: RigFactory,
) -> None:
    async def execute(_args: Any, api: ToolApi) -> ToolResult:
        return ToolResult(content=api.env.cwd)

    extension = define_extension("probe", tools=[make_tool("needs-env", execute)])
    rig = await open_rig(
        faux_response(faux_tool_call("needs-env")),
        faux_response("done"),
        extensions=[extension],
        env=False,
    )

    await rig.ask("go")

    [result] = [e for e in await rig.transcript() if e.kind == TOOL_RESULT]
    assert result.data["diagnostics"] == [  # type: ignore[call-overload, index]
        {
            "severity": "error",
            "message": "No execution environment is configured",
            "code": "tool_error",
        }
    ]


async def test_after_tool_replaces_the_result_and_a_raising_hook_is_reported_r96_r117(
    open_rig: RigFactory,
) -> None:
    def broken(_call: Any, _result: Any, _rt: Any) -> None:
        raise RuntimeError("observer broke")

    def replace(_call: Any, result: ToolResult, _rt: Any) -> ToolResult:
        return ToolResult(content=f"replaced {result.content}", details={"replaced": True})

    rig, result = await one_call(
        open_rig,
        [make_tool("plain", lambda a, p: returns("original"))],
        hooks=[hook("pi.tool", after_tool=broken), hook("pi.tool", after_tool=replace)],
    )

    stored = message(result)
    assert stored["content"] == [{"type": "text", "text": "replaced original"}]
    assert stored["details"] == {"replaced": True}
    assert any("observer broke" in report.message for report in rig.reports)


async def test_tool_usage_is_added_to_the_ledger_in_the_result_commit_r106_r115(
    open_rig: RigFactory,
) -> None:
    async def execute(_args: Any, _api: ToolApi) -> ToolResult:
        return ToolResult(content="ok", usage=Usage(input=10, output=5, total_tokens=15))

    rig, result = await one_call(open_rig, [make_tool("priced", execute)])

    ledger = await rig.root.snapshot(USAGE_DOC)
    assert ledger is not None
    assert ledger["tools"]["priced"]["input"] == 10
    assert message(result)["usage"]["output"] == 5
    result_commit = next(p for p in rig.commits if result.id in [e.id for e in p.info.entries])
    assert any(c.address.kind == USAGE_DOC.kind for c in result_commit.info.documents)


async def test_output_after_the_call_settled_is_refused_r102(open_rig: RigFactory) -> None:
    apis: list[ToolApi] = []

    async def execute(_args: Any, api: ToolApi) -> ToolResult:
        apis.append(api)
        return ToolResult(content="ok")

    await one_call(open_rig, [make_tool("leaky", execute)])

    with pytest.raises(RuntimeError, match=r"Tool call call_0_0 has settled"):
        apis[0].output("late")


# -- R103, R104: progress commits --


async def test_output_is_committed_live_at_least_the_output_interval_apart_r103(
    open_rig: RigFactory,
) -> None:
    interval = 40

    async def execute(_args: Any, api: ToolApi) -> None:
        for n in range(60):
            api.output(f"tick {n}\n")
            await asyncio.sleep(0.004)

    rig, result = await one_call(
        open_rig,
        [make_tool("ticker", execute)],
        settings=Settings(progress=ProgressSettings(output_interval_ms=interval)),
    )

    commits = slot_outputs(rig)
    assert len(commits) >= 3
    assert commits[0][1] == "tick 0\n"  # the first change commits at once
    gaps = [b - a for (a, _), (b, _) in itertools.pairwise(commits)]
    assert min(gaps) >= (interval - 5) / 1000
    for (_, earlier), (_, later) in itertools.pairwise(commits):
        assert later.startswith(earlier)
    assert texts(result).startswith("".join(f"tick {n}\n" for n in range(60)))


async def test_details_resolve_after_the_commit_that_holds_them_r104(
    open_rig: RigFactory,
) -> None:
    seen: list[Any] = []
    rigs: list[Rig] = []

    async def execute(_args: Any, api: ToolApi) -> ToolResult:
        await api.details({"step": 1})
        [slot] = (await rigs[0].live())["tools"]
        seen.append(slot.get("details"))
        await api.details({"step": 2})
        [slot] = (await rigs[0].live())["tools"]
        seen.append(slot.get("details"))
        return ToolResult(content="ok")

    extension = define_extension("probe", tools=[make_tool("stepper", execute)])
    rig = await open_rig(
        faux_response(faux_tool_call("stepper")),
        faux_response("done"),
        extensions=[extension],
        settings=Settings(progress=ProgressSettings(output_interval_ms=10)),
    )
    rigs.append(rig)

    await rig.ask("go")

    assert seen == [{"step": 1}, {"step": 2}]
    [result] = [e for e in await rig.transcript() if e.kind == TOOL_RESULT]
    assert message(result)["details"] == {"step": 2}


async def test_the_result_commit_clears_the_slots_progress_and_links_the_entry_r106(
    open_rig: RigFactory,
) -> None:
    rig, gate, handle = await start_gate(open_rig)
    gate.opened.set()
    await within(handle.wait())

    result_commit = next(
        p for p in rig.commits if any(e.kind == TOOL_RESULT for e in p.info.entries)
    )
    live = result_commit.live()
    assert live is not None
    [slot] = live[0]["tools"]
    entry = next(e for e in result_commit.info.entries if e.kind == TOOL_RESULT)
    assert slot == {
        "call_id": "call_0_0",
        "name": "gate",
        "task_id": slot["task_id"],
        "status": "done",
        "entry": entry.id,
    }


# -- R101: abort --


async def test_aborting_a_running_call_answers_aborted_from_its_committed_output_r101(
    open_rig: RigFactory,
) -> None:
    rig, _gate, handle = await start_gate(open_rig, "never")

    await within(rig.root.abort())

    record = await within(handle.wait())
    assert (record.status, record.reason) == ("unanswered", "aborted")
    [result] = [e for e in await rig.transcript() if e.kind == TOOL_RESULT]
    stored = message(result)
    assert stored["content"] == [
        {"type": "text", "text": "working\n"},
        harness_block("[error] Tool gate was aborted"),
    ]
    assert stored["is_error"] is True
    assert "duration_ms" not in stored
    [task] = await rig.tasks("pi.tool")
    assert task.state["outcome"]["status"] == "aborted"
    assert await rig.live() == {}
    assert rig.faux.call_count == 1


async def test_on_abort_replaces_the_aborted_result_r101(open_rig: RigFactory) -> None:
    def on_abort(_call: Any, result: ToolResult, _rt: Any) -> ToolResult:
        return ToolResult(content="cleaned up", diagnostics=(Diagnostic("info", "rolled back"),))

    rig, _gate, handle = await start_gate(open_rig, hooks=[hook("pi.tool", on_abort=on_abort)])

    await within(rig.root.abort())
    await within(handle.wait())

    [result] = [e for e in await rig.transcript() if e.kind == TOOL_RESULT]
    assert message(result)["content"] == [
        {"type": "text", "text": "cleaned up"},
        harness_block("[error] Tool gate was aborted", "[info] rolled back"),
    ]


# -- R89, R90, R91: rounds --


async def start_two_gates(
    open_rig: RigFactory, settings: Settings | None = None, mode: str = "parallel"
) -> tuple[Rig, Gate, Gate, Any]:
    first, second = Gate(), Gate()
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


# -- issue 7: secrets never reach a committed entry --

SECRET = "sk-test-0123456789abcdefSECRET"


async def test_a_secret_value_printed_by_a_tool_is_redacted_in_every_commit_and_result(
    open_rig: RigFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)

    async def execute(_args: Any, api: ToolApi) -> None:
        import os

        value = os.environ["OPENAI_API_KEY"]
        api.output(f"key={value[:10]}")  # a chunk boundary inside the secret
        await asyncio.sleep(0.03)
        api.output(f"{value[10:]}\nmore\n")
        api.diagnostic("info", f"used {value}")
        await api.details({"key": value})
        await asyncio.sleep(0.03)

    rig, result = await one_call(
        open_rig,
        [make_tool("leaky", execute)],
        settings=Settings(progress=ProgressSettings(output_interval_ms=5)),
    )

    assert message(result)["content"] == [
        {"type": "text", "text": "key=[redacted]\nmore\n"},
        harness_block("[info] used [redacted]"),
    ]
    assert message(result)["details"] == {"key": "[redacted]"}
    assert result.data == {"diagnostics": [{"severity": "info", "message": "used [redacted]"}]}
    outputs = [o for _, o in slot_outputs(rig)]
    assert "key=[redacted]\nmore\n" in outputs
    for published in rig.commits:
        dumped = json.dumps(
            {
                "entries": [e.to_json() for e in published.info.entries],
                "documents": [[c.value, c.ops] for c in published.info.documents],
            }
        )
        assert SECRET not in dumped
        assert SECRET[:10] not in dumped


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
