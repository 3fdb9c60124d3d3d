"""``/session`` and ``/name`` on the screen over a real session (and an attached one).

``/session`` opens a list of the session's facts, each from committed state;
``/name NAME`` commits a name and says it; ``/name`` alone says it; the
``/resume`` picker shows the name before the first message. An attached screen
gets the same list and names the session through its host.
"""

from __future__ import annotations

from textual.pilot import Pilot
from textual.widgets import OptionList

from pi_durable_tui.tui import PidurableApp
from pi_durable_tui.tui._picker import PickerScreen
from tests.app.host.conftest import ServeFactory, serve
from tests.app.screen_support import ScreenFactory, say
from tests.tui.conftest import screen_name, settle, text_of
from tests.tui.test_attached_commands import Attached, attached
from tests.tui.test_real_harness import Run, notices, pidurable, type_line, until

__all__ = ["attached", "pidurable", "serve"]  # fixtures shared with other modules


async def list_rows(app: PidurableApp, pilot: Pilot[None], line: str) -> list[str]:
    """Send a command line that opens a list; its rows as plain text."""
    await type_line(pilot, line)
    await until(pilot, lambda: isinstance(app.screen, PickerScreen), f"the list of {line}")
    await settle(pilot)
    options = app.screen.query_one(OptionList).options
    return [" ".join(text_of(o.prompt, width=400).split()) for o in options]


async def test_session_lists_the_sessions_facts_from_committed_state(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    rig = await open_screen(say("hello back"))
    await rig.ask("hello")
    store = rig.app.store
    async with pidurable(rig) as (app, pilot):
        rows = await list_rows(app, pilot, "/session")
        assert rows[0] == "name: (none: /name NAME gives one)"
        assert f"session ID: {store.parent.name}" in rows
        assert f"store: {store}" in rows
        assert f"working directory: {rig.workdir}" in rows
        assert "model: faux/faux-1 · thinking off" in rows
        assert "permission mode: auto" in rows
        entries = next(r for r in rows if r.startswith("entries in this conversation: "))
        assert int(entries.rsplit(" ", 1)[1]) >= 2
        assert any(r.startswith("tokens: ↑") for r in rows)
        assert any(r.startswith("context: ") and "128,000 tokens" in r for r in rows)
        assert "subagent conversations: 0" in rows
        assert "live background tasks: 0" in rows
        await pilot.press("escape")
        await until(pilot, lambda: screen_name(app) != "PickerScreen", "the list closed")


async def test_name_commits_a_name_says_it_and_the_resume_picker_shows_it_first(
    open_screen: ScreenFactory, pidurable: Run
) -> None:
    rig = await open_screen(say("ok"))
    await rig.ask("fix the parser")
    async with pidurable(rig) as (app, pilot):
        await type_line(pilot, "/name")
        await until(pilot, lambda: "has no name" in notices(app), "no name yet")
        await type_line(pilot, "/name parser \x1b]0;x\x07work")
        await until(pilot, lambda: "Session named: parser work" in notices(app), "named")
        assert await rig.controller.session_name() == "parser work"
        await type_line(pilot, "/name")
        await until(pilot, lambda: "is named: parser work" in notices(app), "the name said")
        rows = await list_rows(app, pilot, "/session")
        assert rows[0] == "name: parser work"
        await pilot.press("escape")
        await until(pilot, lambda: screen_name(app) != "PickerScreen", "the list closed")
        rows = await list_rows(app, pilot, "/resume")
        assert len(rows) == 1
        assert rows[0].startswith("parser work fix the parser ")


async def test_an_attached_screen_lists_the_session_and_names_it_through_the_host(
    serve: ServeFactory, attached: Attached
) -> None:
    served = await serve(say("One."))
    await served.rig.ask("first question")
    async with attached(served) as (app, pilot):
        rows = await list_rows(app, pilot, "/session")
        assert f"store: {served.rig.app.store}" in rows
        assert "model: faux/faux-1 · thinking off" in rows
        await pilot.press("escape")
        await until(pilot, lambda: screen_name(app) != "PickerScreen", "the list closed")
        await type_line(pilot, "/name shared")
        await until(pilot, lambda: "Session named: shared" in notices(app), "named")
    assert await served.rig.controller.session_name() == "shared"
