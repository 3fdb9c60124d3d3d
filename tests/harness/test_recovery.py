"""Recovery of cut work over a real SQLite store: close mid-effect, reopen, resume (R39, R84, R95).

``Harness.close()`` writes no outcome (R27), so closing in the middle of a tool call
or a stream leaves the store exactly as a crash at that moment would; a second
harness then opens the same file, as ``pidurable --continue`` does.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from pi_durable_tui.ai import FauxProvider, faux_response, faux_tool_call
from pi_durable_tui.harness import (
    ASSISTANT,
    LIVE_DOC,
    TOOL_RESULT,
    USER,
    Extension,
    Input,
    ProgressSettings,
    Settings,
    Tool,
    ToolApi,
    ToolResult,
    define_extension,
    define_tool,
    wrap_tool,
)
from pi_durable_tui.storage import SqliteStorage
from pi_durable_tui.tools import CodingTools
from tests.harness.run_support import Rig, RigFactory, message, texts, within


class NoArgs(BaseModel):
    pass


FAST = Settings(progress=ProgressSettings(partial_interval_ms=10, output_interval_ms=10))


async def reopen(open_rig: RigFactory, path: Path, *responses: Any, **options: Any) -> Rig:
    """A second harness over the same store, scheduling at once (like ``--continue``)."""
    rig = await open_rig(
        *responses, storage=await SqliteStorage.open(path), root=False, settings=FAST, **options
    )
    rig.harness.resume()
    return rig


def first_run_waits(ledger: Path) -> Extension:
    """Wrap ``read`` and ``write``: record each execution, and park the first one for good."""

    def wrap(tool: Tool[Any]) -> Tool[Any]:
        async def execute(args: Any, api: ToolApi) -> ToolResult | None:
            runs = ledger.read_text().count("\n") if ledger.exists() else 0
            with ledger.open("a") as file:
                file.write(f"{tool.name}\n")
            result = await tool.execute(args, api)
            if runs == 0:
                api.output("first run\n")
                await asyncio.Event().wait()  # until the harness closes
            return result

        return dataclasses.replace(tool, execute=execute)

    return define_extension("gated", wraps=[wrap_tool("read", wrap), wrap_tool("write", wrap)])


async def close_when(rig: Rig, condition: Any) -> None:
    await within(rig.wait_until(condition))
    await within(rig.harness.close())


async def read_cut_by_a_crash(open_rig: RigFactory, tmp_path: Path) -> tuple[Path, Path, Any]:
    """A ``read`` of ``notes.txt`` closed in the middle of its first execution.

    Returns:
        The store's path, the execution ledger, and the run's submission handle.
    """
    path, ledger = tmp_path / "session.sqlite", tmp_path / "ledger"
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "notes.txt").write_text("hello\n")
    rig = await open_rig(
        faux_response(faux_tool_call("read", {"path": "notes.txt"})),
        storage=await SqliteStorage.open(path),
        extensions=[CodingTools, first_run_waits(ledger)],
        settings=FAST,
    )
    handle = await within(rig.root.submit(Input("read it")))
    await close_when(rig, lambda: any("first run" in str(v) for _, v, _ in rig.live_changes()))
    return path, ledger, handle


async def test_a_replay_safe_call_cut_by_a_crash_runs_again_to_exactly_one_result_r95(
    open_rig: RigFactory, tmp_path: Path
) -> None:
    path, ledger, handle = await read_cut_by_a_crash(open_rig, tmp_path)

    again = await reopen(
        open_rig, path, faux_response("done"), extensions=[CodingTools, first_run_waits(ledger)]
    )
    record = await within((await again.harness.submission(handle.id)).wait())  # type: ignore[union-attr]

    assert record.status == "done"
    assert ledger.read_text() == "read\nread\n"
    results = [e for e in await again.transcript() if e.kind == TOOL_RESULT]
    assert len(results) == 1
    assert message(results[0])["is_error"] is False
    assert "1\thello" in texts(results[0])
    [task] = await again.tasks("pi.tool")
    assert task.state["outcome"]["status"] == "completed"


async def test_a_rerun_clears_the_progress_the_cut_execution_had_committed_r95(
    open_rig: RigFactory, tmp_path: Path
) -> None:
    path, _ledger, _handle = await read_cut_by_a_crash(open_rig, tmp_path)

    again = await reopen(open_rig, path, faux_response("done"), extensions=[CodingTools])
    await within(again.harness.wait_for_idle())

    _published, restart, _ops = again.live_changes()[0]
    [slot] = restart["tools"]
    assert slot == {
        "call_id": "call_0_0",
        "name": "read",
        "task_id": slot["task_id"],
        "status": "running",
    }
    [result] = [e for e in await again.transcript() if e.kind == TOOL_RESULT]
    assert "first run" not in texts(result)


async def test_an_unsafe_command_cut_by_a_crash_ends_interrupted_with_its_committed_output_r95(
    open_rig: RigFactory, tmp_path: Path
) -> None:
    path, ledger = tmp_path / "session.sqlite", tmp_path / "ledger"
    command = f"echo run >> {ledger}; echo started; sleep 30"
    rig = await open_rig(
        faux_response(faux_tool_call("bash", {"command": command})),
        storage=await SqliteStorage.open(path),
        extensions=[CodingTools],
        settings=FAST,
    )
    handle = await within(rig.root.submit(Input("run it")))
    await close_when(rig, lambda: any("started" in str(v) for _, v, _ in rig.live_changes()))

    again = await reopen(open_rig, path, faux_response("understood"), extensions=[CodingTools])
    record = await within((await again.harness.submission(handle.id)).wait())  # type: ignore[union-attr]

    assert ledger.read_text() == "run\n"
    [result] = [e for e in await again.transcript() if e.kind == TOOL_RESULT]
    stored = message(result)
    assert stored["is_error"] is True
    assert stored["content"] == [
        {"type": "text", "text": "started\n"},
        {
            "type": "text",
            "text": "<harness>\n[error] Tool bash was interrupted and may have partially run\n"
            "</harness>",
        },
    ]
    assert "duration_ms" not in stored
    assert result.data["diagnostics"][-1]["code"] == "interrupted"  # type: ignore[call-overload, index]
    [task] = await again.tasks("pi.tool")
    assert task.state["outcome"]["status"] == "failed"
    # the generation goes on after the interrupted result and answers
    assert record.status == "done"
    assert texts((await again.transcript())[-1]) == "understood"
    sent = again.faux.requests[0].context.messages
    assert "interrupted" in str(sent[-1].content)
    assert await again.live() == {}


async def test_an_unsafe_write_cut_after_its_effect_is_never_run_twice_r95(
    open_rig: RigFactory, tmp_path: Path
) -> None:
    path, ledger = tmp_path / "session.sqlite", tmp_path / "ledger"
    extensions = [CodingTools, first_run_waits(ledger)]
    rig = await open_rig(
        faux_response(faux_tool_call("write", {"path": "out.txt", "content": "v1\n"})),
        storage=await SqliteStorage.open(path),
        extensions=extensions,
        settings=FAST,
    )
    handle = await within(rig.root.submit(Input("write it")))
    await close_when(rig, lambda: any("first run" in str(v) for _, v, _ in rig.live_changes()))

    again = await reopen(open_rig, path, faux_response("ok"), extensions=extensions)
    record = await within((await again.harness.submission(handle.id)).wait())  # type: ignore[union-attr]

    assert record.status == "done"
    assert ledger.read_text() == "write\n"
    assert (tmp_path / "work" / "out.txt").read_text() == "v1\n"
    [result] = [e for e in await again.transcript() if e.kind == TOOL_RESULT]
    assert result.data["diagnostics"][-1]["code"] == "interrupted"  # type: ignore[call-overload, index]


async def test_a_run_cut_mid_stream_converts_its_partial_and_sends_a_new_attempt_r84(
    open_rig: RigFactory, tmp_path: Path
) -> None:
    path = tmp_path / "session.sqlite"
    slow = FauxProvider([faux_response("slow " * 2000)], tokens_per_second=500)
    rig = await open_rig(faux=slow, storage=await SqliteStorage.open(path), settings=FAST)
    handle = await within(rig.root.submit(Input("talk")))

    def partial_committed() -> bool:
        return any("slow" in str(v.get("generation", {})) for _, v, _ in rig.live_changes())

    await close_when(rig, partial_committed)
    partial = [v for _, v, _ in rig.live_changes() if "message" in v.get("generation", {})][-1]

    again = await reopen(open_rig, path, faux_response("complete answer"))
    record = await within((await again.harness.submission(handle.id)).wait())  # type: ignore[union-attr]

    entries = await again.transcript()
    assert [e.kind for e in entries] == [USER, ASSISTANT, ASSISTANT]
    converted = message(entries[1])
    assert converted["stop_reason"] == "aborted"
    assert converted["content"] == partial["generation"]["message"]["content"]
    assert (record.status, record.answer) == ("done", entries[2].id)
    assert [m.role for m in again.faux.requests[0].context.messages] == ["user"]
    assert await again.harness.conversation(1).snapshot(LIVE_DOC) == {}


async def test_an_interrupted_result_keeps_the_committed_tail_and_says_what_was_dropped_r95_r97(
    open_rig: RigFactory, tmp_path: Path
) -> None:
    path = tmp_path / "session.sqlite"
    command = "seq 1 5000; echo started; sleep 30"
    rig = await open_rig(
        faux_response(faux_tool_call("bash", {"command": command})),
        storage=await SqliteStorage.open(path),
        extensions=[CodingTools],
        settings=FAST,
    )
    await within(rig.root.submit(Input("run it")))
    await close_when(rig, lambda: any("started" in str(v) for _, v, _ in rig.live_changes()))

    again = await reopen(open_rig, path, faux_response("ok"), extensions=[CodingTools])
    await within(again.harness.wait_for_idle())

    everything = "".join(f"{n}\n" for n in range(1, 5001)) + "started\n"
    kept = "".join(f"{n}\n" for n in range(3002, 5001)) + "started\n"
    [result] = [e for e in await again.transcript() if e.kind == TOOL_RESULT]
    assert message(result)["content"][0] == {"type": "text", "text": kept}
    assert [d["message"] for d in result.data["diagnostics"]] == [  # type: ignore[call-overload, index]
        f"Output truncated: 3001 lines, {len(everything) - len(kept)} bytes dropped",
        "Tool bash was interrupted and may have partially run",
    ]


@pytest.mark.parametrize(
    ("before", "after"),
    [("unsafe", "safe"), ("safe", None)],
    ids=["stored-unsafe-now-safe", "stored-safe-now-gone"],
)
async def test_a_call_reruns_only_when_stored_and_current_policies_are_both_safe_r95(
    open_rig: RigFactory,
    tmp_path: Path,
    before: Literal["safe", "unsafe"],
    after: Literal["safe", "unsafe"] | None,
) -> None:
    path, ledger = tmp_path / "session.sqlite", tmp_path / "ledger"

    def probe(replay: Literal["safe", "unsafe"]) -> Extension:
        async def execute(_args: Any, api: ToolApi) -> ToolResult:
            with ledger.open("a") as file:
                file.write("run\n")
            api.output("cut\n")
            await asyncio.Event().wait()  # until the harness closes
            return ToolResult()

        tool = define_tool(
            "probe", description="Runs.", parameters=NoArgs, execute=execute, replay=replay
        )
        return define_extension("probe", tools=[tool])

    rig = await open_rig(
        faux_response(faux_tool_call("probe")),
        storage=await SqliteStorage.open(path),
        extensions=[probe(before)],
        settings=FAST,
    )
    await within(rig.root.submit(Input("go")))
    await close_when(rig, lambda: any("cut" in str(v) for _, v, _ in rig.live_changes()))

    extensions = [probe(after)] if after else []
    again = await reopen(open_rig, path, faux_response("ok"), extensions=extensions)
    await within(again.harness.wait_for_idle())

    assert ledger.read_text() == "run\n"
    [result] = [e for e in await again.transcript() if e.kind == TOOL_RESULT]
    assert result.data["diagnostics"][-1]["code"] == "interrupted"  # type: ignore[call-overload, index]
    assert message(result)["content"][0] == {"type": "text", "text": "cut\n"}
