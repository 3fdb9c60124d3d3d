"""Background jobs: ``bash`` with ``background: true``, ``job_output``, ``kill_job`` (issue 13)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from pi_durable_tui.ai import faux_response, faux_tool_call
from pi_durable_tui.env import KEPT_LOG_PREFIX, LocalEnv, processes_of_run
from pi_durable_tui.env.ssh import SshEnv
from pi_durable_tui.harness import TOOL_RESULT
from pi_durable_tui.storage import JsonObject
from pi_durable_tui.tools import JOB_TASK, JOBS_DOC, keep_job, move_to_background
from pi_durable_tui.tools._jobs import RUNNING, prune_ended
from tests.env.test_job_log import has_relay
from tests.harness.run_support import Rig, RigFactory, message, texts, within
from tests.tools.test_bash_tool import outputs
from tests.tools.tool_run import start_tool


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except OSError:
        return False


async def jobs(rig: Rig) -> dict[str, JsonObject]:
    """The committed ``pi.jobs`` entries of the main conversation."""
    value = await rig.root.snapshot(JOBS_DOC) or {}
    return dict(value.get("jobs") or {})


async def start_job(
    open_rig: RigFactory, workdir: Path, command: str
) -> tuple[Rig, str, JsonObject]:
    """Run one turn whose ``bash`` call starts ``command`` in the background."""
    rig = await start_tool(open_rig, workdir, "bash", {"command": command, "background": True})
    assert (await rig.ask("go")).status == "done"
    [(job_id, entry)] = (await jobs(rig)).items()
    return rig, job_id, entry


async def test_a_background_command_returns_at_once_with_its_job_id_and_log(
    open_rig: RigFactory, workdir: Path
) -> None:
    rig, job_id, entry = await start_job(open_rig, workdir, "sleep 30")

    [result] = [e for e in await rig.transcript() if e.kind == TOOL_RESULT]
    text = texts(result)
    assert f"Started background job {job_id}" in text
    assert f"job_output(job_id={job_id})" in text
    assert entry["log"] in text
    assert message(result)["details"]["job_id"] == int(job_id)
    assert entry["status"] == "running"
    assert alive(entry["pid"])
    [task] = await rig.tasks(JOB_TASK)
    assert task.background
    assert task.state["status"] in ("pending", "running")


async def test_a_job_commits_its_live_output_and_its_exit(
    open_rig: RigFactory, workdir: Path
) -> None:
    wait = "n=0; while [ ! -e go ] && [ $n -lt 3000 ]; do sleep 0.01; n=$((n+1)); done"
    command = f"echo first; {wait}; echo last; exit 4"
    rig, job_id, _entry = await start_job(open_rig, workdir, command)

    async def output() -> str:
        return str((await jobs(rig))[job_id].get("output"))

    while "first\n" not in await output():
        await _tick()
    assert (await jobs(rig))[job_id]["status"] == "running"
    (workdir / "go").touch()
    [task] = await rig.tasks(JOB_TASK)
    await within(rig.harness.wait_for_task(task.id))

    entry = (await jobs(rig))[job_id]
    assert entry["status"] == "exited"
    assert entry["exit_code"] == 4
    assert entry["output"] == "first\nlast\n"


async def _tick() -> None:
    await asyncio.sleep(0.02)


async def test_a_job_keeps_only_the_tail_of_a_large_output(
    open_rig: RigFactory, workdir: Path
) -> None:
    rig, job_id, _entry = await start_job(open_rig, workdir, "seq 1 100000")
    [task] = await rig.tasks(JOB_TASK)
    await within(rig.harness.wait_for_task(task.id))

    entry = (await jobs(rig))[job_id]
    assert entry["output"].endswith("99999\n100000\n")
    assert len(entry["output"].splitlines()) == 2000
    assert entry["dropped_lines"] == 98000


async def test_a_job_survives_the_abort_of_the_turn_and_stops_from_an_explicit_abort(
    open_rig: RigFactory, workdir: Path
) -> None:
    rig, job_id, entry = await start_job(open_rig, workdir, "sleep 30")

    await within(rig.root.abort())
    assert alive(entry["pid"])
    assert (await jobs(rig))[job_id]["status"] == "running"

    await within(rig.harness.abort_task(int(job_id)))  # what /tasks stop does
    record = await within(rig.harness.wait_for_task(int(job_id)))
    assert record.state["outcome"]["status"] == "aborted"
    assert (await jobs(rig))[job_id]["status"] == "stopped"
    assert not alive(entry["pid"])


async def test_the_model_reads_a_job_s_output_and_stops_it(
    open_rig: RigFactory, workdir: Path
) -> None:
    rig, job_id, entry = await start_job(open_rig, workdir, "echo ready; sleep 30")
    while "ready" not in str((await jobs(rig))[job_id].get("output")):
        await _tick()
    rig.faux.enqueue(
        faux_response(faux_tool_call("job_output", {"job_id": int(job_id)})),
        faux_response(faux_tool_call("kill_job", {"job_id": int(job_id)})),
        faux_response("stopped"),
    )
    assert (await rig.ask("stop it")).status == "done"

    read, stopped = [texts(e) for e in await rig.transcript() if e.kind == TOOL_RESULT][1:]
    assert f"Job {job_id} `echo ready; sleep 30`: running." in read
    assert "ready\n" in read
    assert f"Job {job_id} `echo ready; sleep 30`: stopped." in stopped
    assert not alive(entry["pid"])


async def test_a_job_of_another_conversation_or_none_is_a_clear_error(
    open_rig: RigFactory, workdir: Path
) -> None:
    rig = await start_tool(open_rig, workdir, "job_output", {"job_id": 99})
    assert (await rig.ask("go")).status == "done"

    [result] = [e for e in await rig.transcript() if e.kind == TOOL_RESULT]
    assert "No background job 99 in this conversation" in texts(result)


async def test_a_running_job_is_ended_when_the_session_closes(
    open_rig: RigFactory, workdir: Path
) -> None:
    rig, _job_id, entry = await start_job(open_rig, workdir, "sleep 30")

    await within(rig.harness.close())

    assert not alive(entry["pid"])
    assert not os.path.exists(entry["log"])


async def test_a_kept_job_outlives_the_session_and_its_log_moves_out_of_the_run(
    open_rig: RigFactory, workdir: Path
) -> None:
    rig, _job_id, entry = await start_job(open_rig, workdir, "echo kept; sleep 30")
    log = None
    try:
        log = keep_job(entry["mark"])
        await within(rig.harness.close())

        assert alive(entry["pid"])
        assert log is not None
        assert os.path.basename(log).startswith(KEPT_LOG_PREFIX)
        assert os.path.exists(log)
        await rig.wait_until(lambda: has_relay(entry["mark"]))  # see has_relay
    finally:
        job = RUNNING.pop(entry["mark"], None)
        if job is not None:
            await job.stop()
        if log:
            os.unlink(log)
    assert not alive(entry["pid"])
    assert processes_of_run(entry["mark"]) == []  # stopping it ended its relay too


async def test_tasks_stop_of_a_kept_job_ends_it_and_its_log_s_relay(
    open_rig: RigFactory, workdir: Path
) -> None:
    rig, job_id, entry = await start_job(open_rig, workdir, "echo kept; sleep 30")
    log = keep_job(entry["mark"])
    try:
        await rig.wait_until(lambda: has_relay(entry["mark"]))  # see has_relay

        await within(rig.harness.abort_task(int(job_id)))  # what /tasks stop and kill_job do
        await within(rig.harness.wait_for_task(int(job_id)))

        assert (await jobs(rig))[job_id]["status"] == "stopped"
        assert processes_of_run(entry["mark"]) == []
    finally:
        if log:
            os.unlink(log)


async def test_a_running_command_moved_to_the_background_becomes_a_job_that_survives_esc(
    open_rig: RigFactory, workdir: Path
) -> None:
    wait = "n=0; while [ ! -e go ] && [ $n -lt 3000 ]; do sleep 0.01; n=$((n+1)); done"
    command = f"echo before; {wait}; echo after; sleep 30"
    rig = await start_tool(open_rig, workdir, "bash", {"command": command})
    handle = await within(rig.root.submit("go"))
    await rig.wait_until(lambda: any("before" in output for output in outputs(rig)))

    [call] = [task.id for task in await rig.tasks("pi.tool")]
    assert move_to_background(1) == call  # what Ctrl+B does
    assert (await within(handle.wait())).status == "done"
    [result] = [e for e in await rig.transcript() if e.kind == TOOL_RESULT]
    [(job_id, entry)] = (await jobs(rig)).items()
    assert texts(result).startswith("before\n")
    assert f"moved this command to the background as job {job_id}" in texts(result)
    assert not message(result)["is_error"]

    (workdir / "go").touch()
    while "after" not in str((await jobs(rig))[job_id].get("output")):
        await _tick()
    await within(rig.root.abort())
    assert alive(entry["pid"])

    await within(rig.harness.abort_task(int(job_id)))
    await within(rig.harness.wait_for_task(int(job_id)))
    assert (await jobs(rig))[job_id]["status"] == "stopped"
    assert not alive(entry["pid"])


async def test_nothing_moves_when_no_command_runs() -> None:
    assert move_to_background(1) is None


async def test_a_moved_job_left_running_keeps_writing_its_log_after_the_session_closes(
    open_rig: RigFactory, workdir: Path
) -> None:
    wait = "n=0; while [ ! -e go ] && [ $n -lt 3000 ]; do sleep 0.01; n=$((n+1)); done"
    command = f"echo before; {wait}; echo after; sleep 30"
    rig = await start_tool(open_rig, workdir, "bash", {"command": command})
    handle = await within(rig.root.submit("go"))
    await rig.wait_until(lambda: any("before" in output for output in outputs(rig)))
    move_to_background(1)
    assert (await within(handle.wait())).status == "done"
    [(_job_id, entry)] = (await jobs(rig)).items()
    log = None
    try:
        log = keep_job(entry["mark"])
        await within(rig.harness.close())
        assert alive(entry["pid"])

        (workdir / "go").touch()  # "after" is written once pidurable's pipes are gone
        assert log is not None
        kept = Path(log)
        await rig.wait_until(lambda: "after" in kept.read_text(), timeout=10)
    finally:
        job = RUNNING.pop(entry["mark"], None)
        if job is not None:
            await job.stop()
        os.kill(entry["pid"], 9) if alive(entry["pid"]) else None
        if log:
            os.unlink(log)


async def test_an_ended_jobs_log_holds_no_secret_as_its_committed_output_holds_none(
    open_rig: RigFactory, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    value = "tok-0123456789-very-secret"
    monkeypatch.setenv("BENCH_SERVICE_TOKEN", value)
    (workdir / "token.txt").write_text(f"key={value}\n")  # a file the job prints
    rig, job_id, entry = await start_job(open_rig, workdir, "cat token.txt; echo done")
    [task] = await rig.tasks(JOB_TASK)
    await within(rig.harness.wait_for_task(task.id))

    log = Path(str(entry["log"])).read_text()
    assert value not in log
    assert log == "key=[redacted]\ndone\n"
    assert value not in str((await jobs(rig))[job_id]["output"])


def test_pi_jobs_forgets_the_oldest_ended_jobs_past_twenty_and_never_a_running_one() -> None:
    entries: JsonObject = {str(n): {"status": "exited"} for n in range(1, 26)}
    entries["3"] = {"status": "running"}
    prune_ended(entries)
    assert sorted(entries, key=int) == ["3", *(str(n) for n in range(6, 26))]


async def test_background_on_an_environment_without_jobs_is_one_clear_refusal(
    open_rig: RigFactory, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not hasattr(SshEnv, "start_job")  # SSH runs no jobs: this is what it gets
    monkeypatch.setattr(LocalEnv, "start_job", None)
    rig = await start_tool(open_rig, workdir, "bash", {"command": "sleep 30", "background": True})
    assert (await rig.ask("go")).status == "done"
    [result] = [e for e in await rig.transcript() if e.kind == TOOL_RESULT]
    assert "This environment cannot run background jobs" in texts(result)
    assert await jobs(rig) == {}
