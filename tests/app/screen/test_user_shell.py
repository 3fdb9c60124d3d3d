"""The editor's shell mode through the controller: ``!cmd`` and ``!!cmd`` (``_user_shell``).

A real session (SQLite store, the coding registry, a faux model), real bash: the
command's entry is committed before the screen shows it, the model's next request
carries it (R73, R76) or, for ``!!``, nothing (R73); it starts no turn (R60).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pi_durable_tui.ai import TextContent, UserMessage
from pi_durable_tui.app import ActionRefused
from pi_durable_tui.harness import LIVE_DOC, SHELL, SHELL_BUSY, AgentChange
from tests.app.screen_support import ScreenFactory, ScreenRig, call, gate_command, say
from tests.harness.run_support import within

CANARY = "sk-canary-shell-4c1e9a7b2d5f8e0a3c6b"
"""A secret of this process: the redactor hides its value in every commit."""


def sent_user_texts(rig: ScreenRig, request: int = -1) -> list[str]:
    """The texts of the user messages of one request the model received."""
    context = rig.faux.requests[request].context
    return [_text(m.content) for m in context.messages if isinstance(m, UserMessage)]


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.text for b in content if isinstance(b, TextContent))  # type: ignore[attr-defined]


async def shell_entries(rig: ScreenRig) -> list[dict[str, object]]:
    """The data of the stored ``pi.shell`` entries of the shown conversation, oldest first."""
    storage = rig.app.harness.session.storage
    page = await storage.scan_entries(rig.model.conversation_id, order="asc", limit=100)
    return [dict(e.entry.data) for e in page.items if e.entry.kind == SHELL]  # type: ignore[arg-type]


async def test_a_bang_command_runs_in_the_working_directory_and_the_next_request_carries_it(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(say("I see a001."))
    (rig.workdir / "marker.txt").write_text("a001\n")
    await within(rig.controller.run_shell("cat marker.txt; pwd", context=True))
    assert rig.faux.call_count == 0  # no turn started (R60)
    [block] = rig.blocks("shell")
    assert block.tool is not None
    assert block.tool.status == "done"
    assert block.tool.exit_code == 0
    assert block.tool.output == f"a001\n{rig.workdir}"
    assert block.detail == ""
    await rig.ask("what did I run?")
    texts = sent_user_texts(rig)
    assert texts == [
        f"I ran `cat marker.txt; pwd` (exit 0):\na001\n{rig.workdir}",
        "what did I run?",
    ]


async def test_a_double_bang_command_is_shown_but_adds_nothing_to_the_context(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(say("nothing seen"))
    await within(rig.controller.run_shell("echo b002", context=False))
    [block] = rig.blocks("shell")
    assert block.tool is not None
    assert block.tool.output == "b002"
    assert block.detail == "not sent to the model"
    await rig.ask("hello")
    assert sent_user_texts(rig) == ["hello"]
    context = await rig.app.harness.conversation(rig.model.conversation_id).context()
    assert not any("b002" in str(m) for m in context.messages)


async def test_a_failing_command_says_its_exit_code_to_the_model(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(say("ok"))
    await within(rig.controller.run_shell("echo oops >&2; exit 3", context=True))
    [block] = rig.blocks("shell")
    assert block.tool is not None
    assert block.tool.exit_code == 3
    assert block.tool.status == "error"  # a ✗ card, as a failed bash call has
    assert block.tool.error == ""  # its outcome line is the exit code
    await rig.ask("and?")
    assert sent_user_texts(rig)[0] == "I ran `echo oops >&2; exit 3` (exit 3):\noops"


async def test_long_output_keeps_the_bash_tools_tail_and_says_what_was_dropped(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(say("ok"))
    await within(rig.controller.run_shell("seq 1 5000", context=True))
    [data] = await shell_entries(rig)
    output = str(data["output"])
    assert output.splitlines()[0] == "3001"
    assert output.splitlines()[-1] == "5000"
    assert data["dropped_lines"] == 3000
    await rig.ask("and?")
    first = sent_user_texts(rig)[0]
    assert first.startswith("I ran `seq 1 5000` (exit 0):\n[earlier output dropped: 3000 lines,")
    assert "\n3001\n" in first
    assert "\n3000\n" not in first
    assert first.endswith(f"\n5000\n[full output: {data['full_output']}]")
    assert Path(str(data["full_output"])).read_text().splitlines()[0] == "1"


async def test_a_secret_in_the_output_is_redacted_at_commit(
    open_screen: ScreenFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    rig = await open_screen(say("ok"))
    (rig.workdir / "leak.txt").write_text(f"key={CANARY}\n")
    await within(rig.controller.run_shell("cat leak.txt", context=True))
    [block] = rig.blocks("shell")
    assert block.tool is not None
    assert CANARY not in block.tool.output
    assert "[redacted]" in block.tool.output
    await rig.ask("and?")
    assert not any(CANARY in text for text in sent_user_texts(rig))
    store = Path(rig.app.harness.session.storage.path)  # type: ignore[attr-defined]
    await rig.controller.close()
    for file in store.parent.iterdir():
        if file.is_file():
            assert CANARY.encode() not in file.read_bytes(), file


async def test_a_command_is_refused_while_the_agent_works_and_nothing_runs(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(call("bash", command=gate_command()), say("done"))
    await within(rig.controller.submit("run it"))
    await rig.until(lambda: rig.model.status.startswith("Running bash"), "the command runs")
    with pytest.raises(ActionRefused, match=SHELL_BUSY):
        await within(rig.controller.run_shell("touch ran.txt", context=True))
    rig.release()
    await rig.idle()
    assert not (rig.workdir / "ran.txt").exists()
    assert rig.blocks("shell") == []


async def test_esc_stops_a_running_command_and_the_entry_says_so(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(say("ok"), settings={"progress": {"output_interval_ms": 20}})
    running = asyncio.ensure_future(
        rig.controller.run_shell("echo started; sleep 30; echo never", context=True)
    )
    await rig.until(
        lambda: any(
            b.tool is not None and b.tool.status == "running" and "started" in b.tool.output
            for b in rig.blocks("shell")
        ),
        "the live card shows the committed output",
    )
    assert rig.model.busy
    assert rig.model.status == "Running !echo started; sleep 30; echo never... (esc to stop)"
    with pytest.raises(ActionRefused):
        await within(rig.controller.submit("not now"))  # a turn never interleaves with it
    await within(rig.controller.abort())
    await within(running)
    [block] = rig.blocks("shell")
    assert block.tool is not None
    assert block.tool.status == "aborted"
    assert block.tool.output == "started"
    assert rig.model.status == ""  # and no longer busy: Enter sends a prompt again
    await rig.ask("and?")
    assert sent_user_texts(rig)[0] == (
        "I ran `echo started; sleep 30; echo never` and stopped it before it finished:\nstarted"
    )


async def test_a_command_cut_by_a_crash_is_interrupted_on_continue_and_never_runs_again(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen()
    conversation = rig.app.harness.conversation(rig.model.conversation_id)
    # What a kill -9 mid-command leaves: the running command and its committed output.
    await within(conversation.begin_shell("touch once.txt; echo half", context=True))
    await within(conversation.shell_progress("half", 0, 0))
    await within(rig.controller.close())
    again = await open_screen(say("seen"), continue_session=True)
    [block] = again.blocks("shell")
    assert block.tool is not None
    assert block.tool.status == "interrupted"
    assert block.tool.output == "half"
    resumed = " ".join(b.text + b.detail for b in again.blocks("resumed"))
    assert "Your shell command `touch once.txt; echo half` was interrupted" in resumed
    assert not (again.workdir / "once.txt").exists()
    live = await again.app.harness.conversation(again.model.conversation_id).snapshot(LIVE_DOC)
    assert "shell" not in (live or {})
    await again.ask("and?")
    assert sent_user_texts(again)[0].startswith(
        "I ran `touch once.txt; echo half`; it was interrupted"
    )


async def test_an_export_shows_each_command_the_user_ran_with_its_output(
    open_screen: ScreenFactory, tmp_path: Path
) -> None:
    rig = await open_screen()
    await within(rig.controller.run_shell("echo c003", context=True))
    await within(rig.controller.run_shell("echo d004; exit 1", context=False))
    markdown = Path(await within(rig.controller.export("markdown", str(tmp_path / "t.md"))))
    text = markdown.read_text()
    assert "## Shell command (you)\n\n```\n$ echo c003\nc003\n```\n\n_(exit 0)_" in text
    assert "## Shell command (you, not sent to the model)\n\n```\n$ echo d004; exit 1\nd004" in text
    page = Path(await within(rig.controller.export("html", str(tmp_path / "t.html"))))
    assert "<pre>$ echo c003\nc003</pre><p>(exit 0)</p>" in page.read_text()


async def test_a_command_that_cannot_start_is_a_failed_entry_and_nothing_stays_running(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(say("ok"))
    gone = rig.workdir / "gone"
    gone.mkdir()
    await within(
        rig.app.harness.conversation(rig.model.conversation_id).configure(
            AgentChange(cwd=str(gone))
        )
    )
    gone.rmdir()
    await within(rig.controller.run_shell("echo x", context=True))
    [block] = rig.blocks("shell")
    assert block.tool is not None
    assert block.tool.status == "error"
    assert block.tool.error
    live = await rig.app.harness.conversation(rig.model.conversation_id).snapshot(LIVE_DOC)
    assert "shell" not in (live or {})
    await rig.ask("and?")
    assert sent_user_texts(rig)[0].startswith("I ran `echo x`; it failed (")
