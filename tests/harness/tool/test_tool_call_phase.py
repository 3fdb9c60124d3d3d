"""The call phase of ``pi.tool``: everything before a tool executes (R89, R93, R94, R100).

A call to a tool that was not offered or is no longer installed, invalid arguments
and a raising ``prepare_arguments`` are answered without executing (R89, R93,
R100); ``prepare_arguments`` repairs a copy (R94); ``before_tool`` hooks block a
call or rewrite its arguments before any intent is recorded (R93); the durable
intent is committed, with the slot ``running``, before execution (R93, R39).
Run end to end with the faux provider through ``open_rig``.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from pi_durable_tui.ai import RAW_ARGUMENTS_FIELD, faux_response, faux_tool_call
from pi_durable_tui.harness import (
    TOOL_RESULT,
    ToolApi,
    ToolBlock,
    ToolResult,
    define_extension,
    hook,
)
from tests.harness.run_support import (
    Rig,
    RigFactory,
    TextArgs,
    harness_block,
    make_tool,
    message,
    one_call,
    returns,
    start_gate,
    within,
)


class Required(BaseModel):
    text: str


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


async def test_arguments_that_were_not_json_are_answered_as_such_not_as_missing_fields_r93(
    open_rig: RigFactory,
) -> None:
    ran: list[Any] = []

    async def execute(args: Any, _api: ToolApi) -> ToolResult:
        ran.append(args)
        return ToolResult()

    # What an SSE provider stores for argument text that was not a JSON object.
    call = faux_tool_call("strict", {})
    setattr(call, RAW_ARGUMENTS_FIELD, '{"text": "cut off' + "x" * 300)
    extension = define_extension("probe", tools=[make_tool("strict", execute, parameters=Required)])
    rig = await open_rig(faux_response(call), faux_response("done"), extensions=[extension])

    assert (await rig.ask("go")).status == "done"

    [result] = [e for e in await rig.transcript() if e.kind == TOOL_RESULT]
    [block] = message(result)["content"]
    assert block["text"].startswith(
        "<harness>\n[error] Invalid arguments for strict: they are not a JSON object "
        '(317 characters: \'{"text": "cut offxxx'
    )
    assert "...'); send the arguments again as one JSON object" in block["text"]
    assert "Field required" not in block["text"]
    assert result.data["diagnostics"][0]["code"] == "invalid_arguments"  # type: ignore[call-overload, index]
    assert ran == []


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
