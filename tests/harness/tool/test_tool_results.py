"""Results of the tool task ``pi.tool``: assembly, progress commits, abort, redaction (R96-R106).

The retained output is the content and diagnostics render in a harness block,
truncation warns, a raising tool answers ``tool_error`` and fails the task,
``after_tool`` replaces the result, tool usage reaches the ledger, late output is
refused (R96-R99, R102, R106, R115, R117, R118); output and details are committed
live, at least the output interval apart (R103, R104, R106); an aborted call is
answered from its committed output, and ``on_abort`` may replace it (R101); a
secret a tool prints never reaches a commit (issue 7). Run end to end with the
faux provider through ``open_rig``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import time
from typing import Any

import pytest

from pi_durable_tui.ai import Usage, faux_response, faux_tool_call
from pi_durable_tui.harness import (
    TOOL_RESULT,
    USAGE_DOC,
    Diagnostic,
    Input,
    OutputLimits,
    ProgressSettings,
    Settings,
    ToolApi,
    ToolResult,
    define_extension,
    hook,
)
from tests.harness.run_support import (
    Rig,
    RigFactory,
    harness_block,
    make_tool,
    message,
    one_call,
    returns,
    slot_outputs,
    start_gate,
    texts,
    within,
)

# -- R96-R99, R102: result assembly --


def public_names(kind: type) -> set[str]:
    return {name for name in dir(kind) if not name.startswith("_")}


async def test_a_tools_api_shows_exactly_the_tool_api_surface_and_nothing_of_the_task(
    open_rig: RigFactory,
) -> None:
    seen: list[set[str]] = []

    async def execute(_args: Any, api: ToolApi) -> ToolResult:
        seen.append({name for name in dir(api) if not name.startswith("_")})
        return ToolResult(content="ok")

    await one_call(open_rig, [make_tool("probe", execute)])

    # The buffer, details, diagnostics and settle() are the task's (CallProgress).
    assert seen == [public_names(ToolApi) - public_names(object)]


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

    started = time.monotonic()
    rig, result = await one_call(
        open_rig,
        [make_tool("ticker", execute)],
        settings=Settings(progress=ProgressSettings(output_interval_ms=interval)),
    )

    commits = slot_outputs(rig)
    assert len(commits) >= 3
    assert commits[0][1] == "tick 0\n"  # the first change commits at once
    # Progress commit k starts at least k intervals after the first, which starts
    # after ``started``; it is published after it starts. A loaded machine only
    # publishes later, so the bound holds whatever the timing (the last commit is
    # the final flush, which does not wait).
    for k, (published, _) in enumerate(commits[:-1]):
        assert published - started >= k * interval / 1000
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
    # An after_tools observer keeps the settlement (which drops the slots) out of
    # the result commit (issue 14), so the slot the result commit left is visible.
    observer = hook("pi.generation", after_tools=lambda *_: None)
    rig, gate, handle = await start_gate(open_rig, hooks=[observer])
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
        rolled_back = Diagnostic("info", "rolled back")
        return dataclasses.replace(
            result, content="cleaned up", diagnostics=(*result.diagnostics, rolled_back)
        )

    rig, _gate, handle = await start_gate(open_rig, hooks=[hook("pi.tool", on_abort=on_abort)])

    await within(rig.root.abort())
    await within(handle.wait())

    [result] = [e for e in await rig.transcript() if e.kind == TOOL_RESULT]
    assert message(result)["content"] == [
        {"type": "text", "text": "cleaned up"},
        harness_block("[error] Tool gate was aborted", "[info] rolled back"),
    ]


async def test_a_raising_on_abort_hook_is_reported_and_the_next_one_still_replaces_r101_r117(
    open_rig: RigFactory,
) -> None:
    def broken(_call: Any, _result: ToolResult, _rt: Any) -> None:
        raise RuntimeError("cleanup broke")

    def replace(_call: Any, result: ToolResult, _rt: Any) -> ToolResult:
        return dataclasses.replace(result, content="cleaned up")

    hooks = [hook("pi.tool", on_abort=broken), hook("pi.tool", on_abort=replace)]
    rig, _gate, handle = await start_gate(open_rig, hooks=hooks)

    await within(rig.root.abort())
    await within(handle.wait())

    [result] = [e for e in await rig.transcript() if e.kind == TOOL_RESULT]
    assert message(result)["content"][0] == {"type": "text", "text": "cleaned up"}
    [failure] = [r for r in rig.reports if r.code == "hook_failed"]
    assert failure.message == "on_abort hook raised: cleanup broke"


async def test_on_abort_hooks_see_the_committed_output_details_and_diagnostics_r101(
    open_rig: RigFactory,
) -> None:
    seen: list[ToolResult] = []

    def on_abort(_call: Any, result: ToolResult, _rt: Any) -> None:
        seen.append(result)

    async def execute(_args: Any, api: ToolApi) -> None:
        api.output("one\ntwo\nthree\n")
        api.diagnostic("info", "halfway", "note")
        await api.details({"step": 1})
        await asyncio.Event().wait()  # until aborted

    tool = make_tool("slow", execute, output=OutputLimits(max_lines=2))
    extension = define_extension("probe", tools=[tool], hooks=[hook("pi.tool", on_abort=on_abort)])
    rig = await open_rig(
        faux_response(faux_tool_call("slow", {"text": "a"})),
        faux_response("done"),
        extensions=[extension],
    )
    handle = await within(rig.root.submit(Input("go")))

    def committed() -> bool:
        slots = [(value.get("tools") or [{}])[0] for _, value, _ in rig.live_changes()]
        return any(slot.get("details") and slot.get("diagnostics") for slot in slots)

    await within(rig.wait_until(committed))
    await within(rig.root.abort())
    await within(handle.wait())

    [result] = seen
    assert result.content == "one\ntwo\n"
    assert result.details == {"step": 1}
    assert result.is_error is True
    assert result.diagnostics == (
        Diagnostic("info", "halfway", "note"),
        Diagnostic(
            "warn", "Output truncated to its beginning: 1 lines, 6 bytes dropped", "truncated"
        ),
        Diagnostic("error", "Tool slow was aborted", "aborted"),
    )
    # The hook changed nothing, so what it saw is what was committed.
    [entry] = [e for e in await rig.transcript() if e.kind == TOOL_RESULT]
    assert message(entry)["content"] == [
        {"type": "text", "text": "one\ntwo\n"},
        harness_block(
            "[info] halfway",
            "[warn] Output truncated to its beginning: 1 lines, 6 bytes dropped",
            "[error] Tool slow was aborted",
        ),
    ]
    assert message(entry)["details"] == {"step": 1}


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
