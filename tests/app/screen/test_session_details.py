"""``/session`` and ``/name`` in the app: every figure from committed state, a durable name.

A real SQLite store under the test's ``PIDURABLE_HOME`` and the faux provider:
``session_details`` reads the store, the spend, the conversations and the
tasks; the footer adds the shown conversation's model and context use. The
name is committed in the store (``pi.session``) and mirrored beside it for the
``--resume`` picker, which reads no store.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from pi_durable_tui.ai import FauxProvider, ModelCost, faux_model
from pi_durable_tui.app import ActionRefused, session_infos
from pi_durable_tui.app.files import read_name
from pi_durable_tui.app.files._sessions import NAME_NAME
from pi_durable_tui.app.screen import SESSION_DOC
from pi_durable_tui.app.screen._session_name import NAME_LIMIT
from tests.app.screen_support import ScreenFactory, background_subagent, say
from tests.harness.run_support import within


def priced(*responses: object) -> FauxProvider:
    return FauxProvider(
        list(responses),  # type: ignore[arg-type]
        models=[
            faux_model(
                "priced",
                context_window=20_000,
                reasoning=True,
                cost=ModelCost(input=3.0, output=15.0),
            )
        ],
    )


async def test_session_lists_the_store_id_creation_cwd_model_mode_entries_spend_and_context(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(faux=priced(say("one"), say("two")), model="faux/priced:high")
    await rig.ask("first")
    first = await within(rig.controller.session_details())
    await rig.ask("second")
    details = await within(rig.controller.session_details())

    store = rig.app.store
    assert details.store == str(store)
    assert details.session_id == store.parent.name
    assert details.created_ms == int(store.parent.name[:13])
    assert details.cwd == str(rig.workdir)
    assert (details.model, details.thinking_level) == ("faux/priced", "high")
    assert details.permission_mode == "auto"
    assert details.entries - first.entries == 2  # a prompt and its answer
    assert not details.entries_capped
    usage = await rig.app.harness.usage()
    assert (details.tokens_in, details.tokens_out) == (usage["input"], usage["output"])
    assert (details.cache_read, details.cache_write) == (usage["cache_read"], usage["cache_write"])
    assert details.cost == pytest.approx(usage["cost"]["total"])
    assert details.cost > first.cost > 0
    assert details.context_tokens == rig.model.footer.context_tokens
    assert details.context_tokens is not None
    assert details.context_window == 20_000
    assert (details.subagents, details.background_tasks) == (0, 0)
    assert details.name == ""


async def test_session_counts_subagent_conversations_and_live_background_tasks(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(*background_subagent(say("Started."), say("Read the report.")))
    await rig.ask("start a reviewer")
    running = await within(rig.controller.session_details())
    assert running.subagents == 1
    assert running.background_tasks >= 1  # the background subagent (and its command)
    rig.release("bg-go")
    await rig.until(lambda: "Read the report." in rig.texts("assistant"), "the report arrives")
    await rig.idle()
    done = await within(rig.controller.session_details())
    assert (done.subagents, done.background_tasks) == (1, 0)


async def test_a_name_is_committed_in_the_store_mirrored_and_shown_by_the_resume_picker(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(say("ok"))
    await rig.ask("fix the parser")
    assert await within(rig.controller.session_name()) == ""
    kept = await within(rig.controller.name_session("  parser\n fix  "))
    assert kept == "parser fix"
    snapshot = await rig.app.harness.session.snapshot(SESSION_DOC)
    assert snapshot == {"name": "parser fix"}
    assert read_name(rig.app.store) == "parser fix"
    assert (await within(rig.controller.session_details())).name == "parser fix"
    (listed,) = await within(rig.controller.sessions())
    assert (listed.name, listed.first_message) == ("parser fix", "fix the parser")


async def test_a_name_loses_control_sequences_and_is_capped(open_screen: ScreenFactory) -> None:
    rig = await open_screen()
    hostile = "\x1b]0;owned\x07\x1b[2Jrelease " + "x" * 200
    kept = await within(rig.controller.name_session(hostile))
    assert "\x1b" not in kept
    assert "\x07" not in kept
    assert kept.startswith("release x")
    assert len(kept) == NAME_LIMIT
    with pytest.raises(ActionRefused, match="Usage: /name NAME"):
        await within(rig.controller.name_session("\x1b[2J \x07"))
    assert await within(rig.controller.session_name()) == kept  # unchanged


async def test_the_name_survives_a_close_and_reopen_of_the_store(
    open_screen: ScreenFactory,
) -> None:
    rig = await open_screen(say("ok"))
    await rig.ask("hello")
    await within(rig.controller.name_session("nightly build"))
    await within(rig.controller.close())
    again = await open_screen(continue_session=True)
    assert again.app.store == rig.app.store
    assert await within(again.controller.session_name()) == "nightly build"
    assert (await within(again.controller.session_details())).name == "nightly build"


async def test_reopening_rewrites_a_mirror_a_crash_left_behind_the_store(
    open_screen: ScreenFactory,
) -> None:
    # As if killed between the commit and the mirror: the store has the name, the file not.
    rig = await open_screen(say("ok"))
    await rig.ask("hello")
    await within(rig.controller.name_session("release prep"))
    await within(rig.controller.close())
    (rig.app.store.parent / NAME_NAME).unlink()
    assert session_infos(str(rig.workdir))[0].name == ""
    await open_screen(continue_session=True)
    assert read_name(rig.app.store) == "release prep"
    assert session_infos(str(rig.workdir))[0].name == "release prep"


async def test_with_a_database_session_hides_the_password_and_the_picker_shows_the_name(
    open_screen: ScreenFactory, postgres_tcp_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIDURABLE_DATABASE_URL", postgres_tcp_url)
    password = urlsplit(postgres_tcp_url).password
    assert password
    rig = await open_screen(say("ok"))
    await rig.ask("hello")
    await within(rig.controller.name_session("db work"))
    details = await within(rig.controller.session_details())
    directory = rig.app.store.parent
    assert password not in details.store
    assert "***" in details.store
    assert details.store.endswith(f"(store {directory.parent.name}/{directory.name})")
    assert details.session_id == directory.name
    assert details.name == "db work"
    (listed,) = await within(rig.controller.sessions())
    assert (listed.name, listed.first_message) == ("db work", "hello")
