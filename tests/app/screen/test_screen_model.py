"""``LiveScreenModel``: the shown conversation as the screen renders it, from commits (issue 8).

Streaming, paging, the queue, the status line and its retry countdown, the
footer and the notices, over a real session (faux model, SQLite store).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from pi_durable_tui.ai import FauxProvider, ModelCost, ModelRef, faux_error, faux_model
from pi_durable_tui.app import LiveScreenModel, ViewChange
from pi_durable_tui.app.screen._screen_model import PAGE
from pi_durable_tui.harness import LIVE_DOC, AgentChange
from pi_durable_tui.kernel import CommitInfo, ManualClock
from tests.app.screen_support import ScreenFactory, call, gate_command, say, seed_history
from tests.harness.run_support import within


async def test_streamed_text_grows_in_the_live_block_one_change_per_commit_never_per_token_R85(
    open_screen: ScreenFactory,
) -> None:
    text = "word " * 200  # 250 faux tokens, about 60 stream deltas
    rig = await open_screen(faux=FauxProvider([say(text)], tokens_per_second=400))
    live_commits: list[CommitInfo] = []
    rig.app.harness.session.subscribe(
        lambda info: live_commits.extend(
            [info] if any(d.address.kind == LIVE_DOC.kind for d in info.documents) else []
        )
    )
    seen: list[tuple[ViewChange, str | None]] = []
    rig.model.subscribe(
        lambda change: seen.append((change, getattr(rig.model.block("live"), "text", None)))
    )
    await rig.ask("talk")
    streamed = [t for change, t in seen if "live" in change.blocks_added + change.blocks_changed]
    assert len(streamed) >= 3
    for shorter, longer in itertools.pairwise(streamed):
        assert shorter is not None
        assert longer is not None
        assert longer.startswith(shorter)
        assert len(longer) > len(shorter)
    assert len(streamed) <= len(live_commits) < 30
    (final,) = [change for change, _ in seen if "live" in change.blocks_removed]
    answer = rig.blocks("assistant")[-1]
    assert final.blocks_added == (answer.key,)
    assert answer.text.strip() == text.strip()


@pytest.mark.parametrize("size", [10, 10_000])
async def test_mounting_reads_one_page_of_entries_whatever_the_history_holds(
    open_screen: ScreenFactory, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    rig = await open_screen()
    await seed_history(rig, size)
    storage = rig.app.harness.session.storage
    rows: list[int] = []
    scan = storage.scan_entries

    async def counting(*args: Any, **kwargs: Any) -> Any:
        page = await scan(*args, **kwargs)
        rows.append(len(page.items))
        return page

    monkeypatch.setattr(storage, "scan_entries", counting)
    model = LiveScreenModel(rig.app)
    await within(model.attach(rig.app.root.id))
    assert sum(rows) == min(size, PAGE + 1)
    assert len(model.blocks) == min(size, PAGE)
    assert model.blocks[-1].text == f"message {size - 1}"
    assert model.has_older == (size > PAGE)
    await model.close()


async def test_load_older_pages_earlier_blocks_in_before_the_loaded_ones(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen()
    await seed_history(rig, 150)
    model = LiveScreenModel(rig.app)
    changes: list[ViewChange] = []
    model.subscribe(changes.append)
    await within(model.attach(rig.app.root.id))
    assert await within(model.load_older(50)) == 50
    assert [b.text for b in model.blocks[:2]] == ["message 40", "message 41"]
    assert changes[-1] == ViewChange(older_loaded=50)
    assert model.has_older
    assert await within(model.load_older(100)) == 40
    assert (model.has_older, len(model.blocks), model.blocks[0].text) == (False, 150, "message 0")
    assert await within(model.load_older(10)) == 0
    await model.close()


async def test_a_card_whose_result_is_on_the_newer_page_is_filled_when_its_page_loads(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen()
    await seed_history(rig, PAGE + 10, call_at=10)
    model = LiveScreenModel(rig.app)
    await within(model.attach(rig.app.root.id))
    assert all(b.kind == "user" for b in model.blocks)
    await within(model.load_older(PAGE))
    card = next(b.tool for b in model.blocks if b.tool is not None)
    assert card.status == "done"
    assert card.exit_code == 0
    assert card.output == "README.md\n"
    await model.close()


async def test_the_queue_lists_pending_steers_and_follow_ups_and_withdraw_removes_one(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(call("bash", command=gate_command()), say("done"), say("linted"))
    await within(rig.controller.submit("run it"))
    await rig.until(lambda: rig.model.busy and rig.model.status.startswith("Running"), "busy")
    await within(rig.controller.submit("use pathlib"))
    await within(rig.controller.submit("then lint", follow_up=True))
    await rig.until(lambda: len(rig.model.queue) == 2, "two queued")
    assert [(q.mode, q.text) for q in rig.model.queue] == [
        ("steer", "use pathlib"),
        ("follow_up", "then lint"),
    ]
    follow_up = rig.model.queue[1].submission_id
    assert await within(rig.controller.withdraw(follow_up)) == "then lint"
    await rig.until(lambda: len(rig.model.queue) == 1, "one queued")
    assert rig.model.queue[0].text == "use pathlib"
    rig.release()
    await rig.idle()
    assert rig.model.queue == ()
    assert "then lint" not in rig.texts("user")


async def test_a_429_shows_a_retry_countdown_that_ticks_on_the_harness_clock(
    open_screen: ScreenFactory,
) -> None:
    clock = ManualClock()
    rig = await open_screen(
        faux_error("rate limited", status=429, retry_after_ms=3000), say("ok"), clock=clock
    )
    await within(rig.controller.submit("go"))
    await rig.until(lambda: rig.model.status.startswith("Retrying"), "retrying")
    assert rig.model.status == "Retrying in 3s (attempt 2): rate limited"
    assert rig.texts("error") == ["rate limited"]
    clock.advance(1000)
    await rig.until(lambda: rig.model.status.startswith("Retrying in 2s"), "ticked")
    clock.advance(2000)
    await rig.idle()
    assert rig.texts("assistant") == ["ok"]
    assert rig.model.status == ""


async def test_the_footer_sums_spend_and_shows_context_use_model_and_thinking_level(
    open_screen: ScreenFactory,
) -> None:
    faux = FauxProvider(
        [say("priced answer")],
        models=[
            faux_model(
                "priced",
                context_window=20_000,
                reasoning=True,
                cost=ModelCost(input=3.0, output=15.0),
            )
        ],
    )
    rig = await open_screen(faux=faux, model="faux/priced:high")
    assert (rig.model.footer.model, rig.model.footer.thinking_level) == ("faux/priced", "high")
    assert rig.model.footer.context_tokens is None
    await rig.ask("go")
    usage = await rig.app.harness.usage()
    footer = rig.model.footer
    assert (footer.tokens_in, footer.tokens_out) == (usage["input"], usage["output"])
    assert footer.cost == pytest.approx(usage["cost"]["total"])
    assert footer.cost > 0
    assert footer.context_tokens == usage["total_tokens"]
    assert footer.context_percent == pytest.approx(100 * usage["total_tokens"] / 20_000)
    assert footer.cwd == str(rig.workdir)
    assert footer.conversation_label == "main"


async def test_a_model_error_shows_once_in_the_transcript_and_an_abort_leaves_no_notice(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(
        faux_error("no such model", status=404), call("bash", command=gate_command())
    )
    await rig.ask("first")
    await rig.idle()
    errors = [b for b in rig.model.blocks if b.kind == "error"]
    assert [b.text for b in errors] == ["no such model"]
    assert list(rig.model.notices) == []  # no "No answer:" repeating it under the block
    await within(rig.controller.submit("second"))
    await rig.until(lambda: rig.model.busy, "busy")
    await within(rig.controller.abort())
    await rig.idle()
    assert list(rig.model.notices) == []


async def test_a_model_without_a_session_model_warns_how_to_choose_one(
    open_screen: ScreenFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)  # a key would choose its default model
    rig = await open_screen(model=None)
    assert [n.text for n in rig.model.notices] == [
        "No model configured: export ANTHROPIC_API_KEY or OPENAI_API_KEY and start pidurable "
        "again (its default model is used), or select one with /model."
    ]
    assert rig.model.footer.model == ""


async def test_a_session_on_a_model_whose_key_is_not_set_names_the_variable_at_start(
    open_screen: ScreenFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Said before the first prompt, not only by its failed request.
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    rig = await open_screen(model="anthropic/claude-sonnet-4-5")
    [notice] = rig.model.notices
    assert notice.level == "warning"
    assert notice.text.startswith(
        "anthropic/claude-sonnet-4-5 needs ANTHROPIC_API_KEY: export ANTHROPIC_API_KEY=..."
    )
    assert '"api_key_env"' in notice.text
    assert rig.model.footer.model == "anthropic/claude-sonnet-4-5"


async def test_a_continued_session_whose_model_nothing_serves_says_so_at_start(
    open_screen: ScreenFactory,
) -> None:
    # A local server's model, continued without the --base-url that served it.
    first = await open_screen()
    await within(first.app.root.configure(AgentChange(model=ModelRef("ollama", "qwen3"))))
    await within(first.controller.close())

    rig = await open_screen(model=None, continue_session=True)

    [notice] = rig.model.notices
    assert (notice.level, notice.text) == (
        "warning",
        "Model ollama/qwen3 is not available (a local server's model needs the --base-url "
        "it was served from); pick another with /model.",
    )


async def test_listeners_hear_each_change_until_they_unsubscribe(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(say("one"), say("two"))
    heard: list[ViewChange] = []
    unsubscribe: Callable[[], None] = rig.model.subscribe(heard.append)
    await rig.ask("first")
    assert any(rig.blocks("assistant")[-1].key in c.blocks_added for c in heard)
    unsubscribe()
    count = len(heard)
    await rig.ask("second")
    assert len(heard) == count
