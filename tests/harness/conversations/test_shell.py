"""The commits of a shell command the user runs from the editor (``_shell``; R59-R62, R73).

The harness side only: ``begin_shell`` / ``shell_progress`` / ``finish_shell`` /
``settle_interrupted_shell`` on a real SQLite store, the command's outcome given
as the application would report it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_durable_tui.ai import FauxProvider
from pi_durable_tui.harness import (
    INBOX_DOC,
    SHELL,
    SHELL_BUSY,
    SHELL_RUNNING,
    ShellOutcome,
    ShellRefused,
)
from pi_durable_tui.storage import SqliteStorage
from tests.app.screen_support import say
from tests.harness.run_support import Rig, RigFactory, within


async def sqlite_rig(open_rig: RigFactory, tmp_path: Path, **options: object) -> Rig:
    storage = await SqliteStorage.open(str(tmp_path / "session.sqlite"))
    return await open_rig(storage=storage, **options)


async def test_an_entry_with_context_gives_the_model_a_user_message_and_starts_no_turn_R60(
    open_rig: RigFactory, tmp_path: Path
) -> None:
    rig = await sqlite_rig(open_rig, tmp_path)
    await within(rig.root.begin_shell("ls", context=True))
    await within(rig.root.finish_shell(ShellOutcome("done", output="a.txt", exit_code=0)))
    [entry] = [e for e in await rig.transcript() if e.kind == SHELL]
    assert entry.data == {
        "command": "ls",
        "status": "done",
        "context": True,
        "output": "a.txt",
        "exit_code": 0,
    }
    context = await within(rig.root.context())
    assert [m["content"] for m in context.messages if m["role"] == "user"] == [
        "I ran `ls` (exit 0):\na.txt"
    ]
    assert await rig.tasks("pi.generation") == []
    assert "shell" not in await rig.live()


async def test_an_entry_without_context_contributes_nothing_R73(
    open_rig: RigFactory, tmp_path: Path
) -> None:
    rig = await sqlite_rig(open_rig, tmp_path)
    await within(rig.root.begin_shell("ls", context=False))
    await within(rig.root.finish_shell(ShellOutcome("done", output="a.txt", exit_code=0)))
    [entry] = [e for e in await rig.transcript() if e.kind == SHELL]
    assert entry.model is None
    assert (await within(rig.root.context())).messages == []


async def test_a_command_is_refused_while_the_conversation_runs_or_another_one_runs(
    open_rig: RigFactory, tmp_path: Path
) -> None:
    rig = await sqlite_rig(
        open_rig, tmp_path, faux=FauxProvider([say("word " * 400)], tokens_per_second=40)
    )
    await within(rig.root.begin_shell("sleep 1", context=True))
    with pytest.raises(ShellRefused, match=SHELL_RUNNING):
        await within(rig.root.begin_shell("ls", context=True))
    await within(rig.root.finish_shell(ShellOutcome("done", exit_code=0)))
    await within(rig.root.submit("talk"))
    await rig.wait_until(
        lambda: bool(rig.commits) and "run" in (rig.commits[-1].live() or ({}, []))[0]
    )
    with pytest.raises(ShellRefused, match=SHELL_BUSY):
        await within(rig.root.begin_shell("ls", context=True))
    assert "shell" not in await rig.live()
    await rig.root.abort()


async def test_a_run_started_while_it_ran_gets_the_entry_as_a_queued_write_R59_R61(
    open_rig: RigFactory, tmp_path: Path
) -> None:
    rig = await sqlite_rig(
        open_rig, tmp_path, faux=FauxProvider([say("a long answer " * 40)], tokens_per_second=200)
    )
    await within(rig.root.begin_shell("make", context=True))
    await within(rig.root.submit("meanwhile"))  # not from the editor: nothing refuses it here
    submission_id = await within(rig.root.finish_shell(ShellOutcome("done", exit_code=0)))
    inbox = await rig.root.snapshot(INBOX_DOC) or {}
    assert [(i["id"], i["mode"]) for i in inbox.get("items", [])] == [(submission_id, "write")]
    await within(rig.harness.wait_for_idle())
    assert await rig.kinds() == ["pi.user", "pi.assistant", SHELL]  # placed at its end (R62)
    assert "shell" not in await rig.live()


async def test_streamed_output_is_committed_as_appends_and_a_crash_leaves_it_interrupted(
    open_rig: RigFactory, tmp_path: Path
) -> None:
    rig = await sqlite_rig(open_rig, tmp_path)
    await within(rig.root.begin_shell("build", context=True))
    await within(rig.root.shell_progress("step 1\n", 0, 0))
    await within(rig.root.shell_progress("step 1\nstep 2\n", 0, 0))
    _, _, ops = rig.live_changes()[-1]
    assert ops == [{"op": "append", "path": ["shell", "output"], "text": "step 2\n"}]
    assert await within(rig.root.settle_interrupted_shell()) == "build"
    assert await within(rig.root.settle_interrupted_shell()) is None  # settled once
    [entry] = [e for e in await rig.transcript() if e.kind == SHELL]
    assert isinstance(entry.data, dict)
    assert entry.data["status"] == "interrupted"
    assert entry.data["output"] == "step 1\nstep 2\n"
