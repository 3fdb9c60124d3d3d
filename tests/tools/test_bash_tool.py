"""The ``bash`` tool through the harness (reference 3.4, R102-R105, R120)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pi_durable_tui.harness import TOOL_RESULT
from pi_durable_tui.tools._bash import SPILL_KEPT
from tests.deadlines import WAIT
from tests.harness.run_support import RigFactory, message, within
from tests.tools.tool_run import RunTool, ToolCallOutcome, start_tool

SECRET = "sk-test-abcdefghijklmnop0123456789"


def outputs(rig: object) -> list[str]:
    """The successive outputs of the first tool slot, as committed."""
    seen: list[str] = []
    for _published, value, _ops in rig.live_changes():  # type: ignore[attr-defined]
        slots = value.get("tools") or []
        output = slots[0].get("output") if slots else None
        if output and (not seen or seen[-1] != output):
            seen.append(output)
    return seen


async def test_bash_streams_its_output_live_through_committed_progress(
    open_rig: RigFactory, workdir: Path
) -> None:
    # Each line waits until the test saw it committed (an ``ack-N`` file), so the
    # progress commits are one per line however slow the machine is.
    wait = "n=0; while [ ! -e ack-$i ] && [ $n -lt 6000 ]; do sleep 0.01; n=$((n+1)); done"
    command = f"for i in 1 2 3 4; do echo $i; {wait}; done"
    rig = await start_tool(open_rig, workdir, "bash", {"command": command})
    handle = await within(rig.root.submit("go"))

    def committed(line: int) -> Callable[[], bool]:
        return lambda: any(output.endswith(f"{line}\n") for output in outputs(rig))

    for line in range(1, 5):
        await within(rig.wait_until(committed(line)))
        (workdir / f"ack-{line}").touch()
    assert (await within(handle.wait())).status == "done"

    assert outputs(rig) == ["1\n", "1\n2\n", "1\n2\n3\n", "1\n2\n3\n4\n"]
    [result] = [e for e in await rig.transcript() if e.kind == TOOL_RESULT]
    assert message(result)["content"][0] == {"type": "text", "text": "1\n2\n3\n4\n"}


async def test_bash_reports_exit_code_and_duration(run_tool: RunTool) -> None:
    outcome = await run_tool("bash", {"command": "echo out; echo err >&2; exit 3"})

    assert outcome.is_error
    assert outcome.text == "out\nerr\n"
    assert outcome.errors == ["Command exited with code 3"]
    assert outcome.details["exit_code"] == 3
    assert isinstance(outcome.details["duration_ms"], int)
    assert isinstance(outcome.message["duration_ms"], int)
    [task] = await outcome.rig.tasks("pi.tool")
    assert task.state["outcome"]["status"] == "failed"


async def test_a_successful_command_returns_its_output_and_details(run_tool: RunTool) -> None:
    outcome = await run_tool("bash", {"command": "pwd"})

    assert not outcome.is_error
    assert outcome.text == f"{outcome.rig.workdir}\n"
    assert outcome.details["exit_code"] == 0
    assert outcome.details["command"] == "pwd"


async def test_a_command_past_its_timeout_is_killed_with_a_clear_message(run_tool: RunTool) -> None:
    outcome = await run_tool("bash", {"command": "echo begun; sleep 5", "timeout": 0.3})

    assert outcome.text == "begun\n"
    assert outcome.errors == ["Command timed out after 0.3 seconds"]


async def test_an_impossible_timeout_is_refused(run_tool: RunTool) -> None:
    outcome = await run_tool("bash", {"command": "true", "timeout": 1e10})

    assert outcome.errors == ["Invalid timeout: maximum is 2147483.647 seconds"]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


async def test_aborting_a_command_kills_its_whole_process_group(
    open_rig: RigFactory, workdir: Path
) -> None:
    command = "sleep 30 & echo $! > child.pid; echo started; wait"
    rig = await start_tool(open_rig, workdir, "bash", {"command": command})
    await within(rig.root.submit("go"))
    await within(rig.wait_until(lambda: "started\n" in outputs(rig)))
    child = int((workdir / "child.pid").read_text())

    await within(rig.root.abort())

    deadline = time.monotonic() + WAIT  # SIGKILL is sent; the kernel reaps it soon
    while alive(child) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert not alive(child)
    [result] = [e for e in await rig.transcript() if e.kind == TOOL_RESULT]
    assert message(result)["content"][0] == {"type": "text", "text": "started\n"}
    assert result.data["diagnostics"][-1]["message"] == "Tool bash was aborted"  # type: ignore[call-overload, index]


async def test_bash_keeps_the_tail_and_names_the_spill_file_with_the_full_output(
    run_tool: RunTool,
) -> None:
    outcome = await run_tool("bash", {"command": "seq 1 3000"})

    everything = "".join(f"{n}\n" for n in range(1, 3001))
    kept = "".join(f"{n}\n" for n in range(1001, 3001))
    assert outcome.text == kept
    full_output, truncated = outcome.diagnostics
    assert full_output["code"] == "full_output"
    spill = Path(full_output["message"].removeprefix("Full output: ").removesuffix(SPILL_KEPT))
    try:
        assert spill.read_text() == everything
    finally:
        spill.unlink()
    assert truncated == {
        "severity": "warn",
        "message": f"Output truncated to its end: 1000 lines, {len(everything) - len(kept)} "
        "bytes dropped",
        "code": "truncated",
    }
    assert outcome.details["full_output"] == str(spill)


async def test_a_failing_command_with_truncated_output_keeps_the_truncation_warning_r97(
    run_tool: RunTool,
) -> None:
    outcome = await run_tool("bash", {"command": "seq 1 3000; exit 4"})

    everything = "".join(f"{n}\n" for n in range(1, 3001))
    kept = "".join(f"{n}\n" for n in range(1001, 3001))
    assert outcome.is_error
    assert outcome.text == kept
    notice = f"Output truncated to its end: 1000 lines, {len(everything) - len(kept)} bytes dropped"
    full_output, error, truncated = outcome.diagnostics
    assert full_output["code"] == "full_output"
    Path(full_output["message"].removeprefix("Full output: ").removesuffix(SPILL_KEPT)).unlink()
    assert error == {
        "severity": "error",
        "message": "Command exited with code 4",
        "code": "tool_error",
    }
    assert truncated == {"severity": "warn", "message": notice, "code": "truncated"}
    # The model sees the warning too, last in the harness block.
    block = outcome.message["content"][-1]["text"]
    assert block.splitlines()[-2:] == [f"[warn] {notice}", "</harness>"]
    [task] = await outcome.rig.tasks("pi.tool")
    assert task.state["outcome"]["status"] == "failed"


async def test_a_secret_variable_of_the_agent_is_not_visible_to_the_command(
    run_tool: RunTool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)

    outcome = await run_tool("bash", {"command": 'echo "[$OPENAI_API_KEY]"; echo "[$HOME]"'})

    assert outcome.text == f"[]\n[{os.environ['HOME']}]\n"


async def test_a_secret_a_command_prints_from_a_file_is_redacted_in_every_commit(
    open_rig: RigFactory, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    (workdir / "key.txt").write_text(f"token={SECRET}\n")
    # ``after`` waits until the first line was committed as progress (``ack``).
    wait = "n=0; while [ ! -e ack ] && [ $n -lt 6000 ]; do sleep 0.01; n=$((n+1)); done"
    rig = await start_tool(
        open_rig, workdir, "bash", {"command": f"cat key.txt; {wait}; echo after"}
    )
    handle = await within(rig.root.submit("go"))
    await within(rig.wait_until(lambda: "token=[redacted]\n" in outputs(rig)))
    (workdir / "ack").touch()
    assert (await within(handle.wait())).status == "done"
    [result] = [e for e in await rig.transcript() if e.kind == TOOL_RESULT]
    outcome = ToolCallOutcome(rig, result)

    assert outcome.text == "token=[redacted]\nafter\n"
    assert "token=[redacted]\n" in outputs(outcome.rig)
    for published in outcome.rig.commits:
        dumped = json.dumps(
            [
                [e.to_json() for e in published.info.entries],
                [[c.value, c.ops] for c in published.info.documents],
            ]
        )
        assert SECRET not in dumped


BACKGROUND = (
    "sleep 300 & echo $! >> pids; setsid sleep 300 & echo $! >> pids; "
    "nohup sleep 300 >/dev/null 2>&1 & echo $! >> pids; "
    "env -i /usr/bin/setsid /bin/sleep 300 & echo $! >> pids"
)
"""Four background processes, one each way (the last clears its environment too)."""


def started_pids(workdir: Path) -> list[int]:
    found = [int(line) for line in (workdir / "pids").read_text().split()]
    assert len(found) == 4
    return found


async def test_a_finished_command_leaves_no_process_it_put_in_the_background_issue13(
    run_tool: RunTool, workdir: Path
) -> None:
    outcome = await run_tool("bash", {"command": BACKGROUND + "; echo started"})

    assert outcome.text == "started\n"
    assert [pid for pid in started_pids(workdir) if alive(pid)] == []


async def test_aborting_a_command_ends_what_it_left_its_process_group_for_issue13(
    open_rig: RigFactory, workdir: Path
) -> None:
    command = BACKGROUND + "; echo started; sleep 300"
    rig = await start_tool(open_rig, workdir, "bash", {"command": command})
    await within(rig.root.submit("go"))
    await within(rig.wait_until(lambda: "started\n" in outputs(rig)))

    await within(rig.root.abort())

    deadline = time.monotonic() + WAIT
    while any(alive(pid) for pid in started_pids(workdir)) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert [pid for pid in started_pids(workdir) if alive(pid)] == []


async def test_the_spill_file_a_result_names_is_kept_until_the_harness_closes_issue13(
    run_tool: RunTool,
) -> None:
    outcome = await run_tool("bash", {"command": "seq 1 3000"})
    full_output = outcome.diagnostics[0]["message"]
    assert full_output.endswith(SPILL_KEPT)
    spill = Path(full_output.removeprefix("Full output: ").removesuffix(SPILL_KEPT))
    assert spill.exists()

    await within(outcome.rig.harness.close())

    assert not spill.exists()
