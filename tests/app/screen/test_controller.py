"""``AgentController``: every action of the screen, through the harness (issue 8; reference 5.2).

Each action's effect is read back from committed state through the view model,
as the screen sees it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_durable_tui.ai import (
    FauxMatch,
    FauxProvider,
    ModelCost,
    faux_model,
    faux_response,
    faux_text,
)
from pi_durable_tui.app import ActionRefused
from pi_durable_tui.app.screen._compaction_notices import compaction_notice
from pi_durable_tui.harness import LIVE_DOC, HarnessClosed
from tests.app.screen_support import (
    ScreenFactory,
    ScreenRig,
    background_subagent,
    call,
    gate_command,
    say,
)
from tests.harness.run_support import within


async def busy_with_a_command(rig: ScreenRig, prompt: str = "run it") -> None:
    await within(rig.controller.submit(prompt))
    await rig.until(lambda: rig.model.status.startswith("Running bash"), "the command runs")


async def test_enter_while_busy_steers_after_the_tool_round_and_a_follow_up_waits_for_the_end_R61(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(call("bash", command=gate_command()), say("done"), say("linted"))
    await busy_with_a_command(rig)
    assert [c.busy for c in await within(rig.controller.conversations())] == [True]
    await within(rig.controller.submit("use pathlib"))
    await within(rig.controller.submit("then lint", follow_up=True))
    rig.release()
    await rig.idle()
    order = [
        (b.kind, b.tool.name if b.tool else b.text)
        for b in rig.model.blocks
        if b.kind in ("user", "tool", "assistant")
    ]
    assert order == [
        ("user", "run it"),
        ("tool", "bash"),
        ("user", "use pathlib"),
        ("assistant", "done"),
        ("user", "then lint"),
        ("assistant", "linted"),
    ]


async def test_abort_returns_withdrawn_queued_texts_and_leaves_a_background_subagent_running_R57(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(
        *background_subagent(
            say("Started."), call("bash", command=gate_command()), say("Read the report.")
        )
    )
    await rig.ask("start a reviewer")
    await busy_with_a_command(rig, "now run this")
    await within(rig.controller.submit("steer text"))
    await within(rig.controller.submit("follow-up text", follow_up=True))
    await rig.until(lambda: len(rig.model.queue) == 2, "queued")
    assert await within(rig.controller.abort()) == ["steer text", "follow-up text"]
    await rig.until(lambda: not rig.model.busy and not rig.model.queue, "aborted")
    assert rig.card("bash").tool.status == "aborted"  # type: ignore[union-attr]
    subagent = rig.task("pi.subagent")
    assert subagent is not None
    assert subagent.background
    assert not subagent.aborting
    rig.release("bg-go")
    await rig.until(lambda: "Read the report." in rig.texts("assistant"), "the report arrives")
    assert any("report] Findings: fine." in t for t in rig.texts("user"))


async def test_withdraw_of_an_input_already_placed_returns_nothing(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(say("hi"))
    await rig.ask("hello")
    placed = next(iter(rig.model.watched), None)
    assert placed is None  # settled submissions are no longer watched
    page = await rig.app.harness.session.storage.scan_submissions(conversation_id=1, limit=5)
    assert await within(rig.controller.withdraw(page.items[0].id)) is None


async def fork_before_second(rig: ScreenRig) -> str:
    """Ask ``first`` then ``second``, and fork before ``second``; the fork's returned text."""
    await rig.ask("first")
    await rig.ask("second")
    second = next(b for b in rig.blocks("user") if b.text == "second")
    assert second.entry_id is not None
    return await within(rig.controller.fork(second.entry_id))


async def test_fork_from_a_user_message_shows_the_history_before_it_and_returns_its_text(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(say("one"), say("two"), say("other two"))
    assert await fork_before_second(rig) == "second"
    fork = rig.model.conversation_id
    assert fork != rig.app.root.id
    assert [(b.kind, b.text) for b in rig.model.blocks] == [("user", "first"), ("assistant", "one")]
    assert rig.model.footer.conversation_label == "fork of first"  # issue 12: no ids
    await rig.ask("second, differently")
    assert rig.texts("assistant") == ["one", "other two"]
    first = rig.blocks("user")[0]
    assert first.entry_id is not None
    assert await within(rig.controller.fork(first.entry_id)) == "first"
    assert rig.model.blocks == []
    assert rig.model.footer.model == "faux/faux-1"


async def test_fork_of_an_entry_of_another_conversation_is_refused(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(say("one"))
    await rig.ask("first")
    with pytest.raises(ValueError, match="is not in this conversation"):
        await within(rig.controller.fork(999_999))


def reasoning_faux() -> FauxProvider:
    return FauxProvider(
        [say("ok")],
        models=[
            faux_model("thinker", reasoning=True, cost=ModelCost(input=1.0)),
            faux_model("plain"),
        ],
    )


async def test_cycle_thinking_moves_through_the_model_levels_and_refuses_a_plain_model(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(faux=reasoning_faux(), model="faux/thinker")
    levels = [await within(rig.controller.cycle_thinking()) for _ in range(2)]
    assert levels[0] != "off"
    assert levels[0] != levels[1]
    await rig.until(lambda: rig.model.footer.thinking_level == levels[1], "footer level")
    await within(rig.controller.set_model("faux/plain"))
    with pytest.raises(ValueError, match="faux/plain has no thinking levels"):
        await within(rig.controller.cycle_thinking())


async def test_set_model_switches_the_shown_conversation_and_clamps_the_thinking_level(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(faux=reasoning_faux(), model="faux/thinker:high")
    assert rig.model.footer.thinking_level == "high"
    await within(rig.controller.set_model("faux/plain"))
    await rig.until(lambda: rig.model.footer.model == "faux/plain", "model switched")
    assert rig.model.footer.thinking_level == "off"
    with pytest.raises(ActionRefused, match="Models of faux: thinker, plain"):
        await within(rig.controller.set_model("faux/nonexistent"))


async def test_models_offers_the_catalog_and_marks_providers_without_a_key(
    open_screen: ScreenFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    rig = await open_screen()
    choices = {choice.ref: choice for choice in rig.controller.models()}
    assert choices["faux/faux-1"].configured
    anthropic = [c for c in choices.values() if c.provider == "anthropic"]
    assert anthropic
    assert not any(c.configured for c in anthropic)


async def test_conversations_lists_main_first_then_subagents_newest_first_with_titles(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(
        faux_response(faux_text("Child A."), match=FauxMatch(user="[a]")),
        faux_response(faux_text("Child B."), match=FauxMatch(user="[b]")),
        call("subagent", task="[a] first job"),
        call("subagent", task="[b] second job"),
        say("Both done."),
    )
    await rig.ask("delegate twice")
    found = await within(rig.controller.conversations())
    assert [(c.label.split()[0], c.title) for c in found] == [
        ("main", "delegate twice"),
        ("subagent", "[b] second job"),
        ("subagent", "[a] first job"),
    ]
    assert [c.shown for c in found] == [True, False, False]
    assert not any(c.busy for c in found)
    child = found[2].conversation_id
    before = len(rig.changes)
    await within(rig.controller.switch_conversation(child))
    assert rig.model.conversation_id == child
    assert rig.texts("assistant") == ["Child A."]
    assert rig.model.footer.conversation_label == "subagent: [a] first job"
    assert any(change.transcript_reset for change in rig.changes[before:])
    assert [c.shown for c in await within(rig.controller.conversations())] == [False, False, True]


async def test_new_session_starts_empty_with_the_shown_model_and_resume_reopens_the_first(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(say("hi there"), say("fresh"))
    await rig.ask("hello")
    first = rig.app
    await within(rig.controller.new_session())
    assert rig.app is not first
    with pytest.raises(HarnessClosed):
        await first.root.snapshot(LIVE_DOC)
    assert rig.model.blocks == []
    assert rig.model.footer.model == "faux/faux-1"
    await rig.ask("second session")
    assert rig.texts("assistant") == ["fresh"]
    sessions = await within(rig.controller.sessions())
    assert [s.first_message for s in sessions] == ["second session", "hello"]
    await within(rig.controller.open_session(sessions[1].path))
    assert rig.texts("user") == ["hello"]
    assert rig.texts("assistant") == ["hi there"]


@pytest.mark.parametrize(
    ("fmt", "suffix"), [("jsonl", ".jsonl"), ("markdown", ".md"), ("html", ".html")]
)
async def test_export_writes_the_transcript_in_each_format(
    open_screen: ScreenFactory, fmt: str, suffix: str
) -> None:
    rig = await open_screen(say("exported answer"))
    await rig.ask("export me")
    path = await within(rig.controller.export(fmt))  # type: ignore[arg-type]
    assert path.startswith(str(rig.workdir))
    assert path.endswith(suffix)
    text = Path(path).read_text("utf-8")
    assert "export me" in text
    assert "exported answer" in text
    if fmt == "jsonl":
        assert all(json.loads(line) for line in text.splitlines())
    named = rig.workdir / f"out{suffix}"
    assert await within(rig.controller.export(fmt, str(named))) == str(named)  # type: ignore[arg-type]
    assert named.exists()


async def test_export_expands_a_tilde_and_says_the_full_path_it_wrote(
    open_screen: ScreenFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "user-home"
    (home / "notes").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    rig = await open_screen(say("exported answer"))
    await rig.ask("export me")

    written = await within(rig.controller.export("markdown", "~/notes/x.md"))
    (rig.workdir / "sub").mkdir()
    relative = await within(rig.controller.export("markdown", "sub/here.md"))

    assert written == str(home / "notes" / "x.md")
    assert "exported answer" in Path(written).read_text("utf-8")
    assert relative == str(rig.workdir / "sub" / "here.md")  # in the session's directory
    assert not (rig.workdir / "~").exists()


@pytest.mark.parametrize(
    ("where", "why"),
    [
        ("missing/x.md", "the directory {dir}/missing does not exist (create it first)"),
        ("a-directory", "it is a directory: name a file in it"),
    ],
)
async def test_export_where_no_file_can_be_written_is_refused_saying_why(
    open_screen: ScreenFactory, where: str, why: str
) -> None:
    rig = await open_screen(say("exported answer"))
    (rig.workdir / "a-directory").mkdir()
    before = sorted(rig.workdir.rglob("*"))

    with pytest.raises(ActionRefused) as caught:
        await within(rig.controller.export("markdown", where))

    target = rig.workdir / where
    reason = why.format(dir=rig.workdir)
    assert str(caught.value) == f"Cannot export to {target}: {reason}; nothing was written."
    assert sorted(rig.workdir.rglob("*")) == before


async def test_export_writes_the_shown_conversation_so_a_fork_exports_the_fork(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(say("one"), say("two"), say("other two"))
    await fork_before_second(rig)
    await rig.ask("second, differently")
    text = Path(await within(rig.controller.export("markdown"))).read_text("utf-8")
    assert "second, differently" in text
    assert "other two" in text
    assert "first" in text  # the history the fork sees
    assert "## User\n\nsecond\n" not in text  # the main conversation's own turn is not in it


async def test_complete_path_lists_matching_files_and_directories_skipping_noise(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen()
    for name in ("src/main.py", "src/model.py", "setup.py", ".env", ".git/HEAD", "node_modules/x"):
        (rig.workdir / name).parent.mkdir(parents=True, exist_ok=True)
        (rig.workdir / name).write_text("x")
    assert rig.controller.complete_path("") == ["setup.py", "src/"]
    assert rig.controller.complete_path("s") == ["setup.py", "src/"]
    assert rig.controller.complete_path("src/m") == ["src/main.py", "src/model.py"]
    assert rig.controller.complete_path("src/ma") == ["src/main.py"]
    assert rig.controller.complete_path(".e") == [".env"]
    assert rig.controller.complete_path("missing/") == []


async def test_complete_path_of_a_bare_name_also_finds_files_deeper_below(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen()
    for name in ("model_card.md", "src/app/models.py", "src/model.py", ".git/model.py"):
        (rig.workdir / name).parent.mkdir(parents=True, exist_ok=True)
        (rig.workdir / name).write_text("x")

    # The working directory's own entries first, then the rest by rank.
    assert rig.controller.complete_path("mode") == [
        "model_card.md",
        "src/model.py",
        "src/app/models.py",
    ]
    assert rig.controller.complete_path("m") == ["model_card.md"]  # one letter: no search


async def test_complete_path_is_relative_to_the_demo_workspace_not_the_start_directory(
    open_screen: ScreenFactory,
) -> None:
    """Issue 12: ``@`` in ``--demo`` listed the directory pidurable was started in."""
    rig = await open_screen(demo="coding", demo_pace=0)
    (rig.workdir / "started_here.txt").write_text("x")
    assert rig.model.working_directory != str(rig.workdir)
    assert rig.controller.complete_path("calc") == ["calc.py", "test_calc.py"]
    assert rig.controller.complete_path("start") == []


async def test_history_keeps_each_prompt_once_oldest_first(open_screen: ScreenFactory) -> None:
    rig = await open_screen(say("1"), say("2"), say("3"))
    for prompt in ("first", "second", "first"):
        await rig.ask(prompt)
    assert list(rig.controller.history()) == ["second", "first"]


async def test_compact_ends_with_a_notice_saying_what_happened(open_screen: ScreenFactory) -> None:
    rig = await open_screen(
        say("A long first answer to summarize later. " * 5),
        say("Summary of the first exchange."),
        settings={"compaction": {"keep_recent_tokens": 1}},
    )
    await within(rig.controller.compact())
    await rig.until(lambda: bool(rig.model.notices), "nothing-to-compact notice")
    assert rig.model.notices[-1].text.startswith("Nothing to compact")
    await rig.ask("first")
    await within(rig.controller.compact("keep the numbers"))
    await rig.until(lambda: rig.model.notices[-1].text == "Compacted.", "compacted notice")
    assert rig.texts("compaction") == ["Summary of the first exchange."]


@pytest.mark.parametrize(
    ("outcome", "notice"),
    [
        ({"status": "completed", "result": {"entry_id": 9}}, ("info", "Compacted.")),
        (
            {"status": "completed", "result": {"submission_id": 9}},
            ("info", "Compaction summary queued; it is placed at the next turn boundary."),
        ),
        ({"status": "aborted"}, ("warning", "Compaction aborted.")),
        (
            {"status": "dropped"},
            ("warning", "Compaction summary dropped: the context changed under it."),
        ),
        (
            {"status": "failed", "error": {"message": "No model is configured"}},
            (
                "error",
                "Compaction failed: No model is configured. The conversation goes on"
                " uncompacted; /compact retries, /new starts fresh.",
            ),
        ),
    ],
)
def test_each_compaction_outcome_has_its_notice(
    outcome: dict[str, object], notice: tuple[str, str]
) -> None:
    assert compaction_notice(outcome) == notice


async def test_close_closes_the_session_once(open_screen: ScreenFactory) -> None:
    rig = await open_screen()
    await within(rig.controller.close())
    await within(rig.controller.close())
    with pytest.raises(HarnessClosed):
        await rig.app.harness.wait_for_idle()


async def test_new_session_in_a_demo_keeps_its_scripted_model_tools_and_workspace(
    open_screen: ScreenFactory,
) -> None:
    """Issue 12: ``/new`` works in every session, the demo's faux one included."""
    rig = await open_screen(demo="planner", demo_pace=0)
    await rig.idle()
    first, workspace = rig.app, rig.model.footer.cwd
    await within(rig.controller.new_session())
    assert rig.app is not first
    assert rig.app.demo is not None
    assert rig.app.demo.name == "planner"
    assert rig.model.footer.model == "faux/faux-1"
    assert rig.model.footer.cwd == workspace
    await rig.ask("Plan a weekend in Vienna for two.")
    assert rig.texts("assistant")  # the scripted model answered in the new session
    assert rig.texts("user")[0] == "Plan a weekend in Vienna for two."


async def test_choosing_a_model_without_its_key_names_the_variable_and_keeps_the_model(
    open_screen: ScreenFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 12: ``/model`` without a key said nothing; now it says what to set."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    rig = await open_screen()
    choice = next(c for c in rig.controller.models() if c.provider == "anthropic")
    assert not choice.configured
    assert choice.missing_key == "ANTHROPIC_API_KEY"
    with pytest.raises(
        ActionRefused, match="needs ANTHROPIC_API_KEY: export ANTHROPIC_API_KEY="
    ) as caught:
        await within(rig.controller.set_model(choice.ref))
    assert '"api_key_env"' in str(caught.value)  # how settings name a custom provider's variable
    assert rig.model.footer.model == "faux/faux-1"


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        (
            "nowhere/x",
            "Unknown model nowhere/x: no provider 'nowhere' (known: anthropic, faux, openai)",
        ),
        ("openai/nope", "Unknown model openai/nope. Models of openai: gpt-5.2, gpt-5.1,"),
        ("qwen3", "Model reference must look like provider/model-id, got 'qwen3'"),
    ],
)
async def test_choosing_an_unknown_model_is_refused_saying_what_exists_and_keeps_the_model(
    open_screen: ScreenFactory, ref: str, message: str
) -> None:
    rig = await open_screen()

    with pytest.raises(ActionRefused) as caught:
        await within(rig.controller.set_model(ref))

    assert str(caught.value).startswith(message)
    assert rig.model.footer.model == "faux/faux-1"
